// PacketSocket: an AF_PACKET/SOCK_RAW socket bound to one interface and one ethertype (or
// ETH_P_ALL), optionally opened inside another network namespace. Frames are sent whole
// (Ethernet header included) and received in batches on the libuv loop; each frame comes
// with its own ifindex, protocol and packet type.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "errors.h"
#include "fd.h"
#include "init.h"
#include "netns.h"
#include "poller.h"

namespace fk {
namespace {

constexpr size_t kScratchBytes = 256 * 1024;
constexpr size_t kMinRoom = 64 * 1024;  // the largest (GSO) frame a recvmsg may return
constexpr size_t kMaxFrames = 256;
constexpr size_t kMetaWords = 5;  // offset, length, ifindex, protocol, pkttype

class PacketSocket : public Napi::ObjectWrap<PacketSocket> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "PacketSocket",
                       {
                           InstanceAccessor<&PacketSocket::GetFd>("fd"),
                           InstanceMethod<&PacketSocket::Send>("send"),
                           InstanceMethod<&PacketSocket::Receive>("receive"),
                           InstanceMethod<&PacketSocket::Pause>("pause"),
                           InstanceMethod<&PacketSocket::JsRef>("ref"),
                           InstanceMethod<&PacketSocket::JsUnref>("unref"),
                           InstanceMethod<&PacketSocket::Close>("close"),
                       });
  }

  // new PacketSocket({ifindex, protocol, netns?, ignoreOutgoing?, rcvbuf?})
  explicit PacketSocket(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<PacketSocket>(info), poller_([this](int status) { OnReadable(status); }) {
    Napi::Env env = info.Env();
    if (!info[0].IsObject()) ThrowType(env, "PacketSocket(options)");
    Napi::Object o = info[0].As<Napi::Object>();
    int ifindex = o.Get("ifindex").ToNumber().Int32Value();
    uint16_t protocol = static_cast<uint16_t>(o.Get("protocol").ToNumber().Uint32Value());
    UniqueFd fd;
    {
      NetnsGuard netns(env, OptionalString(o, "netns"));
      // Protocol 0: the socket receives nothing until bind() names the interface and type,
      // so no frame of another interface slips in between socket() and bind().
      fd.Reset(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (!fd.Valid()) ThrowErrno(env, errno, "socket", "AF_PACKET");
    }
    if (o.Get("ignoreOutgoing").ToBoolean().Value()) {
      int on = 1;
      if (setsockopt(fd.Get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &on, sizeof(on)) != 0) {
        ThrowErrno(env, errno, "setsockopt", "PACKET_IGNORE_OUTGOING");
      }
    }
    Napi::Value rcvbuf = o.Get("rcvbuf");
    if (rcvbuf.IsNumber()) {
      int bytes = rcvbuf.As<Napi::Number>().Int32Value();
      if (setsockopt(fd.Get(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) != 0 &&
          setsockopt(fd.Get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) != 0) {
        ThrowErrno(env, errno, "setsockopt", "SO_RCVBUF");
      }
    }
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(protocol);
    addr.sll_ifindex = ifindex;
    if (bind(fd.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ThrowErrno(env, errno, "bind", "AF_PACKET ifindex " + std::to_string(ifindex));
    }
    fd_ = std::move(fd);
  }

  ~PacketSocket() override { poller_.Close(); }

 private:
  int CheckOpen(Napi::Env env) {
    if (!fd_.Valid()) ThrowErrno(env, EBADF, "packet", "socket is closed");
    return fd_.Get();
  }

  Napi::Value GetFd(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), fd_.Get());
  }

  // send(frame): one frame out of the bound interface; returns bytes sent.
  Napi::Value Send(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsBuffer()) ThrowType(env, "send(frame: Buffer)");
    auto frame = info[0].As<Napi::Buffer<uint8_t>>();
    ssize_t n;
    do {
      n = send(fd, frame.Data(), frame.Length(), MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) ThrowErrno(env, errno, "send", "AF_PACKET");
    return Napi::Number::New(env, static_cast<double>(n));
  }

  // receive(onFrames(buffer, meta: Uint32Array), onError)
  Napi::Value Receive(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsFunction() || !info[1].IsFunction()) {
      ThrowType(env, "receive(onFrames, onError)");
    }
    on_frames_ = Napi::Persistent(info[0].As<Napi::Function>());
    on_error_ = Napi::Persistent(info[1].As<Napi::Function>());
    if (!context_) context_ = std::make_unique<Napi::AsyncContext>(env, "fibkeeper:PacketSocket");
    if (scratch_.empty()) scratch_.resize(kScratchBytes);
    poller_.Start(env, fd, Value());
    return env.Undefined();
  }

  Napi::Value Pause(const Napi::CallbackInfo& info) {
    poller_.Stop();
    return info.Env().Undefined();
  }

  Napi::Value JsRef(const Napi::CallbackInfo& info) {
    poller_.SetRef(true);
    return info.Env().Undefined();
  }

  Napi::Value JsUnref(const Napi::CallbackInfo& info) {
    poller_.SetRef(false);
    return info.Env().Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    poller_.Close();
    fd_.Reset();
    on_frames_.Reset();
    on_error_.Reset();
    return info.Env().Undefined();
  }

  void OnReadable(int status) {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    Napi::Object self = Value();
    if (status < 0) {
      poller_.Stop();
      Deliver(env, self, 0, -status, "uv_poll");
      return;
    }
    size_t used = 0;
    int err = 0;
    meta_.clear();
    while (fd_.Valid() && scratch_.size() - used >= kMinRoom &&
           meta_.size() < kMaxFrames * kMetaWords) {
      sockaddr_ll from{};
      iovec iov{scratch_.data() + used, scratch_.size() - used};
      msghdr msg{};
      msg.msg_name = &from;
      msg.msg_namelen = sizeof(from);
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      ssize_t n = recvmsg(fd_.Get(), &msg, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) err = errno;
        break;
      }
      if (msg.msg_flags & MSG_TRUNC) {
        err = EMSGSIZE;
        break;
      }
      meta_.insert(meta_.end(), {static_cast<uint32_t>(used), static_cast<uint32_t>(n),
                                 static_cast<uint32_t>(from.sll_ifindex),
                                 static_cast<uint32_t>(ntohs(from.sll_protocol)),
                                 static_cast<uint32_t>(from.sll_pkttype)});
      used += static_cast<size_t>(n);
    }
    Deliver(env, self, used, err, "recvmsg");
  }

  void Deliver(Napi::Env env, const Napi::Object& self, size_t used, int err, const char* syscall) {
    if (!meta_.empty() && !on_frames_.IsEmpty()) {
      auto frames = Napi::Buffer<uint8_t>::Copy(env, scratch_.data(), used);
      auto meta = Napi::Uint32Array::New(env, meta_.size());
      std::memcpy(meta.Data(), meta_.data(), meta_.size() * sizeof(uint32_t));
      meta_.clear();
      CallFromLoop(env, *context_, self, on_frames_.Value(), {frames, meta});
    }
    meta_.clear();
    if (err == 0 || on_error_.IsEmpty() || !fd_.Valid()) return;
    if (err == EBADF || err == ENOTSOCK || err == EFAULT || err == EINVAL) poller_.Stop();
    CallFromLoop(env, *context_, self, on_error_.Value(), {ErrnoError(env, err, syscall).Value()});
  }

  UniqueFd fd_;
  SocketPoller poller_;
  std::vector<uint8_t> scratch_;
  std::vector<uint32_t> meta_;
  Napi::FunctionReference on_frames_;
  Napi::FunctionReference on_error_;
  std::unique_ptr<Napi::AsyncContext> context_;
};

}  // namespace

void InitPacketSocket(Napi::Env env, Napi::Object exports) {
  exports.Set("PacketSocket", PacketSocket::Define(env));
}

}  // namespace fk
