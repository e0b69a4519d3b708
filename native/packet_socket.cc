// PacketSocket: an AF_PACKET/SOCK_RAW socket bound to one interface and one ethertype (or
// ETH_P_ALL), optionally opened inside another network namespace. Frames are sent whole
// (Ethernet header included) and received in batches on the libuv loop; each frame comes
// with its own ifindex, protocol and packet type. A classic BPF filter can narrow what is
// received, and link-layer multicast groups can be joined for as long as the socket lives
// (PACKET_ADD_MEMBERSHIP: the interface then accepts frames to that group).
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "errors.h"
#include "fd.h"
#include "init.h"
#include "netns.h"
#include "receiving_socket.h"

namespace fk {
namespace {

constexpr size_t kMaxFrames = 256;
constexpr size_t kMetaWords = 5;  // offset, length, ifindex, protocol, pkttype

class PacketSocket : public ReceivingSocket<PacketSocket> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineSocket(env, {InstanceMethod<&PacketSocket::Send>("send"),
                              InstanceMethod<&PacketSocket::Membership>("membership"),
                              InstanceMethod<&PacketSocket::AttachFilter>("attachFilter")});
  }

  // new PacketSocket({ifindex, protocol, netns?, ignoreOutgoing?, rcvbuf?})
  explicit PacketSocket(const Napi::CallbackInfo& info) : ReceivingSocket(info) {
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
    Adopt(std::move(fd));
    ifindex_ = ifindex;
  }

 private:
  friend class ReceivingSocket<PacketSocket>;
  static constexpr SocketNames kNames{"PacketSocket", "packet", "receive(onFrames, onError)"};
  static constexpr FaultSite kRecvSite = FaultSite::kPacketRecv;
  using Address = sockaddr_ll;

  // send(frame): one frame out of the bound interface; returns bytes sent.
  Napi::Value Send(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsBuffer()) ThrowType(env, "send(frame: Buffer)");
    auto frame = info[0].As<Napi::Buffer<uint8_t>>();
    Fault fault = MaybeFault(FaultSite::kPacketSend, nullptr);
    if (fault.kind == Fault::kErrno) ThrowErrno(env, fault.err, "send", "AF_PACKET");
    if (fault.kind == Fault::kLose) {
      return Napi::Number::New(env, static_cast<double>(frame.Length()));  // "sent"
    }
    ssize_t n;
    do {
      n = send(fd, frame.Data(), frame.Length(), MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) ThrowErrno(env, errno, "send", "AF_PACKET");
    return Napi::Number::New(env, static_cast<double>(n));
  }

  // membership(mac: Buffer(6), join: boolean): joins or leaves a link-layer multicast group
  // on the bound interface (PACKET_MR_MULTICAST); the kernel leaves it when the socket closes.
  Napi::Value Membership(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsBuffer() || info[0].As<Napi::Buffer<uint8_t>>().Length() != ETH_ALEN ||
        !info[1].IsBoolean()) {
      ThrowType(env, "membership(mac: Buffer(6), join: boolean)");
    }
    bool join = info[1].As<Napi::Boolean>().Value();
    packet_mreq mreq{};
    mreq.mr_ifindex = ifindex_;
    mreq.mr_type = PACKET_MR_MULTICAST;
    mreq.mr_alen = ETH_ALEN;
    std::memcpy(mreq.mr_address, info[0].As<Napi::Buffer<uint8_t>>().Data(), ETH_ALEN);
    int opt = join ? PACKET_ADD_MEMBERSHIP : PACKET_DROP_MEMBERSHIP;
    if (setsockopt(fd, SOL_PACKET, opt, &mreq, sizeof(mreq)) != 0) {
      ThrowErrno(env, errno, "setsockopt",
                 join ? "PACKET_ADD_MEMBERSHIP" : "PACKET_DROP_MEMBERSHIP");
    }
    return env.Undefined();
  }

  // attachFilter(program: Buffer): a classic BPF program (struct sock_filter[], 8 bytes per
  // instruction) that decides which frames reach the socket (SO_ATTACH_FILTER). Frames that
  // were queued before it (the socket receives from the moment it is bound) are dropped:
  // first a filter that accepts nothing, then the queue drained, then the program.
  Napi::Value AttachFilter(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsBuffer()) ThrowType(env, "attachFilter(program: Buffer)");
    auto prog = info[0].As<Napi::Buffer<uint8_t>>();
    size_t n = prog.Length() / sizeof(sock_filter);
    if (n == 0 || n > BPF_MAXINSNS || prog.Length() % sizeof(sock_filter) != 0) {
      ThrowType(env, "attachFilter: the program is 1 to 4096 instructions of 8 bytes");
    }
    std::vector<sock_filter> insns(n);
    std::memcpy(insns.data(), prog.Data(), n * sizeof(sock_filter));
    sock_filter none{BPF_RET | BPF_K, 0, 0, 0};
    sock_fprog drop_all{1, &none};
    sock_fprog fprog{static_cast<unsigned short>(n), insns.data()};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &drop_all, sizeof(drop_all)) != 0) {
      ThrowErrno(env, errno, "setsockopt", "SO_ATTACH_FILTER");
    }
    uint8_t byte;
    while (recv(fd, &byte, 1, MSG_DONTWAIT | MSG_TRUNC) >= 0) {
    }
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof(fprog)) != 0) {
      ThrowErrno(env, errno, "setsockopt", "SO_ATTACH_FILTER");
    }
    return env.Undefined();
  }

  // A batch: whole frames (the largest, a GSO frame, fits in kMinRoom), at most kMaxFrames,
  // each with kMetaWords words of meta for onFrames(buffer, meta: Uint32Array).
  bool BatchFull() const { return meta_.size() >= kMaxFrames * kMetaWords; }

  size_t Accept(uint8_t* data, size_t len, size_t offset, const sockaddr_ll& from) {
    meta_.insert(meta_.end(), {static_cast<uint32_t>(offset), static_cast<uint32_t>(len),
                               static_cast<uint32_t>(from.sll_ifindex),
                               static_cast<uint32_t>(ntohs(from.sll_protocol)),
                               static_cast<uint32_t>(from.sll_pkttype)});
    return len;
  }

  std::vector<napi_value> TakeBatch(Napi::Env env, const uint8_t* data, size_t used) {
    std::vector<uint32_t> words;
    words.swap(meta_);  // the next batch starts empty, also when this one cannot be delivered
    if (words.empty()) return {};
    auto frames = Napi::Buffer<uint8_t>::Copy(env, data, used);
    auto meta = Napi::Uint32Array::New(env, words.size());
    std::memcpy(meta.Data(), words.data(), words.size() * sizeof(uint32_t));
    return {frames, meta};
  }

  std::vector<uint32_t> meta_;
  int ifindex_ = 0;
};

}  // namespace

void InitPacketSocket(Napi::Env env, Napi::Object exports) {
  exports.Set("PacketSocket", PacketSocket::Define(env));
}

}  // namespace fk
