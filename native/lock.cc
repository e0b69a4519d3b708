// Advisory file locks (flock(2)): the agent holds one on the network namespace it manages,
// so that a second agent on that namespace refuses to start.
#include <sys/file.h>

#include <cerrno>

#include "errors.h"
#include "init.h"

namespace fk {
namespace {

// flockFd(fd, exclusive, wait): true when the lock was taken; false when `wait` is false and
// another open file holds a conflicting lock (EWOULDBLOCK). Other errors throw.
Napi::Value FlockFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) ThrowType(env, "flockFd(fd, exclusive, wait)");
  int fd = info[0].As<Napi::Number>().Int32Value();
  int op = info[1].ToBoolean().Value() ? LOCK_EX : LOCK_SH;
  if (!info[2].ToBoolean().Value()) op |= LOCK_NB;
  int rc;
  do {
    rc = flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return Napi::Boolean::New(env, true);
  if (errno == EWOULDBLOCK) return Napi::Boolean::New(env, false);
  ThrowErrno(env, errno, "flock");
}

}  // namespace

void InitLock(Napi::Env env, Napi::Object exports) {
  exports.Set("flockFd", Napi::Function::New(env, FlockFd, "flockFd"));
}

}  // namespace fk
