// BpfLink (XDP links over bpf_link_create) and the legacy netlink XDP attach/detach/query.
// Every call that names an ifindex takes an optional netns: the ifindex is resolved in the
// calling thread's namespace, which the call enters for its duration.
#include <linux/bpf.h>
#include <linux/if_link.h>

#include "bpf.h"
#include "bpf_fd_object.h"
#include "errors.h"
#include "netns.h"

namespace fk {
namespace {

std::string OptNetns(const Napi::CallbackInfo& info, size_t i) {
  if (info[i].IsUndefined() || info[i].IsNull()) return std::string();
  return ArgString(info, i, "netns");
}

// An optional program fd: -1 when absent.
int OptProgFd(const Napi::CallbackInfo& info, size_t i) {
  return info[i].IsNumber() ? info[i].As<Napi::Number>().Int32Value() : -1;
}

Napi::Object LinkInfoObject(Napi::Env env, const bpf_link_info& li) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", li.id);
  out.Set("progId", li.prog_id);
  out.Set("type", li.type);
  const char* name = libbpf_bpf_link_type_str(static_cast<bpf_link_type>(li.type));
  out.Set("typeName", name != nullptr ? name : "unknown");
  if (li.type == BPF_LINK_TYPE_XDP) out.Set("ifindex", li.xdp.ifindex);
  return out;
}

class BpfLink : public BpfFdObject<BpfLink> {
 public:
  static constexpr BpfKind kKind = BpfKind::kLink;

  static void Init(Napi::Env env, Napi::Object exports) {
    Export(env, exports,
           {
               InstanceMethod<&BpfLink::Info>("info"),
               InstanceMethod<&BpfLink::Update>("update"),
               InstanceMethod<&BpfLink::Detach>("detach"),
               StaticMethod<&BpfLink::AttachXdp>("attachXdp"),
               StaticMethod<&BpfLink::AttachRawTracepoint>("attachRawTracepoint"),
           });
  }

  explicit BpfLink(const Napi::CallbackInfo& info) : BpfFdObject(info) {}

 private:
  // info(): {id, progId, type, typeName, ifindex (XDP links; 0 once detached)}
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return LinkInfoObject(env, GetInfo<bpf_link_info>(env, Fd(env)));
  }

  // update(newProgFd, oldProgFd | -1): atomic program replacement (bpf_link_update); with
  // oldProgFd, only if that program is the one attached (BPF_F_REPLACE), else EPERM.
  Napi::Value Update(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = Fd(env);
    int new_prog = ArgFd(info, 0, "newProg");
    int old_prog = OptProgFd(info, 1);
    bpf_link_update_opts opts;
    InitOpts(&opts);
    if (old_prog >= 0) {
      opts.flags = BPF_F_REPLACE;
      opts.old_prog_fd = static_cast<__u32>(old_prog);
    }
    int rc = bpf_link_update(fd, new_prog, &opts);
    if (rc != 0) ThrowLibbpf(env, rc, "bpf_link_update");
    return env.Undefined();
  }

  // detach(): BPF_LINK_DETACH; the link stays (defunct) until closed and unpinned.
  Napi::Value Detach(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int rc = bpf_link_detach(Fd(env));
    if (rc != 0) ThrowLibbpf(env, rc, "bpf_link_detach");
    return env.Undefined();
  }

  // attachXdp(progFd, ifindex, xdpFlags, netns?): bpf_link_create(BPF_XDP).
  static Napi::Value AttachXdp(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int prog = ArgFd(info, 0, "prog");
    uint32_t ifindex = ArgUint(info, 1, "ifindex");
    bpf_link_create_opts opts;
    InitOpts(&opts);
    opts.flags = ArgUint(info, 2, "flags");
    UniqueFd fd;
    {
      NetnsGuard netns(env, OptNetns(info, 3));
      fd.Reset(bpf_link_create(prog, static_cast<int>(ifindex), BPF_XDP, &opts));
      if (!fd.Valid())
        ThrowErrno(env, errno, "bpf_link_create", "xdp ifindex " + std::to_string(ifindex));
    }
    return NewFdObject(env, kKind, std::move(fd));
  }

  // attachRawTracepoint(progFd, name): bpf_raw_tracepoint_open (a raw_tp link, kernel 5.7+).
  static Napi::Value AttachRawTracepoint(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int prog = ArgFd(info, 0, "prog");
    std::string name = ArgString(info, 1, "name");
    UniqueFd fd(bpf_raw_tracepoint_open(name.c_str(), prog));
    if (!fd.Valid()) ThrowErrno(env, errno, "bpf_raw_tracepoint_open", name);
    return NewFdObject(env, kKind, std::move(fd));
  }
};

// The legacy (netlink) XDP attach of `prog` to `ifindex` in `netns` (bpf_xdp_attach), or the
// detach when `prog` is -1 (bpf_xdp_detach). With `expected` (a program fd, or -1), only if
// that program is the one attached (XDP_FLAGS_REPLACE).
void XdpLegacy(Napi::Env env, uint32_t ifindex, int prog, uint32_t flags, int expected,
               const std::string& netns) {
  bpf_xdp_attach_opts opts;
  InitOpts(&opts);
  if (expected >= 0) {
    flags |= XDP_FLAGS_REPLACE;
    opts.old_prog_fd = expected;
  }
  NetnsGuard guard(env, netns);
  int index = static_cast<int>(ifindex);
  int rc =
      prog >= 0 ? bpf_xdp_attach(index, prog, flags, &opts) : bpf_xdp_detach(index, flags, &opts);
  if (rc != 0) {
    ThrowLibbpf(env, rc, prog >= 0 ? "bpf_xdp_attach" : "bpf_xdp_detach",
                "ifindex " + std::to_string(ifindex));
  }
}

// xdpAttachLegacy(ifindex, progFd, flags, oldProgFd | -1, netns?): bpf_xdp_attach;
// with oldProgFd, XDP_FLAGS_REPLACE is added.
Napi::Value XdpAttachLegacy(const Napi::CallbackInfo& info) {
  uint32_t ifindex = ArgUint(info, 0, "ifindex");
  int prog = ArgFd(info, 1, "prog");
  uint32_t flags = ArgUint(info, 2, "flags");
  XdpLegacy(info.Env(), ifindex, prog, flags, OptProgFd(info, 3), OptNetns(info, 4));
  return info.Env().Undefined();
}

// xdpDetachLegacy(ifindex, flags, expectedProgFd | -1, netns?): bpf_xdp_detach; with
// expectedProgFd, only if that program is attached (XDP_FLAGS_REPLACE).
Napi::Value XdpDetachLegacy(const Napi::CallbackInfo& info) {
  uint32_t ifindex = ArgUint(info, 0, "ifindex");
  uint32_t flags = ArgUint(info, 1, "flags");
  XdpLegacy(info.Env(), ifindex, -1, flags, OptProgFd(info, 2), OptNetns(info, 3));
  return info.Env().Undefined();
}

// xdpQuery(ifindex, netns?): {attachMode, progId, drvProgId, skbProgId, hwProgId}
Napi::Value XdpQuery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t ifindex = ArgUint(info, 0, "ifindex");
  bpf_xdp_query_opts opts;
  InitOpts(&opts);
  {
    NetnsGuard netns(env, OptNetns(info, 1));
    int rc = bpf_xdp_query(static_cast<int>(ifindex), 0, &opts);
    if (rc != 0) ThrowLibbpf(env, rc, "bpf_xdp_query", "ifindex " + std::to_string(ifindex));
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("attachMode", opts.attach_mode);
  out.Set("progId", opts.prog_id);
  out.Set("drvProgId", opts.drv_prog_id);
  out.Set("skbProgId", opts.skb_prog_id);
  out.Set("hwProgId", opts.hw_prog_id);
  return out;
}

// xdpLinks(): info of every XDP bpf_link on the system (bpf_link_get_next_id walk). Links
// that vanish during the walk are skipped.
Napi::Value XdpLinks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  __u32 id = 0;
  uint32_t n = 0;
  for (;;) {
    if (bpf_link_get_next_id(id, &id) != 0) {
      if (errno == ENOENT) break;
      ThrowErrno(env, errno, "bpf_link_get_next_id");
    }
    UniqueFd fd(bpf_link_get_fd_by_id(id));
    if (!fd.Valid()) {
      if (errno == ENOENT) continue;
      ThrowErrno(env, errno, "bpf_link_get_fd_by_id", std::to_string(id));
    }
    bpf_link_info li{};
    __u32 len = sizeof(li);
    if (bpf_obj_get_info_by_fd(fd.Get(), &li, &len) != 0) continue;
    if (li.type == BPF_LINK_TYPE_XDP) out.Set(n++, LinkInfoObject(env, li));
  }
  return out;
}

}  // namespace

void InitBpfLink(Napi::Env env, Napi::Object exports) {
  BpfLink::Init(env, exports);
  exports.Set("xdpAttachLegacy", Napi::Function::New(env, XdpAttachLegacy, "xdpAttachLegacy"));
  exports.Set("xdpDetachLegacy", Napi::Function::New(env, XdpDetachLegacy, "xdpDetachLegacy"));
  exports.Set("xdpQuery", Napi::Function::New(env, XdpQuery, "xdpQuery"));
  exports.Set("xdpLinks", Napi::Function::New(env, XdpLinks, "xdpLinks"));
}

}  // namespace fk
