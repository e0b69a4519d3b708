// What the agent's process needs beyond Node: a stop deadline that holds whatever the event
// loop is waiting for, and giving the C heap's free pages back to the kernel.
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "errors.h"
#include "init.h"

namespace fk {
namespace {

// exitAfter(ms, code, message): a thread of its own sleeps `ms`, writes `message` to stderr
// and ends the process with `code` (_exit: no JS runs, nothing is flushed or waited for).
// It cannot be disarmed: the stop it bounds ends the process anyway.
Napi::Value ExitAfter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsString()) {
    ThrowType(env, "exitAfter(ms, code, message)");
  }
  int64_t ms = info[0].As<Napi::Number>().Int64Value();
  int code = info[1].As<Napi::Number>().Int32Value();
  std::string message = info[2].As<Napi::String>().Utf8Value();
  std::thread([ms, code, message] {
    timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    ssize_t ignored = write(STDERR_FILENO, message.data(), message.size());
    (void)ignored;
    _exit(code);
  }).detach();
  return env.Undefined();
}

// trimHeap(): on a thread of its own, glibc's malloc_trim(0) hands every whole free page of
// the C heap back to the kernel (madvise), in the middle of the arenas too, where free() only
// gives back the top. Buffers, netlink messages and V8's off-heap stores come and go in the C
// heap, and what they leave free stays in the process's RSS until then. The thread takes the
// arenas' locks for a moment; JS does not wait for it. Without glibc: nothing.
Napi::Value TrimHeap(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  std::thread([] { malloc_trim(0); }).detach();
  return Napi::Boolean::New(info.Env(), true);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

}  // namespace

void InitProcess(Napi::Env env, Napi::Object exports) {
  exports.Set("exitAfter", Napi::Function::New(env, ExitAfter, "exitAfter"));
  exports.Set("trimHeap", Napi::Function::New(env, TrimHeap, "trimHeap"));
}

}  // namespace fk
