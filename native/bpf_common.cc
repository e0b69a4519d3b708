#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "bpf.h"
#include "errors.h"
#include "init.h"

namespace fk {
namespace {

// What differs between the kinds of BPF objects with a file descriptor of their own.
struct FdKind {
  const char* cls;   // the JS class
  const char* noun;  // in errors
  int (*get_fd_by_id)(__u32 id);
  const char* get_fd_by_id_name;
};

constexpr int kFdKinds = 3;  // indexed by BpfKind: kProgram, kMap, kLink
const FdKind kKinds[kFdKinds] = {
    {"BpfProgram", "program", bpf_prog_get_fd_by_id, "bpf_prog_get_fd_by_id"},
    {"BpfMap", "map", bpf_map_get_fd_by_id, "bpf_map_get_fd_by_id"},
    {"BpfLink", "link", bpf_link_get_fd_by_id, "bpf_link_get_fd_by_id"},
};

const FdKind& KindInfo(BpfKind kind) { return kKinds[static_cast<int>(kind)]; }

// Constructors of the wrapped classes, stored as instance data of each environment.
struct BpfClasses {
  Napi::FunctionReference ctors[kFdKinds];
};

Napi::FunctionReference& Constructor(Napi::Env env, BpfKind kind) {
  return env.GetInstanceData<BpfClasses>()->ctors[static_cast<int>(kind)];
}

}  // namespace

const char* FdClassName(BpfKind kind) { return KindInfo(kind).cls; }

void ExportFdClass(Napi::Env env, Napi::Object exports, BpfKind kind, Napi::Function ctor) {
  Constructor(env, kind) = Napi::Persistent(ctor);
  exports.Set(KindInfo(kind).cls, ctor);
}

Napi::Object NewFdObject(Napi::Env env, BpfKind kind, UniqueFd fd) {
  // The constructor moves the fd out of `holder`; if it throws first, `holder` closes it.
  UniqueFd holder = std::move(fd);
  return Constructor(env, kind).New({Napi::External<UniqueFd>::New(env, &holder)});
}

UniqueFd TakeFdArgument(const Napi::CallbackInfo& info, BpfKind kind) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    ThrowType(info.Env(),
              std::string(KindInfo(kind).cls) + " objects come from the addon's factory functions");
  }
  return std::move(*info[0].As<Napi::External<UniqueFd>>().Data());
}

BpfKind KindOfFd(int fd) {
  char path[64];
  char target[128];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  if (n < 0) return BpfKind::kOther;
  target[n] = '\0';
  std::string t(target);
  if (t == "anon_inode:bpf-prog") return BpfKind::kProgram;
  if (t == "anon_inode:bpf-map") return BpfKind::kMap;
  // bpf_link_create names it "bpf_link", bpf_obj_get "bpf-link".
  if (t == "anon_inode:bpf_link" || t == "anon_inode:bpf-link") return BpfKind::kLink;
  return BpfKind::kOther;
}

UniqueFd OpenPinned(Napi::Env env, const std::string& path, BpfKind kind) {
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd.Valid()) ThrowErrno(env, errno, "bpf_obj_get", path);
  if (KindOfFd(fd.Get()) != kind) {
    ThrowErrno(env, EINVAL, "bpf_obj_get", path + " is not a BPF " + KindInfo(kind).noun);
  }
  return fd;
}

UniqueFd OpenById(Napi::Env env, BpfKind kind, uint32_t id) {
  const FdKind& k = KindInfo(kind);
  UniqueFd fd(k.get_fd_by_id(id));
  if (!fd.Valid()) ThrowErrno(env, errno, k.get_fd_by_id_name, std::to_string(id));
  return fd;
}

UniqueFd DupFd(Napi::Env env, int fd) {
  UniqueFd copy(fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (!copy.Valid()) ThrowErrno(env, errno, "fcntl", "F_DUPFD_CLOEXEC");
  return copy;
}

void Pin(Napi::Env env, int fd, const std::string& path) {
  if (bpf_obj_pin(fd, path.c_str()) != 0) ThrowErrno(env, errno, "bpf_obj_pin", path);
}

std::string ArgString(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (!info[i].IsString()) ThrowType(info.Env(), std::string(what) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

uint32_t ArgUint(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (!info[i].IsNumber()) ThrowType(info.Env(), std::string(what) + " must be a number");
  return info[i].As<Napi::Number>().Uint32Value();
}

int ArgFd(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (!info[i].IsNumber()) ThrowType(info.Env(), std::string(what) + " must be a file descriptor");
  int fd = info[i].As<Napi::Number>().Int32Value();
  if (fd < 0) ThrowErrno(info.Env(), EBADF, what, "is closed");
  return fd;
}

Napi::Buffer<uint8_t> ArgBuffer(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (!info[i].IsBuffer()) ThrowType(info.Env(), std::string(what) + " must be a Buffer");
  return info[i].As<Napi::Buffer<uint8_t>>();
}

void InitBpf(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData<BpfClasses>(new BpfClasses());
  InitBpfSystem(env, exports);
  InitBpfProgram(env, exports);
  InitBpfMap(env, exports);
  InitBpfLink(env, exports);
  InitBpfObject(env, exports);
}

}  // namespace fk
