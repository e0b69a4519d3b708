// fibkeeper's native addon: netlink and packet sockets, network namespaces, BPF over the
// system libbpf, and systemd's readiness notification. Built with C++ exceptions
// (NAPI_CPP_EXCEPTIONS): every failure is a thrown Napi::Error, and file descriptors are
// owned by RAII objects.
#include <napi.h>

#include "init.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  fk::InitNetns(env, exports);
  fk::InitMount(env, exports);
  fk::InitLock(env, exports);
  fk::InitNetlinkSocket(env, exports);
  fk::InitPacketSocket(env, exports);
  fk::InitBpf(env, exports);
  fk::InitNotify(env, exports);
  fk::InitNodePolicy(env, exports);
  fk::InitFaults(env, exports);
  fk::InitProcess(env, exports);
  fk::InitClusterIo(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(fibkeeper, Init)
