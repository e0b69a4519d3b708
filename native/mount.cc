// bpffs mounts (for pinning) and the check that a directory is on one.
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#include <cstdio>

#include "errors.h"
#include "init.h"

namespace fk {
namespace {

// mountBpffs(path, mode): mount -t bpf bpf PATH -o mode=MODE
Napi::Value MountBpffs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString() || !info[1].IsNumber()) ThrowType(env, "mountBpffs(path, mode)");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  unsigned mode = info[1].As<Napi::Number>().Uint32Value() & 07777;
  char data[32];
  snprintf(data, sizeof(data), "mode=%04o", mode);
  if (mount("bpf", path.c_str(), "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, data) != 0) {
    ThrowErrno(env, errno, "mount", "bpffs on " + path);
  }
  return env.Undefined();
}

// unmount(path, lazy): umount2(path, lazy ? MNT_DETACH : 0)
Napi::Value Unmount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) ThrowType(env, "unmount(path, lazy)");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int flags = info[1].ToBoolean().Value() ? MNT_DETACH : 0;
  if (umount2(path.c_str(), flags) != 0) ThrowErrno(env, errno, "umount2", path);
  return env.Undefined();
}

// isBpffs(path): whether the file system holding `path` is a bpffs.
Napi::Value IsBpffs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) ThrowType(env, "isBpffs(path)");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  struct statfs st {};
  if (statfs(path.c_str(), &st) != 0) ThrowErrno(env, errno, "statfs", path);
  return Napi::Boolean::New(env, static_cast<unsigned long>(st.f_type) == BPF_FS_MAGIC);
}

}  // namespace

void InitMount(Napi::Env env, Napi::Object exports) {
  exports.Set("mountBpffs", Napi::Function::New(env, MountBpffs, "mountBpffs"));
  exports.Set("unmount", Napi::Function::New(env, Unmount, "unmount"));
  exports.Set("isBpffs", Napi::Function::New(env, IsBpffs, "isBpffs"));
}

}  // namespace fk
