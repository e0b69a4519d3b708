#include "receiving_socket.h"

#include <cerrno>

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

bool IsFatalReceiveError(int err) {
  return err == EBADF || err == ENOTSOCK || err == EFAULT || err == EINVAL;
}

}  // namespace fk
