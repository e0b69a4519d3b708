// SendQueue: the sendmsg calls of one netlink socket on a thread of their own. The kernel
// does the work a request asks for (creating a neighbor entry, sending its ARP request)
// inside sendmsg, on the caller's thread: a million neighbor writes spend ~4 s there. Queued,
// that time overlaps the JS thread's own work instead of adding to it.
//
// Buffers are sent in the order they were pushed, each by one sendmsg. A failed sendmsg is
// reported to `on_error(error, firstSeq, lastSeq)` on the JS thread: the sequence numbers of
// the first and last message of the buffer, none of which reached the kernel. The thread
// starts with the queue and is joined when it is destroyed (what is still queued is dropped).
#pragma once

#include <napi.h>
#include <sys/uio.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fk {

// The send thread's name (at most 15 characters).
constexpr const char* kSendThreadName = "fk-netlink-send";

class SendQueue {
 public:
  SendQueue(Napi::Env env, int fd, Napi::Function on_error);
  ~SendQueue();
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // Nothing is queued and no send is under way: a send made now on the JS thread keeps the
  // order of everything pushed before it (only the JS thread pushes).
  bool Idle();
  // Copies `len` bytes at `data` (the caller reuses its buffer) and queues them.
  void Push(const uint8_t* data, size_t len);

 private:
  void Run();

  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<uint8_t>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  napi_threadsafe_function tsfn_ = nullptr;
  // Set by the function's finalizer (it may outlive the queue: shared).
  std::shared_ptr<std::atomic<bool>> tsfn_finalized_;
  std::thread thread_;
};

// One sendmsg of `iov` to the kernel's netlink port, EINTR retried; the errno, or 0.
int SendToKernel(int fd, const iovec* iov, size_t count);

}  // namespace fk
