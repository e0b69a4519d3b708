#include "send_queue.h"

#include <linux/netlink.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "errors.h"

namespace fk {
namespace {

// What the JS thread is told of a failed send.
struct SendFailure {
  int err;
  uint32_t first_seq;
  uint32_t last_seq;
};

// The sequence numbers of the first and last whole message in `bytes`.
SendFailure Describe(int err, const std::vector<uint8_t>& bytes) {
  SendFailure f{err, 0, 0};
  size_t off = 0;
  bool first = true;
  while (bytes.size() - off >= sizeof(nlmsghdr)) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data() + off, sizeof(h));
    if (h.nlmsg_len < sizeof(nlmsghdr) || h.nlmsg_len > bytes.size() - off) break;
    if (first) f.first_seq = h.nlmsg_seq;
    first = false;
    f.last_seq = h.nlmsg_seq;
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  return f;
}

void CallOnError(napi_env env, napi_value fn, void* /*context*/, void* data) {
  SendFailure* f = static_cast<SendFailure*>(data);
  if (env != nullptr && fn != nullptr) {
    Napi::Env e(env);
    Napi::HandleScope scope(e);
    Napi::Error error = ErrnoError(e, f->err, "sendmsg");
    napi_value args[3] = {error.Value(), Napi::Number::New(e, f->first_seq),
                          Napi::Number::New(e, f->last_seq)};
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_value result;
    if (napi_call_function(env, undefined, fn, 3, args, &result) != napi_ok) {
      // An exception from the handler is the process's uncaught exception, as in the loop.
      bool pending = false;
      napi_is_exception_pending(env, &pending);
      if (pending) {
        napi_value exc;
        napi_get_and_clear_last_exception(env, &exc);
        napi_fatal_exception(env, exc);
      }
    }
  }
  delete f;
}

}  // namespace

int SendToKernel(int fd, const iovec* iov, size_t count) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  msghdr msg{};
  msg.msg_name = &kernel;
  msg.msg_namelen = sizeof(kernel);
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = count;
  ssize_t n;
  do {
    n = sendmsg(fd, &msg, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? errno : 0;
}

SendQueue::SendQueue(Napi::Env env, int fd, Napi::Function on_error)
    : fd_(fd), tsfn_finalized_(std::make_shared<std::atomic<bool>>(false)) {
  napi_value name = Napi::String::New(env, "fibkeeper:NetlinkSocket.send");
  // At the environment's teardown Node finalizes the function itself, and may destroy this
  // queue from inside that (its lock held): once finalized, it is not released again.
  // The finalizer holds a reference of its own: it runs after the queue is gone when the
  // queue released the function first.
  auto* flag = new std::shared_ptr<std::atomic<bool>>(tsfn_finalized_);
  napi_status s = napi_create_threadsafe_function(
      env, on_error, nullptr, name, 0, 1, flag,
      [](napi_env, void* data, void*) {
        auto* f = static_cast<std::shared_ptr<std::atomic<bool>>*>(data);
        (*f)->store(true);
        delete f;
      },
      nullptr, CallOnError, &tsfn_);
  if (s != napi_ok) {
    delete flag;
    throw Napi::Error::New(env, "netlink: cannot create the send thread's callback");
  }
  // The queue never keeps the process alive: pending requests ref the socket's poll instead.
  napi_unref_threadsafe_function(env, tsfn_);
  thread_ = std::thread([this] { Run(); });
}

SendQueue::~SendQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  // The raw call: this may run while the environment is torn down, where it must not throw.
  if (tsfn_ != nullptr && !tsfn_finalized_->load()) {
    napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
  }
}

bool SendQueue::Idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.empty() && !busy_;
}

void SendQueue::Push(const uint8_t* data, size_t len) {
  std::vector<uint8_t> copy(data, data + len);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(copy));
  }
  cv_.notify_one();
}

void SendQueue::Run() {
  // Named for top -H and /proc/PID/task/*/comm (bench/neighbor/cpu.mjs reads its CPU time).
  pthread_setname_np(pthread_self(), kSendThreadName);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::vector<uint8_t> bytes = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    iovec iov{bytes.data(), bytes.size()};
    int err = SendToKernel(fd_, &iov, 1);
    if (err != 0) {
      SendFailure* f = new SendFailure(Describe(err, bytes));
      if (napi_call_threadsafe_function(tsfn_, f, napi_tsfn_nonblocking) != napi_ok) delete f;
    }
    lock.lock();
    busy_ = false;
  }
}

}  // namespace fk
