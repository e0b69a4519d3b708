// Readability polling of a socket on the libuv loop of the JS thread, shared by the socket
// classes. While polling, the JS object that owns the socket is kept alive.
#pragma once

#include <napi.h>
#include <uv.h>

#include <functional>

namespace fk {

class SocketPoller {
 public:
  // `on_readable(status)` runs on the JS thread when the socket is readable (status 0) or
  // libuv reports an error (status < 0, a negated errno).
  explicit SocketPoller(std::function<void(int)> on_readable);
  ~SocketPoller();
  SocketPoller(const SocketPoller&) = delete;
  SocketPoller& operator=(const SocketPoller&) = delete;

  // Starts polling `fd` (idempotent). `owner` is held by a strong reference until Stop/Close.
  void Start(Napi::Env env, int fd, Napi::Object owner);
  // Stops polling; queued data stays in the kernel.
  void Stop();
  // Stops and releases the libuv handle; call before closing the fd.
  void Close();
  // Whether polling keeps the event loop alive (default: yes).
  void SetRef(bool ref);
  bool Active() const { return active_; }

 private:
  static void OnPoll(uv_poll_t* handle, int status, int events);

  std::function<void(int)> on_readable_;
  uv_poll_t* handle_ = nullptr;
  int fd_ = -1;
  // A strong reference to the owner while polling. A raw napi_ref, not Napi::ObjectReference:
  // it may be dropped from a destructor while the environment is being torn down, where
  // Napi::Reference::Reset() would throw (and a throw from a destructor aborts).
  napi_env owner_env_ = nullptr;
  napi_ref owner_ = nullptr;
  void DropOwner();
  bool active_ = false;
  bool ref_ = true;
};

// Calls `fn` from a libuv callback with `args`, through MakeCallback (so microtasks and
// process.nextTick run afterwards). An exception thrown by `fn` is raised as an uncaught
// exception of the process (process.on('uncaughtException') sees it); it never aborts.
// Returns false when `fn` threw.
bool CallFromLoop(Napi::Env env, Napi::AsyncContext& context, const Napi::Object& recv,
                  const Napi::Function& fn, const std::vector<napi_value>& args);

}  // namespace fk
