// What the node configured that acts on forwarded traffic and that no netlink family shows:
// BPF programs on a device's tcx hooks (bpf_mprog, Linux 6.6+; bpf(BPF_PROG_QUERY)) and the
// legacy iptables / ip6tables tables (getsockopt IPT_SO_GET_INFO / IPT_SO_GET_ENTRIES on a raw
// socket; the entries are parsed in TypeScript). Both take an optional netns, entered for the
// call.
// glibc's netinet/in.h first: linux/libc-compat.h then leaves its definitions alone
#include <netinet/in.h>
#include <sys/socket.h>
// clang-format off
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
// clang-format on

#include <cerrno>
#include <cstring>
#include <vector>

#include "bpf.h"
#include "errors.h"
#include "fd.h"
#include "netns.h"

namespace fk {
namespace {

// enum bpf_attach_type values of Linux 6.6 (newer than this system's UAPI headers).
constexpr int kTcxIngress = 46;
constexpr int kTcxEgress = 47;

std::string OptNetns(const Napi::CallbackInfo& info, size_t i) {
  if (info[i].IsUndefined() || info[i].IsNull()) return std::string();
  return ArgString(info, i, "netns");
}

// tcxQuery(ifindex, egress: boolean, netns?): the ids of the programs on the device's tcx
// ingress (or egress) hook, in run order; null when this kernel has no tcx (EINVAL).
Napi::Value TcxQuery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t ifindex = ArgUint(info, 0, "ifindex");
  if (!info[1].IsBoolean()) ThrowType(env, "egress must be a boolean");
  int type = info[1].As<Napi::Boolean>().Value() ? kTcxEgress : kTcxIngress;
  std::vector<__u32> ids(64);
  struct bpf_prog_query_opts opts;
  InitOpts(&opts);
  opts.prog_ids = ids.data();
  opts.prog_cnt = static_cast<__u32>(ids.size());
  {
    NetnsGuard netns(env, OptNetns(info, 2));
    int rc = bpf_prog_query_opts(static_cast<int>(ifindex), static_cast<bpf_attach_type>(type),
                                 &opts);
    if (rc != 0) {
      int err = rc < 0 ? -rc : errno;
      if (err == EINVAL) return env.Null();
      ThrowErrno(env, err, "bpf_prog_query", "tcx ifindex " + std::to_string(ifindex));
    }
  }
  Napi::Array out = Napi::Array::New(env);
  for (uint32_t i = 0; i < opts.prog_cnt && i < ids.size(); i++) out.Set(i, ids[i]);
  return out;
}

// iptablesTable(family 4|6, name, netns?, entries?): {info, entries} of a legacy table that
// exists (the caller reads /proc/net/ip_tables_names first: asking for a table creates it),
// as the kernel's struct ipt_getinfo and, when `entries` is true, the entries after struct
// ipt_get_entries (else an empty buffer); null when the table does not exist (ENOENT).
Napi::Value IptablesTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t family = ArgUint(info, 0, "family");
  std::string name = ArgString(info, 1, "name");
  if (family != 4 && family != 6) ThrowType(env, "family must be 4 or 6");
  if (name.empty() || name.size() >= XT_TABLE_MAXNAMELEN) ThrowType(env, "bad table name");
  const int level = family == 4 ? IPPROTO_IP : IPPROTO_IPV6;
  static_assert(sizeof(ipt_getinfo) == sizeof(ip6t_getinfo), "getinfo");
  static_assert(sizeof(ipt_get_entries) == sizeof(ip6t_get_entries), "get_entries");
  static_assert(IPT_SO_GET_INFO == IP6T_SO_GET_INFO, "get_info");
  static_assert(IPT_SO_GET_ENTRIES == IP6T_SO_GET_ENTRIES, "get_entries");
  const bool want_entries = info[3].IsBoolean() && info[3].As<Napi::Boolean>().Value();
  NetnsGuard netns(env, OptNetns(info, 2));
  UniqueFd fd(socket(family == 4 ? AF_INET : AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
  if (!fd.Valid()) ThrowErrno(env, errno, "socket", "raw");
  for (int attempt = 0; attempt < 5; attempt++) {
    ipt_getinfo gi{};
    std::strncpy(gi.name, name.c_str(), sizeof(gi.name) - 1);
    socklen_t len = sizeof(gi);
    if (getsockopt(fd.Get(), level, IPT_SO_GET_INFO, &gi, &len) != 0) {
      if (errno == ENOENT) return env.Null();
      ThrowErrno(env, errno, "getsockopt", "IPT_SO_GET_INFO " + name);
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("info", Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<uint8_t*>(&gi), sizeof(gi)));
    if (!want_entries) {
      out.Set("entries", Napi::Buffer<uint8_t>::New(env, 0));
      return out;
    }
    std::vector<uint8_t> buf(sizeof(ipt_get_entries) + gi.size);
    auto* ge = reinterpret_cast<ipt_get_entries*>(buf.data());
    std::strncpy(ge->name, name.c_str(), sizeof(ge->name) - 1);
    ge->size = gi.size;
    len = static_cast<socklen_t>(buf.size());
    if (getsockopt(fd.Get(), level, IPT_SO_GET_ENTRIES, buf.data(), &len) != 0) {
      if (errno == EAGAIN) continue;  // replaced meanwhile: its size changed
      if (errno == ENOENT) return env.Null();
      ThrowErrno(env, errno, "getsockopt", "IPT_SO_GET_ENTRIES " + name);
    }
    out.Set("entries", Napi::Buffer<uint8_t>::Copy(env, buf.data() + sizeof(ipt_get_entries),
                                                    gi.size));
    return out;
  }
  ThrowErrno(env, EAGAIN, "getsockopt", "IPT_SO_GET_ENTRIES " + name + ": kept changing");
}

}  // namespace

void InitNodePolicy(Napi::Env env, Napi::Object exports) {
  exports.Set("tcxQuery", Napi::Function::New(env, TcxQuery, "tcxQuery"));
  exports.Set("iptablesTable", Napi::Function::New(env, IptablesTable, "iptablesTable"));
}

}  // namespace fk
