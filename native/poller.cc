#include "poller.h"

#include <fcntl.h>

namespace fk {

SocketPoller::SocketPoller(std::function<void(int)> on_readable)
    : on_readable_(std::move(on_readable)) {}

SocketPoller::~SocketPoller() { Close(); }

void SocketPoller::Start(Napi::Env env, int fd, Napi::Object owner) {
  if (active_) return;
  if (handle_ == nullptr) {
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
      throw Napi::Error::New(env, "no libuv loop");
    }
    auto* handle = new uv_poll_t;
    int rc = uv_poll_init_socket(loop, handle, fd);
    if (rc != 0) {
      delete handle;
      throw Napi::Error::New(env, std::string("uv_poll_init: ") + uv_strerror(rc));
    }
    handle->data = this;
    handle_ = handle;
    fd_ = fd;
    if (!ref_) uv_unref(reinterpret_cast<uv_handle_t*>(handle_));
  }
  int rc = uv_poll_start(handle_, UV_READABLE, OnPoll);
  if (rc != 0) throw Napi::Error::New(env, std::string("uv_poll_start: ") + uv_strerror(rc));
  DropOwner();
  if (napi_create_reference(env, owner, 1, &owner_) != napi_ok) {  // strong while we poll
    owner_ = nullptr;
  } else {
    owner_env_ = env;
  }
  active_ = true;
}

void SocketPoller::Stop() {
  if (!active_) return;
  uv_poll_stop(handle_);
  active_ = false;
  DropOwner();
}

void SocketPoller::DropOwner() {
  if (owner_ != nullptr) napi_delete_reference(owner_env_, owner_);  // status ignored: teardown
  owner_ = nullptr;
  owner_env_ = nullptr;
}

void SocketPoller::Close() {
  Stop();
  if (handle_ == nullptr) return;
  handle_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(handle_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
  handle_ = nullptr;
}

void SocketPoller::SetRef(bool ref) {
  ref_ = ref;
  if (handle_ == nullptr) return;
  if (ref) {
    uv_ref(reinterpret_cast<uv_handle_t*>(handle_));
  } else {
    uv_unref(reinterpret_cast<uv_handle_t*>(handle_));
  }
}

void SocketPoller::OnPoll(uv_poll_t* handle, int status, int /*events*/) {
  auto* self = static_cast<SocketPoller*>(handle->data);
  if (self == nullptr || !self->active_) return;
  // libuv reports POLLERR as UV_EBADF and stops the handle. On a socket, POLLERR means a
  // pending socket error (ENOBUFS after an overflow) that the next recvmsg returns and
  // clears: poll again and let the reader see it. Only a descriptor that is really gone is
  // reported as EBADF.
  if (status == UV_EBADF && fcntl(self->fd_, F_GETFD) != -1) {
    status = uv_poll_start(handle, UV_READABLE, OnPoll);
  }
  // While Node tears the environment down it still runs the loop once (CleanupHandles);
  // JS cannot run then, so the N-API calls of a delivery fail and throw. Nobody is left to
  // receive the data: stop polling instead of letting the throw escape into libuv (abort).
  try {
    self->on_readable_(status);
  } catch (const Napi::Error&) {
    self->Stop();
  } catch (const std::exception&) {
    self->Stop();
  }
}

bool CallFromLoop(Napi::Env env, Napi::AsyncContext& context, const Napi::Object& recv,
                  const Napi::Function& fn, const std::vector<napi_value>& args) {
  try {
    fn.MakeCallback(recv, args, context);
    return true;
  } catch (const Napi::Error& e) {
    napi_fatal_exception(env, e.Value());
    return false;
  }
}

}  // namespace fk
