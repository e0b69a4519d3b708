// Shared pieces of the BPF part of the addon: per-environment constructors, fd ownership
// hand-over to the wrapped classes, and object-kind checks.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <napi.h>

#include <cstring>
#include <string>

#include "errors.h"
#include "fd.h"

namespace fk {

enum class BpfKind { kProgram, kMap, kLink, kOther };
// What a BPF file descriptor refers to (from its anon inode name).
BpfKind KindOfFd(int fd);

// The BPF objects with a file descriptor of their own, each wrapped as its own class:
// BpfProgram, BpfMap and BpfLink (`kind` is never kOther below).
// The JS class of `kind` ("BpfMap").
const char* FdClassName(BpfKind kind);
// Keeps `ctor` as the class of `kind` (for NewFdObject) and exports it.
void ExportFdClass(Napi::Env env, Napi::Object exports, BpfKind kind, Napi::Function ctor);
// Wraps `fd` (ownership moves into the new JS object) as the BpfProgram / BpfMap / BpfLink of
// `kind`.
Napi::Object NewFdObject(Napi::Env env, BpfKind kind, UniqueFd fd);
// The UniqueFd that NewFdObject passes to the constructor of `kind`; a TypeError when the
// constructor was called from JS (which is not allowed).
UniqueFd TakeFdArgument(const Napi::CallbackInfo& info, BpfKind kind);
// Opens a pinned BPF object and checks that it is of `kind`.
UniqueFd OpenPinned(Napi::Env env, const std::string& path, BpfKind kind);
// Opens the object of `kind` with `id` (bpf_prog_get_fd_by_id, bpf_map_get_fd_by_id, ...).
UniqueFd OpenById(Napi::Env env, BpfKind kind, uint32_t id);
// A new descriptor for the same object (F_DUPFD_CLOEXEC).
UniqueFd DupFd(Napi::Env env, int fd);
// Pins `fd` at `path` (bpf_obj_pin).
void Pin(Napi::Env env, int fd, const std::string& path);

// Info about a BPF object (bpf_obj_get_info_by_fd into `info`).
template <typename T>
T GetInfo(Napi::Env env, int fd) {
  T info{};
  __u32 len = sizeof(info);
  int rc = bpf_obj_get_info_by_fd(fd, &info, &len);
  if (rc != 0) ThrowLibbpf(env, rc, "bpf_obj_get_info_by_fd");
  return info;
}

std::string ArgString(const Napi::CallbackInfo& info, size_t i, const char* what);
uint32_t ArgUint(const Napi::CallbackInfo& info, size_t i, const char* what);
int ArgFd(const Napi::CallbackInfo& info, size_t i, const char* what);
Napi::Buffer<uint8_t> ArgBuffer(const Napi::CallbackInfo& info, size_t i, const char* what);

// Per-kind parts of InitBpf.
void InitBpfProgram(Napi::Env env, Napi::Object exports);
void InitBpfMap(Napi::Env env, Napi::Object exports);
void InitBpfLink(Napi::Env env, Napi::Object exports);
void InitBpfObject(Napi::Env env, Napi::Object exports);
void InitBpfSystem(Napi::Env env, Napi::Object exports);

// libbpf's print callback forwards to the JS logger only when not inside a finalizer.
class QuietLibbpf {
 public:
  QuietLibbpf();
  ~QuietLibbpf();
};

}  // namespace fk

namespace fk {

// libbpf's names ("xdp", "percpu_array") to enum values; -1 when unknown.
int ProgTypeFromName(const std::string& name);
int MapTypeFromName(const std::string& name);
// A zeroed libbpf options struct with its `sz` set (LIBBPF_OPTS without C extensions).
// Zeroes a libbpf options struct in place and sets its `sz`. In place, because libbpf
// rejects options whose bytes after the last known field are not zero ("non-zero extra
// bytes"), and neither `T{}` nor returning a zeroed struct by value keeps the padding zero
// (GCC copies such structs field by field).
template <typename T>
void InitOpts(T* opts) {
  std::memset(opts, 0, sizeof(*opts));
  opts->sz = sizeof(*opts);
}
// BPF_PROG_LOAD of raw instructions. Returns the fd, or an invalid UniqueFd with `*err` set
// to the errno and `*log` to the verifier log of a second, logged attempt.
UniqueFd LoadRawProgram(bpf_prog_type type, const bpf_insn* insns, size_t count,
                        const std::string& name, const std::string& license, int* err,
                        std::string* log);
// Reads an optional uint32 property (default when absent).
uint32_t OptUint(const Napi::Object& obj, const char* key, uint32_t def);

}  // namespace fk
