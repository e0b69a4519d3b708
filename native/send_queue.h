// SendQueue: the sendmsg calls of one netlink socket on a thread of their own. The kernel
// does the work a request asks for (creating a neighbor entry, sending its ARP request)
// inside sendmsg, on the caller's thread: a million neighbor writes spend ~4 s there. Queued,
// that time overlaps the JS thread's own work instead of adding to it.
//
// Buffers are sent in the order they were pushed, each by one sendmsg. A failed sendmsg is
// reported to `on_error(error, firstSeq, lastSeq)` on the JS thread: the sequence numbers of
// the first and last message of the buffer, none of which reached the kernel.
//
// A buffer that asks for a dump (NLM_F_DUMP) is not sent by the thread: it hands the buffer
// to the JS thread, which sends it, and waits for that before it goes on (the order stays).
// The kernel runs a dump's first netlink_dump() inside the sendmsg that asks for it, and the
// socket's receives, on the JS thread, must never run beside it (SendQueue::HandOff says why).
//
// The thread starts with the queue and works on a descriptor of its own (a dup of the
// socket's). When the queue is destroyed, what is still queued is dropped and the thread is
// joined; a thread stuck in a sendmsg that the kernel does not finish (a hung rtnl_lock
// holder) is left behind after kStopWaitMs instead: it ends, and closes its descriptor, once
// that sendmsg returns. So closing a socket never waits on the kernel.
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

#include "faults.h"
#include "fd.h"

namespace fk {

// The send thread's name (at most 15 characters).
constexpr const char* kSendThreadName = "fk-netlink-send";
// How long destroying a queue waits for its thread to finish the sendmsg it is in.
constexpr int kStopWaitMs = 200;

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

  // What the thread, the queue and the JS thread's callbacks share.
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

// Whether `data` holds a message that asks for a dump (NLM_F_DUMP).
bool StartsDump(const uint8_t* data, size_t len);

// One sendmsg of `iov` to the kernel's netlink port, EINTR retried; the errno, or 0. With
// `may_hang` (the send thread), an injected hang blocks it (faults.h).
int SendToKernel(int fd, const iovec* iov, size_t count, bool may_hang = false);

}  // namespace fk
