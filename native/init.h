// Each part of the addon registers its functions and classes on `exports`.
#pragma once

#include <napi.h>

namespace fk {

void InitNetns(Napi::Env env, Napi::Object exports);
void InitMount(Napi::Env env, Napi::Object exports);
void InitLock(Napi::Env env, Napi::Object exports);
void InitNetlinkSocket(Napi::Env env, Napi::Object exports);
void InitPacketSocket(Napi::Env env, Napi::Object exports);
void InitBpf(Napi::Env env, Napi::Object exports);
void InitNotify(Napi::Env env, Napi::Object exports);
void InitNodePolicy(Napi::Env env, Napi::Object exports);
void InitFaults(Napi::Env env, Napi::Object exports);
void InitProcess(Napi::Env env, Napi::Object exports);
void InitClusterIo(Napi::Env env, Napi::Object exports);

}  // namespace fk
