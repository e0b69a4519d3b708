// NetlinkSocket: an AF_NETLINK socket, optionally opened inside another network namespace,
// with non-blocking send and batched receive on the libuv loop.
#include <linux/netlink.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <vector>

#include "errors.h"
#include "fd.h"
#include "init.h"
#include "netns.h"
#include "receiving_socket.h"
#include "send_queue.h"

namespace fk {
namespace {

// Reads an optional boolean socket option: absent means `def`, and a kernel that lacks the
// option (ENOPROTOOPT) is tolerated only for defaults, never when the caller asked for it.
void SetBoolOption(Napi::Env env, int fd, const Napi::Object& opts, const char* key, int opt,
                   bool def) {
  Napi::Value v = opts.Get(key);
  bool explicitly = !v.IsUndefined();
  int on = (explicitly ? v.ToBoolean().Value() : def) ? 1 : 0;
  if (!explicitly && on == 0) return;
  if (setsockopt(fd, SOL_NETLINK, opt, &on, sizeof(on)) != 0) {
    if (!explicitly && errno == ENOPROTOOPT) return;
    ThrowErrno(env, errno, "setsockopt", key);
  }
}

// SO_RCVBUFFORCE / SO_SNDBUFFORCE, falling back to the capped option without CAP_NET_ADMIN.
void SetBufferSize(Napi::Env env, int fd, bool receive, int bytes) {
  int force = receive ? SO_RCVBUFFORCE : SO_SNDBUFFORCE;
  int plain = receive ? SO_RCVBUF : SO_SNDBUF;
  if (setsockopt(fd, SOL_SOCKET, force, &bytes, sizeof(bytes)) == 0) return;
  if (errno != EPERM)
    ThrowErrno(env, errno, "setsockopt", receive ? "SO_RCVBUFFORCE" : "SO_SNDBUFFORCE");
  if (setsockopt(fd, SOL_SOCKET, plain, &bytes, sizeof(bytes)) != 0) {
    ThrowErrno(env, errno, "setsockopt", receive ? "SO_RCVBUF" : "SO_SNDBUF");
  }
}

int GetIntOption(Napi::Env env, int fd, int level, int opt, const char* name) {
  int value = 0;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, level, opt, &value, &len) != 0) ThrowErrno(env, errno, "getsockopt", name);
  return value;
}

uint32_t OptionalUint(const Napi::Object& opts, const char* key, uint32_t def) {
  Napi::Value v = opts.Get(key);
  if (v.IsUndefined()) return def;
  if (!v.IsNumber()) ThrowType(opts.Env(), std::string(key) + " must be a number");
  return v.As<Napi::Number>().Uint32Value();
}

class NetlinkSocket : public ReceivingSocket<NetlinkSocket> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineSocket(env,
                        {
                            InstanceAccessor<&NetlinkSocket::GetPortId>("portId"),
                            InstanceMethod<&NetlinkSocket::Send>("send"),
                            InstanceMethod<&NetlinkSocket::StartSender>("startSender"),
                            InstanceMethod<&NetlinkSocket::Submit>("submit"),
                            InstanceMethod<&NetlinkSocket::AddMembership>("addMembership"),
                            InstanceMethod<&NetlinkSocket::DropMembership>("dropMembership"),
                            InstanceMethod<&NetlinkSocket::SetReceiveBuffer>("setReceiveBuffer"),
                        });
  }

  // new NetlinkSocket({protocol, netns, portId, groups, rcvbuf, sndbuf, extAck, capAck,
  //                    strictCheck, noEnobufs})
  explicit NetlinkSocket(const Napi::CallbackInfo& info) : ReceivingSocket(info) {
    Napi::Env env = info.Env();
    if (!info[0].IsObject()) ThrowType(env, "NetlinkSocket(options)");
    Napi::Object opts = info[0].As<Napi::Object>();
    UniqueFd fd = OpenSocket(env, opts);
    ConfigureSocket(env, fd.Get(), opts);
    Adopt(std::move(fd));
  }

 private:
  friend class ReceivingSocket<NetlinkSocket>;
  static constexpr SocketNames kNames{"NetlinkSocket", "netlink", "receive(onData, onError)"};
  static constexpr FaultSite kRecvSite = FaultSite::kNetlinkRecv;
  using Address = sockaddr_nl;

  static UniqueFd OpenSocket(Napi::Env env, const Napi::Object& opts) {
    int protocol = static_cast<int>(OptionalUint(opts, "protocol", NETLINK_ROUTE));
    NetnsGuard netns(env, OptionalString(opts, "netns"));
    UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, protocol));
    if (!fd.Valid()) ThrowErrno(env, errno, "socket", "AF_NETLINK");
    return fd;
  }

  void ConfigureSocket(Napi::Env env, int fd, const Napi::Object& opts) {
    if (!opts.Get("rcvbuf").IsUndefined()) {
      SetBufferSize(env, fd, true, static_cast<int>(OptionalUint(opts, "rcvbuf", 0)));
    }
    if (!opts.Get("sndbuf").IsUndefined()) {
      SetBufferSize(env, fd, false, static_cast<int>(OptionalUint(opts, "sndbuf", 0)));
    }
    SetBoolOption(env, fd, opts, "extAck", NETLINK_EXT_ACK, true);
    SetBoolOption(env, fd, opts, "capAck", NETLINK_CAP_ACK, true);
    SetBoolOption(env, fd, opts, "strictCheck", NETLINK_GET_STRICT_CHK, false);
    SetBoolOption(env, fd, opts, "noEnobufs", NETLINK_NO_ENOBUFS, false);

    sockaddr_nl addr{};
    addr.nl_family = AF_NETLINK;
    addr.nl_pid = OptionalUint(opts, "portId", 0);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ThrowErrno(env, errno, "bind", "AF_NETLINK");
    }
    socklen_t len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ThrowErrno(env, errno, "getsockname");
    }
    port_id_ = addr.nl_pid;

    Napi::Value groups = opts.Get("groups");
    if (groups.IsArray()) {
      Napi::Array list = groups.As<Napi::Array>();
      for (uint32_t i = 0; i < list.Length(); i++) {
        SetMembership(env, fd, NETLINK_ADD_MEMBERSHIP, list.Get(i).ToNumber().Uint32Value());
      }
    }
  }

  static void SetMembership(Napi::Env env, int fd, int opt, uint32_t group) {
    if (setsockopt(fd, SOL_NETLINK, opt, &group, sizeof(group)) != 0) {
      ThrowErrno(
          env, errno, "setsockopt",
          (opt == NETLINK_ADD_MEMBERSHIP ? "NETLINK_ADD_MEMBERSHIP " : "NETLINK_DROP_MEMBERSHIP ") +
              std::to_string(group));
    }
  }

  Napi::Value GetPortId(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), port_id_);
  }

  // send(buffers: Buffer[]): one sendmsg, one iovec per buffer; returns bytes sent.
  Napi::Value Send(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsArray()) ThrowType(env, "send(buffers)");
    Napi::Array list = info[0].As<Napi::Array>();
    std::vector<iovec> iov(list.Length());
    size_t total = 0;
    for (uint32_t i = 0; i < list.Length(); i++) {
      Napi::Value v = list.Get(i);
      if (!v.IsBuffer()) ThrowType(env, "send: every element must be a Buffer");
      auto buf = v.As<Napi::Buffer<uint8_t>>();
      iov[i].iov_base = buf.Data();
      iov[i].iov_len = buf.Length();
      total += buf.Length();
    }
    int err = SendToKernel(fd, iov.data(), iov.size());
    if (err != 0) ThrowErrno(env, err, "sendmsg");
    return Napi::Number::New(env, static_cast<double>(total));
  }

  // startSender(onError(err, firstSeq, lastSeq)): starts the send thread (SendQueue).
  Napi::Value StartSender(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsFunction()) ThrowType(env, "startSender(onError)");
    if (!sender_) sender_ = std::make_unique<SendQueue>(env, fd, info[0].As<Napi::Function>());
    return env.Undefined();
  }

  // submit(buffer, queue): one sendmsg of `buffer`, in order with every earlier submit. With
  // `queue` false and nothing queued it is sent here and now (a failure throws); otherwise
  // it is queued for the send thread (a failure goes to onError). Returns whether it was
  // sent here.
  Napi::Value Submit(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsBuffer()) ThrowType(env, "submit(buffer, queue)");
    if (!sender_) ThrowType(env, "submit: startSender() first");
    auto buf = info[0].As<Napi::Buffer<uint8_t>>();
    bool queue = info[1].ToBoolean().Value();
    if (!queue && sender_->Idle()) {
      iovec iov{buf.Data(), buf.Length()};
      int err = SendToKernel(fd, &iov, 1);
      if (err != 0) ThrowErrno(env, err, "sendmsg");
      return Napi::Boolean::New(env, true);
    }
    sender_->Push(buf.Data(), buf.Length());
    return Napi::Boolean::New(env, false);
  }

  Napi::Value AddMembership(const Napi::CallbackInfo& info) {
    SetMembership(info.Env(), CheckOpen(info.Env()), NETLINK_ADD_MEMBERSHIP,
                  info[0].ToNumber().Uint32Value());
    return info.Env().Undefined();
  }

  Napi::Value DropMembership(const Napi::CallbackInfo& info) {
    SetMembership(info.Env(), CheckOpen(info.Env()), NETLINK_DROP_MEMBERSHIP,
                  info[0].ToNumber().Uint32Value());
    return info.Env().Undefined();
  }

  // setReceiveBuffer(bytes): returns SO_RCVBUF as the kernel reports it afterwards.
  Napi::Value SetReceiveBuffer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    SetBufferSize(env, fd, true, static_cast<int>(info[0].ToNumber().Uint32Value()));
    return Napi::Number::New(env, GetIntOption(env, fd, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF"));
  }

  // A batch: whole datagrams from the kernel (port id 0; others are dropped), each padded
  // with zeros to a 4-byte boundary.
  bool BatchFull() const { return false; }

  size_t Accept(uint8_t* data, size_t len, size_t offset, const sockaddr_nl& from) {
    if (from.nl_pid != 0) return 0;  // only the kernel talks to us
    size_t padded = (len + 3) & ~static_cast<size_t>(3);
    std::memset(data + len, 0, padded - len);
    return padded;
  }

  std::vector<napi_value> TakeBatch(Napi::Env env, const uint8_t* data, size_t used) {
    if (used == 0) return {};
    return {Napi::Buffer<uint8_t>::Copy(env, data, used)};
  }

  // The send thread stops before the descriptor closes.
  void BeforeClose() { sender_.reset(); }

  uint32_t port_id_ = 0;
  // Declared last: destroyed (its thread joined) first, before the base closes the fd.
  std::unique_ptr<SendQueue> sender_;
};

}  // namespace

void InitNetlinkSocket(Napi::Env env, Napi::Object exports) {
  exports.Set("NetlinkSocket", NetlinkSocket::Define(env));
}

}  // namespace fk
