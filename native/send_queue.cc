#include "send_queue.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "errors.h"

namespace fk {

struct SendQueue::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<uint8_t>> queue;
  bool busy = false;
  bool stop = false;
  bool exited = false;
  // A dump request handed to the JS thread, and whether the JS thread has sent it.
  std::vector<uint8_t> handoff;
  bool handoff_done = true;
  UniqueFd fd;  // a dup of the socket's: the thread may outlive the socket's own
  napi_threadsafe_function tsfn = nullptr;
  // Set by the function's finalizer (it may outlive the queue: shared).
  std::shared_ptr<std::atomic<bool>> tsfn_finalized;
};

namespace {

// What the send thread asks of the JS thread: to report a failed send, or to send a dump
// request itself.
struct Message {
  enum Kind { kFailure, kHandOff } kind;
  std::shared_ptr<SendQueue::Shared> shared;
  int err = 0;
  uint32_t first_seq = 0;
  uint32_t last_seq = 0;
};

// The sequence numbers of the first and last whole message in `bytes`.
void Describe(const std::vector<uint8_t>& bytes, Message* m) {
  size_t off = 0;
  bool first = true;
  while (bytes.size() - off >= sizeof(nlmsghdr)) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data() + off, sizeof(h));
    if (h.nlmsg_len < sizeof(nlmsghdr) || h.nlmsg_len > bytes.size() - off) break;
    if (first) m->first_seq = h.nlmsg_seq;
    first = false;
    m->last_seq = h.nlmsg_seq;
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
}

// Calls onError(error, firstSeq, lastSeq) on the JS thread.
void ReportFailure(napi_env env, napi_value fn, const Message& m) {
  Napi::Env e(env);
  Napi::HandleScope scope(e);
  Napi::Error error = ErrnoError(e, m.err, "sendmsg");
  napi_value args[3] = {error.Value(), Napi::Number::New(e, m.first_seq),
                        Napi::Number::New(e, m.last_seq)};
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

// On the JS thread: sends the dump request the send thread handed over, then lets that
// thread go on. (env is null while the environment is torn down: nothing is sent then.)
void SendHandOff(napi_env env, napi_value fn, Message* m) {
  SendQueue::Shared& s = *m->shared;
  std::vector<uint8_t> bytes;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    bytes.swap(s.handoff);
    if (s.stop) env = nullptr;
  }
  if (env != nullptr && !bytes.empty()) {
    iovec iov{bytes.data(), bytes.size()};
    int err = SendToKernel(s.fd.Get(), &iov, 1);
    if (err != 0) {
      Message failure{Message::kFailure, nullptr, err};
      Describe(bytes, &failure);
      ReportFailure(env, fn, failure);
    }
  }
  std::lock_guard<std::mutex> lock(s.mu);
  s.handoff_done = true;
  s.cv.notify_all();
}

void CallJs(napi_env env, napi_value fn, void* /*context*/, void* data) {
  Message* m = static_cast<Message*>(data);
  if (m->kind == Message::kHandOff) {
    SendHandOff(fn == nullptr ? nullptr : env, fn, m);
  } else if (env != nullptr && fn != nullptr) {
    ReportFailure(env, fn, *m);
  }
  delete m;
}

// Under s.mu (held by `lock`): hands a dump request to the JS thread and waits until it was
// sent there (or the queue stops). Why: net/netlink/af_netlink.c (still so in 6.18) has
// netlink_recvmsg() test READ_ONCE(nlk->cb_running) without nlk->nl_cb_mutex and, when it
// is set, call netlink_dump(sk, false), which takes the mutex and, finding no dump running
// any more, returns -EINVAL; netlink_recvmsg() stores that in sk->sk_err (WRITE_ONCE(
// sk->sk_err, -ret); sk_error_report(sk)), and the next recvmsg reports it (sock_error() in
// __skb_try_recv_datagram()) although nothing was lost. The unlocked test dates from
// 16b304f3404f ("netlink: Eliminate kmalloc in netlink dump operation."); a939d14919b7 only
// annotated it (READ_ONCE), and b5590270068c ("netlink: hold nlk->cb_mutex longer in
// __netlink_dump_start()") closed the gap on the sender's side only. A dump request sent
// from this thread runs its first netlink_dump() inside this thread's sendmsg
// (__netlink_dump_start); a small dump (its DONE fits in the first skb) ends right there and
// clears cb_running while the JS thread's recvmsg is between its test and its call. Issue
// 24's agent logged "recvmsg: EINVAL" that way and went deaf (EINVAL was fatal then);
// test/native/dump-race.netns.test.ts made it happen within milliseconds. With every dump
// request sent on the JS thread, every netlink_dump() of the socket runs there, and
// cb_running cannot change between the test and the call. (A lock around this thread's
// dump sends and the JS thread's receives would do it too, but held the JS thread up for as
// long as the sendmsg waited for rtnl_lock: 25-45 ms a dump on a busy machine.)
void HandOff(SendQueue::Shared& s, std::shared_ptr<SendQueue::Shared> self,
             std::vector<uint8_t> bytes, std::unique_lock<std::mutex>& lock) {
  s.handoff = std::move(bytes);
  s.handoff_done = false;
  auto* m = new Message{Message::kHandOff, std::move(self)};
  if (napi_call_threadsafe_function(s.tsfn, m, napi_tsfn_nonblocking) != napi_ok) {
    delete m;  // the environment is going away: nobody waits for this request any more
    s.handoff.clear();
    s.handoff_done = true;
    return;
  }
  s.cv.wait(lock, [&] { return s.stop || s.handoff_done; });
}

void Run(std::shared_ptr<SendQueue::Shared> self) {
  SendQueue::Shared& s = *self;
  // Named for top -H and /proc/PID/task/*/comm (bench/neighbor/cpu.mjs reads its CPU time).
  pthread_setname_np(pthread_self(), kSendThreadName);
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&] { return s.stop || !s.queue.empty(); });
    if (s.stop) break;
    std::vector<uint8_t> bytes = std::move(s.queue.front());
    s.queue.pop_front();
    s.busy = true;
    if (StartsDump(bytes.data(), bytes.size())) {
      HandOff(s, self, std::move(bytes), lock);
      s.busy = false;
      continue;
    }
    lock.unlock();
    iovec iov{bytes.data(), bytes.size()};
    int err = SendToKernel(s.fd.Get(), &iov, 1, true);
    lock.lock();
    s.busy = false;
    // Under the lock: the queue's destructor releases the function under it, after `stop`.
    if (err != 0 && !s.stop) {
      auto* m = new Message{Message::kFailure, nullptr, err};
      Describe(bytes, m);
      if (napi_call_threadsafe_function(s.tsfn, m, napi_tsfn_nonblocking) != napi_ok) delete m;
    }
  }
  s.exited = true;
  s.cv.notify_all();
}

}  // namespace

bool StartsDump(const uint8_t* data, size_t len) {
  size_t off = 0;
  while (len - off >= sizeof(nlmsghdr)) {
    nlmsghdr h;
    std::memcpy(&h, data + off, sizeof(h));
    if (h.nlmsg_len < sizeof(nlmsghdr) || h.nlmsg_len > len - off) return false;
    if ((h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP) return true;
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  return false;
}

int SendToKernel(int fd, const iovec* iov, size_t count, bool may_hang) {
  Fault fault = MaybeFault(FaultSite::kNetlinkSend, nullptr);
  if (fault.kind == Fault::kErrno) return fault.err;
  if (fault.kind == Fault::kLose) return 0;  // "sent": nothing reaches the kernel
  if (fault.kind == Fault::kHang && may_hang) FaultSleep(fault.hang_ms);
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
    : shared_(std::make_shared<Shared>()) {
  Shared& s = *shared_;
  s.tsfn_finalized = std::make_shared<std::atomic<bool>>(false);
  s.fd.Reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!s.fd.Valid()) ThrowErrno(env, errno, "fcntl", "F_DUPFD_CLOEXEC");
  napi_value name = Napi::String::New(env, "fibkeeper:NetlinkSocket.send");
  // At the environment's teardown Node finalizes the function itself, and may destroy this
  // queue from inside that (its lock held): once finalized, it is not released again.
  // The finalizer holds a reference of its own: it runs after the queue is gone when the
  // queue released the function first.
  auto* flag = new std::shared_ptr<std::atomic<bool>>(s.tsfn_finalized);
  napi_status st = napi_create_threadsafe_function(
      env, on_error, nullptr, name, 0, 1, flag,
      [](napi_env, void* data, void*) {
        auto* f = static_cast<std::shared_ptr<std::atomic<bool>>*>(data);
        (*f)->store(true);
        delete f;
      },
      nullptr, CallJs, &s.tsfn);
  if (st != napi_ok) {
    delete flag;
    throw Napi::Error::New(env, "netlink: cannot create the send thread's callback");
  }
  // The queue never keeps the process alive: pending requests ref the socket's poll instead.
  napi_unref_threadsafe_function(env, s.tsfn);
  thread_ = std::thread(Run, shared_);
}

SendQueue::~SendQueue() {
  Shared& s = *shared_;
  std::unique_lock<std::mutex> lock(s.mu);
  s.stop = true;
  s.queue.clear();
  s.cv.notify_all();
  bool exited =
      s.cv.wait_for(lock, std::chrono::milliseconds(kStopWaitMs), [&] { return s.exited; });
  // The raw call: this may run while the environment is torn down, where it must not throw.
  if (s.tsfn != nullptr && !s.tsfn_finalized->load()) {
    napi_release_threadsafe_function(s.tsfn, napi_tsfn_release);
  }
  s.tsfn = nullptr;
  lock.unlock();
  if (!thread_.joinable()) return;
  if (exited) {
    thread_.join();
  } else {
    thread_.detach();  // stuck in the kernel: it ends by itself once sendmsg returns
  }
}

bool SendQueue::Idle() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->queue.empty() && !shared_->busy;
}

void SendQueue::Push(const uint8_t* data, size_t len) {
  std::vector<uint8_t> copy(data, data + len);
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->queue.push_back(std::move(copy));
  }
  shared_->cv.notify_one();
}

}  // namespace fk
