#include "netns.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>

#include "errors.h"
#include "init.h"

namespace fk {

std::string NetnsPath(const std::string& netns) {
  if (!netns.empty() && netns[0] == '/') return netns;
  return "/run/netns/" + netns;
}

NetnsGuard::NetnsGuard(Napi::Env env, const std::string& netns) {
  if (netns.empty()) return;
  std::string path = NetnsPath(netns);
  UniqueFd target(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!target.Valid()) ThrowErrno(env, errno, "open", path);
  // thread-self, not self: setns() moves only the calling thread.
  UniqueFd saved(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!saved.Valid()) ThrowErrno(env, errno, "open", "/proc/thread-self/ns/net");
  if (setns(target.Get(), CLONE_NEWNET) != 0) ThrowErrno(env, errno, "setns", path);
  saved_ = std::move(saved);
}

NetnsGuard::~NetnsGuard() {
  if (!saved_.Valid()) return;
  if (setns(saved_.Get(), CLONE_NEWNET) != 0) {
    std::string why =
        std::string("setns back to the original network namespace: ") + strerror(errno);
    napi_fatal_error("fibkeeper", NAPI_AUTO_LENGTH, why.c_str(), NAPI_AUTO_LENGTH);
  }
}

std::string OptionalString(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (v.IsUndefined() || v.IsNull()) return std::string();
  if (!v.IsString()) ThrowType(obj.Env(), std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

namespace {

// runInNetns(netns, fn): calls fn() with the calling thread inside `netns`; always goes back,
// also when fn throws (the exception then propagates).
Napi::Value RunInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString() || !info[1].IsFunction()) ThrowType(env, "runInNetns(netns, fn)");
  std::string netns = info[0].As<Napi::String>().Utf8Value();
  if (netns.empty()) ThrowType(env, "runInNetns: empty netns");
  NetnsGuard guard(env, netns);
  return info[1].As<Napi::Function>().Call({});
}

}  // namespace

void InitNetns(Napi::Env env, Napi::Object exports) {
  exports.Set("runInNetns", Napi::Function::New(env, RunInNetns, "runInNetns"));
}

}  // namespace fk
