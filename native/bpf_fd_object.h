// BpfFdObject<T>: what BpfProgram, BpfMap and BpfLink share. Each owns a file descriptor of
// its own, handed over by NewFdObject (the classes are never constructed from JS), and has
// `fd`, `pin(path)`, `close()` and the static `fromPinned(path)` and `fromId(id)`.
//
// A class T derives from BpfFdObject<T>, names its kind in `static constexpr BpfKind kKind`
// and exports itself with Export(env, exports, {its own properties}).
#pragma once

#include <napi.h>

#include <vector>

#include "bpf.h"
#include "errors.h"
#include "fd.h"

namespace fk {

template <typename T>
class BpfFdObject : public Napi::ObjectWrap<T> {
 protected:
  using Properties = std::vector<Napi::ClassPropertyDescriptor<T>>;

  explicit BpfFdObject(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<T>(info), fd_(TakeFdArgument(info, T::kKind)) {}

  // Defines class T with the shared properties and its `own`, and exports it.
  static void Export(Napi::Env env, Napi::Object exports, const Properties& own) {
    using Wrap = Napi::ObjectWrap<T>;
    Properties props = {
        Wrap::InstanceAccessor("fd", &BpfFdObject::GetFd, nullptr),
        Wrap::InstanceMethod("pin", &BpfFdObject::PinAt),
        Wrap::InstanceMethod("close", &BpfFdObject::Close),
        Wrap::StaticMethod("fromPinned", &BpfFdObject::FromPinned),
        Wrap::StaticMethod("fromId", &BpfFdObject::FromId),
    };
    props.insert(props.end(), own.begin(), own.end());
    ExportFdClass(env, exports, T::kKind, Wrap::DefineClass(env, FdClassName(T::kKind), props));
  }

  // The descriptor; EBADF once closed.
  int Fd(Napi::Env env) {
    if (!fd_.Valid()) ThrowErrno(env, EBADF, FdClassName(T::kKind), "is closed");
    return fd_.Get();
  }

 private:
  Napi::Value GetFd(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), fd_.Get());
  }

  Napi::Value PinAt(const Napi::CallbackInfo& info) {
    Pin(info.Env(), Fd(info.Env()), ArgString(info, 0, "path"));
    return info.Env().Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    fd_.Reset();
    return info.Env().Undefined();
  }

  static Napi::Value FromPinned(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return NewFdObject(env, T::kKind, OpenPinned(env, ArgString(info, 0, "path"), T::kKind));
  }

  static Napi::Value FromId(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return NewFdObject(env, T::kKind, OpenById(env, T::kKind, ArgUint(info, 0, "id")));
  }

  UniqueFd fd_;
};

}  // namespace fk
