#include "receiving_socket.h"

#include <linux/netlink.h>

#include <cerrno>
#include <cstring>

namespace fk {

ssize_t ReceiveDatagram(int fd, uint8_t* buf, size_t room, void* from, socklen_t from_len,
                        int* err) {
  iovec iov{buf, room};
  msghdr msg{};
  msg.msg_name = from;
  msg.msg_namelen = from_len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n;
  do {
    n = recvmsg(fd, &msg, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    *err = (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : errno;
    return -1;
  }
  if (msg.msg_flags & MSG_TRUNC) {
    *err = EMSGSIZE;
    return -1;
  }
  return n;
}

ssize_t ReceiveWithFault(int fd, uint8_t* buf, size_t room, void* from, socklen_t from_len,
                         int* err, const Fault& fault, FaultState* state, bool netlink) {
  switch (fault.kind) {
    case Fault::kNone:
      break;
    case Fault::kErrno:  // a pending socket error: reported, and nothing is read
      *err = fault.err;
      return -1;
    case Fault::kEmpty:  // a wakeup with nothing to read
      *err = 0;
      return -1;
    case Fault::kLose: {  // a datagram dropped, and the loss reported
      int ignored = 0;
      ssize_t n = ReceiveDatagram(fd, buf, room, from, from_len, &ignored);
      if (netlink && fault.err == ENOBUFS && n >= static_cast<ssize_t>(sizeof(nlmsghdr))) {
        nlmsghdr h;
        std::memcpy(&h, buf, sizeof(h));
        if (h.nlmsg_flags & NLM_F_MULTI) {  // dump data: kept, the overflow reported next
          state->pending_err = ENOBUFS;
          return n;
        }
      }
      *err = fault.err;
      return -1;
    }
    case Fault::kDiscard: {  // deaf: whatever is queued vanishes
      ssize_t n;
      do {
        n = ReceiveDatagram(fd, buf, room, from, from_len, err);
      } while (n >= 0 || *err == EMSGSIZE);
      return -1;
    }
    case Fault::kTruncate: {  // the datagram cut short
      ssize_t n = ReceiveDatagram(fd, buf, room, from, from_len, err);
      if (n > 1) n = 1 + static_cast<ssize_t>(static_cast<double>(n - 1) * fault.keep_fraction);
      return n;
    }
    case Fault::kHang:  // only sends hang
      break;
  }
  return ReceiveDatagram(fd, buf, room, from, from_len, err);
}

bool IsFatalReceiveError(int err) {
  // EINVAL is not among them: netlink_recvmsg() leaves a dump's error in sk_err (see
  // NetlinkSocket::ReceiveOne), and the socket is fine.
  return err == EBADF || err == ENOTSOCK || err == EFAULT;
}

}  // namespace fk
