// BpfProgram: a loaded BPF program, owned through its own file descriptor.
#include <linux/bpf.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "bpf.h"
#include "bpf_fd_object.h"
#include "errors.h"

namespace fk {
namespace {

constexpr size_t kRawLogBytes = 256 * 1024;

std::string TagHex(const __u8 tag[BPF_TAG_SIZE]) {
  char out[BPF_TAG_SIZE * 2 + 1];
  for (int i = 0; i < BPF_TAG_SIZE; i++) snprintf(out + 2 * i, 3, "%02x", tag[i]);
  return out;
}

class BpfProgram : public BpfFdObject<BpfProgram> {
 public:
  static constexpr BpfKind kKind = BpfKind::kProgram;

  static void Init(Napi::Env env, Napi::Object exports) {
    Export(env, exports,
           {
               InstanceMethod<&BpfProgram::Info>("info"),
               InstanceMethod<&BpfProgram::TestRun>("testRun"),
               StaticMethod<&BpfProgram::LoadRaw>("loadRaw"),
           });
  }

  explicit BpfProgram(const Napi::CallbackInfo& info) : BpfFdObject(info) {}

 private:
  // info(): {id, name, tag, type, typeName}
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto pi = GetInfo<bpf_prog_info>(env, Fd(env));
    Napi::Object out = Napi::Object::New(env);
    out.Set("id", pi.id);
    out.Set("name", std::string(pi.name));
    out.Set("tag", TagHex(pi.tag));
    out.Set("type", pi.type);
    const char* type_name = libbpf_bpf_prog_type_str(static_cast<bpf_prog_type>(pi.type));
    out.Set("typeName", type_name != nullptr ? type_name : "unknown");
    return out;
  }

  // testRun({dataIn, ctxIn?, dataSizeOut?, repeat?, flags?, batchSize?})
  //   -> {retval, durationNs, dataOut?, ctxOut?}
  Napi::Value TestRun(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = Fd(env);
    if (!info[0].IsObject()) ThrowType(env, "testRun(options)");
    Napi::Object o = info[0].As<Napi::Object>();
    Napi::Value data_in = o.Get("dataIn");
    Napi::Value ctx_in = o.Get("ctxIn");
    if (!data_in.IsBuffer()) ThrowType(env, "dataIn must be a Buffer");
    if (!ctx_in.IsUndefined() && !ctx_in.IsBuffer()) ThrowType(env, "ctxIn must be a Buffer");
    auto data = data_in.As<Napi::Buffer<uint8_t>>();
    uint32_t flags = OptUint(o, "flags", 0);
    bool live = (flags & BPF_F_TEST_XDP_LIVE_FRAMES) != 0;

    bpf_test_run_opts opts;
    InitOpts(&opts);
    opts.data_in = data.Data();
    opts.data_size_in = static_cast<__u32>(data.Length());
    opts.repeat = static_cast<int>(OptUint(o, "repeat", 0));
    opts.flags = flags;
    opts.batch_size = OptUint(o, "batchSize", 0);
    std::vector<uint8_t> data_out;
    std::vector<uint8_t> ctx_out;
    if (!live) {  // live frames mode takes neither output buffer
      data_out.resize(OptUint(o, "dataSizeOut", static_cast<uint32_t>(data.Length()) + 256));
      opts.data_out = data_out.data();
      opts.data_size_out = static_cast<__u32>(data_out.size());
    }
    if (ctx_in.IsBuffer()) {
      auto ctx = ctx_in.As<Napi::Buffer<uint8_t>>();
      opts.ctx_in = ctx.Data();
      opts.ctx_size_in = static_cast<__u32>(ctx.Length());
      if (!live) {
        ctx_out.resize(ctx.Length());
        opts.ctx_out = ctx_out.data();
        opts.ctx_size_out = static_cast<__u32>(ctx_out.size());
      }
    }
    // The kernel abandons a repeated run with EINTR when a signal or a task-work
    // notification is pending on this thread (Node 24's libuv queues epoll_ctl through
    // io_uring, whose completions notify this way). The iterations already run did happen:
    // a program that counts has counted them. The run is started again, a bounded number
    // of times; callers that need exact side effects use repeat 1.
    int rc = -EINTR;
    for (int tries = 0; rc == -EINTR && tries < 100; tries++) {
      rc = bpf_prog_test_run_opts(fd, &opts);
    }
    if (rc != 0) ThrowLibbpf(env, rc, "bpf_prog_test_run_opts");

    Napi::Object out = Napi::Object::New(env);
    out.Set("retval", opts.retval);
    out.Set("durationNs", opts.duration);
    if (!live) {
      size_t n = std::min<size_t>(opts.data_size_out, data_out.size());
      out.Set("dataOut", Napi::Buffer<uint8_t>::Copy(env, data_out.data(), n));
      if (!ctx_out.empty()) {
        size_t c = std::min<size_t>(opts.ctx_size_out, ctx_out.size());
        out.Set("ctxOut", Napi::Buffer<uint8_t>::Copy(env, ctx_out.data(), c));
      }
    }
    return out;
  }

  // loadRaw(typeName, insns, name, license): BPF_PROG_LOAD of raw instructions (8 bytes
  // each). On failure the error carries the verifier log in `verifierLog`.
  static Napi::Value LoadRaw(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::string type_name = ArgString(info, 0, "type");
    auto insns = ArgBuffer(info, 1, "insns");
    std::string name = ArgString(info, 2, "name");
    std::string license = ArgString(info, 3, "license");
    int type = ProgTypeFromName(type_name);
    if (type < 0) ThrowErrno(env, EINVAL, "bpf_prog_load", "unknown program type " + type_name);
    if (insns.Length() == 0 || insns.Length() % sizeof(bpf_insn) != 0) {
      ThrowType(env, "insns must be a non-empty multiple of 8 bytes");
    }
    const auto* code = reinterpret_cast<const bpf_insn*>(insns.Data());
    size_t count = insns.Length() / sizeof(bpf_insn);
    int err = 0;
    std::string log;
    UniqueFd fd =
        LoadRawProgram(static_cast<bpf_prog_type>(type), code, count, name, license, &err, &log);
    if (fd.Valid()) return NewFdObject(env, kKind, std::move(fd));
    Napi::Error error = ErrnoError(env, err, "bpf_prog_load", name);
    error.Set("verifierLog", log);
    throw error;
  }
};

}  // namespace

UniqueFd LoadRawProgram(bpf_prog_type type, const bpf_insn* insns, size_t count,
                        const std::string& name, const std::string& license, int* err,
                        std::string* log) {
  UniqueFd fd(bpf_prog_load(type, name.c_str(), license.c_str(), insns, count, nullptr));
  if (fd.Valid()) return fd;
  // Load again with a verifier log to explain the failure.
  std::vector<char> buf(kRawLogBytes, '\0');
  bpf_prog_load_opts opts;
  InitOpts(&opts);
  opts.log_level = 1;
  opts.log_size = static_cast<__u32>(buf.size());
  opts.log_buf = buf.data();
  fd.Reset(bpf_prog_load(type, name.c_str(), license.c_str(), insns, count, &opts));
  if (fd.Valid()) return fd;
  *err = errno;
  buf.back() = '\0';
  *log = buf.data();
  return fd;
}

void InitBpfProgram(Napi::Env env, Napi::Object exports) { BpfProgram::Init(env, exports); }

}  // namespace fk
