// Cluster mode's kernel objects, each bound to the agent's process so that the kernel ends
// them when the process ends, however it ends:
//  - openTun: a TUN device (not persistent) that holds the cluster IPs. The kernel deletes
//    it, and every address on it, when its last file descriptor closes (tun_chr_close ->
//    tun_detach -> unregister_netdevice). The descriptor is moved to a high number: at exit
//    the kernel closes descriptors in ascending order and, since task_work stopped being run
//    FIFO (kernel 5.x, "task_work: remove fifo ordering guarantee"), runs the file releases
//    last-queued first, so the holder goes before the sockets whose close the peers see.
//  - udpSocket: a UDP socket bound in the managed network namespace (the peer heartbeat);
//    Node's dgram takes it over (bind({ fd })). Node creates its own sockets in the
//    process's namespace, one tick after the call, so it cannot do this itself.
//  - attachTcx: a tcx link (kernel 6.6) of a SCHED_CLS program on an interface, by
//    BPF_LINK_CREATE: the link lives as long as its descriptor, i.e. the process.
// Every descriptor is returned as a plain number with O_CLOEXEC set (no child inherits it);
// the caller closes it (fs.closeSync, or dgram's close()).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "bpf.h"
#include "errors.h"
#include "fd.h"
#include "init.h"
#include "netns.h"

#ifndef BPF_TCX_INGRESS_VALUE
// enum bpf_attach_type: BPF_TCX_INGRESS and BPF_TCX_EGRESS (kernel 6.6); Debian 12's
// headers stop at 6.1.
#define BPF_TCX_INGRESS_VALUE 46
#define BPF_TCX_EGRESS_VALUE 47
#endif

namespace fk {
namespace {

// The lowest descriptor number the holder's fd is moved to (see the file comment).
constexpr int kHighFd = 4000;

std::string OptNetns(const Napi::CallbackInfo& info, size_t i) {
  if (info[i].IsUndefined() || info[i].IsNull()) return std::string();
  return ArgString(info, i, "netns");
}

// Moves `fd` to the lowest free number >= kHighFd (or the highest the limit allows).
UniqueFd MoveHigh(Napi::Env env, UniqueFd fd) {
  struct rlimit rl {};
  int floor = kHighFd;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      static_cast<rlim_t>(floor) >= rl.rlim_cur) {
    floor = static_cast<int>(rl.rlim_cur) - 16;
  }
  if (floor <= fd.Get()) return fd;
  int high = fcntl(fd.Get(), F_DUPFD_CLOEXEC, floor);
  if (high < 0) return fd;  // keep the low one: only the order at exit is lost
  return UniqueFd(high);
}

// openTun(name, netns?) -> { fd, name }: a non-persistent TUN device (IFF_TUN | IFF_NO_PI)
// created in `netns`. EBUSY when a device of that name is in use by another process.
Napi::Value OpenTun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = ArgString(info, 0, "name");
  if (name.empty() || name.size() >= IFNAMSIZ) ThrowType(env, "openTun: bad device name");
  std::string netns = OptNetns(info, 1);
  UniqueFd fd;
  {
    // The device is created in the namespace of the file's socket, i.e. where it is opened.
    NetnsGuard guard(env, netns);
    fd.Reset(open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK));
    if (!fd.Valid()) ThrowErrno(env, errno, "open", "/dev/net/tun");
    struct ifreq ifr {};
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd.Get(), TUNSETIFF, &ifr) != 0) ThrowErrno(env, errno, "ioctl TUNSETIFF", name);
    // A persistent device of that name (`ip tuntap add`) would be attached to, and outlive
    // us: make it end with our descriptor, as a new one does.
    if (ioctl(fd.Get(), TUNSETPERSIST, 0) != 0) ThrowErrno(env, errno, "ioctl TUNSETPERSIST", name);
    name = ifr.ifr_name;
  }
  fd = MoveHigh(env, std::move(fd));
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", name);
  out.Set("fd", fd.Release());
  return out;
}

// udpSocket(family 4|6, address, port, netns?) -> fd: a UDP socket bound to address:port in
// `netns` (port 0: the kernel picks one), non-blocking, close-on-exec, SO_REUSEADDR.
Napi::Value UdpSocket(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t family = ArgUint(info, 0, "family");
  std::string address = ArgString(info, 1, "address");
  uint32_t port = ArgUint(info, 2, "port");
  std::string netns = OptNetns(info, 3);
  if ((family != 4 && family != 6) || port > 65535) ThrowType(env, "udpSocket: bad arguments");
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == 4) {
    auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, address.c_str(), &sa->sin_addr) != 1)
      ThrowType(env, "udpSocket: bad IPv4 address");
    len = sizeof(*sa);
  } else {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, address.c_str(), &sa->sin6_addr) != 1)
      ThrowType(env, "udpSocket: bad IPv6 address");
    len = sizeof(*sa);
  }
  UniqueFd fd;
  {
    NetnsGuard guard(env, netns);
    fd.Reset(socket(family == 4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0));
  }
  if (!fd.Valid()) ThrowErrno(env, errno, "socket", "udp");
  int one = 1;
  setsockopt(fd.Get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (family == 6) setsockopt(fd.Get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(fd.Get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    ThrowErrno(env, errno, "bind", address + " port " + std::to_string(port));
  }
  return Napi::Number::New(env, fd.Release());
}

// attachTcx(progFd, ifindex, 'ingress' | 'egress', netns?) -> link fd.
Napi::Value AttachTcx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int prog = ArgFd(info, 0, "prog");
  uint32_t ifindex = ArgUint(info, 1, "ifindex");
  std::string dir = ArgString(info, 2, "direction");
  std::string netns = OptNetns(info, 3);
  if (dir != "ingress" && dir != "egress") ThrowType(env, "attachTcx: ingress or egress");
  int type = dir == "ingress" ? BPF_TCX_INGRESS_VALUE : BPF_TCX_EGRESS_VALUE;
  int link;
  {
    NetnsGuard guard(env, netns);  // the ifindex is resolved in the calling thread's namespace
    link = bpf_link_create(prog, static_cast<int>(ifindex), static_cast<bpf_attach_type>(type),
                           nullptr);
  }
  if (link < 0) ThrowLibbpf(env, link, "bpf_link_create", "tcx " + dir);
  // libbpf sets O_CLOEXEC on the descriptors it returns.
  return Napi::Number::New(env, link);
}

}  // namespace

void InitClusterIo(Napi::Env env, Napi::Object exports) {
  exports.Set("openTun", Napi::Function::New(env, OpenTun, "openTun"));
  exports.Set("udpSocket", Napi::Function::New(env, UdpSocket, "udpSocket"));
  exports.Set("attachTcx", Napi::Function::New(env, AttachTcx, "attachTcx"));
}

}  // namespace fk
