// System-wide BPF helpers: libbpf's print callback routed to a JS logger, feature probes,
// type and helper names, possible CPUs, vmlinux BTF.
#include <linux/bpf.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <thread>
#include <vector>

#include "bpf.h"
#include "errors.h"

namespace fk {
namespace {

// The logger is process-wide because libbpf's print callback is; it is only ever called on
// the thread (and environment) that installed it.
struct LoggerState {
  napi_env env = nullptr;
  Napi::FunctionReference fn;
  std::thread::id thread;
  int quiet = 0;
};
// Never destroyed: a static FunctionReference must not outlive the environment at exit.
LoggerState& g_logger = *new LoggerState();

int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  if (g_logger.env == nullptr || g_logger.fn.IsEmpty() || g_logger.quiet > 0 ||
      std::this_thread::get_id() != g_logger.thread) {
    return 0;  // dropped: nothing from libbpf reaches stderr
  }
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n <= 0) return 0;
  std::vector<char> text(static_cast<size_t>(n) + 1);
  vsnprintf(text.data(), text.size(), format, args);
  std::string msg(text.data(), static_cast<size_t>(n));
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  const char* name = level == LIBBPF_WARN ? "warn" : level == LIBBPF_INFO ? "info" : "debug";
  // libbpf is C: no exception may unwind through it. A logger that throws loses that
  // exception.
  try {
    Napi::Env env(g_logger.env);
    Napi::HandleScope scope(env);
    g_logger.fn.Call({Napi::String::New(env, name), Napi::String::New(env, msg)});
  } catch (...) {
  }
  return n;
}

// setLibbpfLogger(fn | null)
Napi::Value SetLibbpfLogger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info[0].IsFunction()) {
    g_logger.fn = Napi::Persistent(info[0].As<Napi::Function>());
    g_logger.env = env;
    g_logger.thread = std::this_thread::get_id();
  } else if (info[0].IsNull() || info[0].IsUndefined()) {
    g_logger.fn.Reset();
    g_logger.env = nullptr;
  } else {
    ThrowType(env, "setLibbpfLogger(fn | null)");
  }
  return env.Undefined();
}

Napi::Value PossibleCpus(const Napi::CallbackInfo& info) {
  int n = libbpf_num_possible_cpus();
  if (n <= 0) ThrowLibbpf(info.Env(), n, "libbpf_num_possible_cpus");
  return Napi::Number::New(info.Env(), n);
}

// Helper names in id order, from the UAPI header's __BPF_FUNC_MAPPER list (works for both
// the "FN(name)," and the "FN(name, id, ctx)" forms of the macro).
#define FK_HELPER_NAME(name, ...) name
#define FK_STRINGIFY(...) #__VA_ARGS__
#define FK_EXPAND_STRINGIFY(...) FK_STRINGIFY(__VA_ARGS__)
const char kHelperList[] = FK_EXPAND_STRINGIFY(__BPF_FUNC_MAPPER(FK_HELPER_NAME));

const std::vector<std::string>& HelperNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    std::string cur;
    for (const char* p = kHelperList;; p++) {
      if (*p == ',' || *p == ' ' || *p == '\0') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
        if (*p == '\0') break;
      } else {
        cur += *p;
      }
    }
    return out;
  }();
  return names;
}

template <typename E>
Napi::Array TypeNames(Napi::Env env, const char* (*to_str)(E)) {
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  for (int t = 0; t < 512; t++) {
    const char* s = to_str(static_cast<E>(t));
    if (s != nullptr) out.Set(n++, s);
  }
  return out;
}

template <typename E>
int TypeFromName(const std::string& name, const char* (*to_str)(E)) {
  for (int t = 0; t < 512; t++) {
    const char* s = to_str(static_cast<E>(t));
    if (s != nullptr && name == s) return t;
  }
  return -1;
}

Napi::Value ProgTypeNames(const Napi::CallbackInfo& info) {
  return TypeNames(info.Env(), libbpf_bpf_prog_type_str);
}

Napi::Value MapTypeNames(const Napi::CallbackInfo& info) {
  return TypeNames(info.Env(), libbpf_bpf_map_type_str);
}

Napi::Value HelperNamesJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  const auto& names = HelperNames();
  for (uint32_t i = 0; i < names.size(); i++) out.Set(i, names[i]);
  return out;
}

int ProgTypeArg(const Napi::CallbackInfo& info, size_t i) {
  std::string name = ArgString(info, i, "program type");
  int t = ProgTypeFromName(name);
  if (t < 0) ThrowErrno(info.Env(), EINVAL, "probe", "unknown program type " + name);
  return t;
}

Napi::Value ProbeResult(Napi::Env env, int rc, const char* fn, const std::string& what) {
  if (rc < 0) ThrowLibbpf(env, rc, fn, what);
  return Napi::Boolean::New(env, rc > 0);
}

// Whether programs of `type` may call helper `id`. libbpf 1.1's probe misses the verifier's
// newer wording ("program of this type cannot use helper", kernel 6.x) and then reports
// helpers as supported that are not: this probe loads `call id; r0 = 0; exit` itself and
// reads the verifier log. Any other verifier complaint (about the arguments) means the
// helper itself was accepted.
bool HelperUsable(Napi::Env env, bpf_prog_type type, int id, const std::string& helper) {
  int rc = libbpf_probe_bpf_prog_type(type, nullptr);
  if (rc < 0) ThrowLibbpf(env, rc, "libbpf_probe_bpf_prog_type", helper);
  if (rc == 0) return false;
  const bpf_insn insns[] = {
      {BPF_JMP | BPF_CALL, 0, 0, 0, id},
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  int err = 0;
  std::string log;
  UniqueFd fd = LoadRawProgram(type, insns, 3, "fk_probe", "GPL", &err, &log);
  if (fd.Valid()) return true;
  if (log.find("invalid func ") != std::string::npos ||
      log.find("unknown func ") != std::string::npos ||
      log.find("cannot use helper") != std::string::npos) {
    return false;
  }
  if (log.empty()) ThrowErrno(env, err, "bpf_prog_load", "probe of helper " + helper);
  return true;
}

// probeProgType(name) / probeMapType(name) / probeHelper(progType, helper): true when
// supported, false when not; throws when the probe itself failed (inconclusive).
Napi::Value ProbeProgType(const Napi::CallbackInfo& info) {
  int t = ProgTypeArg(info, 0);
  return ProbeResult(info.Env(), libbpf_probe_bpf_prog_type(static_cast<bpf_prog_type>(t), nullptr),
                     "libbpf_probe_bpf_prog_type", info[0].As<Napi::String>().Utf8Value());
}

Napi::Value ProbeMapType(const Napi::CallbackInfo& info) {
  std::string name = ArgString(info, 0, "map type");
  int t = MapTypeFromName(name);
  if (t < 0) ThrowErrno(info.Env(), EINVAL, "probe", "unknown map type " + name);
  return ProbeResult(info.Env(), libbpf_probe_bpf_map_type(static_cast<bpf_map_type>(t), nullptr),
                     "libbpf_probe_bpf_map_type", name);
}

Napi::Value ProbeHelper(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int t = ProgTypeArg(info, 0);
  std::string helper = ArgString(info, 1, "helper");
  const auto& names = HelperNames();
  int id = -1;
  for (size_t i = 0; i < names.size(); i++) {
    if (names[i] == helper) id = static_cast<int>(i);
  }
  if (id <= 0) ThrowErrno(env, EINVAL, "probe", "unknown helper " + helper);
  return Napi::Boolean::New(env, HelperUsable(env, static_cast<bpf_prog_type>(t), id, helper));
}

Napi::Value BtfVmlinux(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), access("/sys/kernel/btf/vmlinux", R_OK) == 0);
}

}  // namespace

int ProgTypeFromName(const std::string& name) {
  return TypeFromName(name, libbpf_bpf_prog_type_str);
}

int MapTypeFromName(const std::string& name) { return TypeFromName(name, libbpf_bpf_map_type_str); }

uint32_t OptUint(const Napi::Object& obj, const char* key, uint32_t def) {
  Napi::Value v = obj.Get(key);
  if (v.IsUndefined()) return def;
  if (!v.IsNumber()) ThrowType(obj.Env(), std::string(key) + " must be a number");
  return v.As<Napi::Number>().Uint32Value();
}

QuietLibbpf::QuietLibbpf() { g_logger.quiet++; }
QuietLibbpf::~QuietLibbpf() { g_logger.quiet--; }

void InitBpfSystem(Napi::Env env, Napi::Object exports) {
  libbpf_set_print(LibbpfPrint);  // from now on libbpf never writes to stderr itself
  env.AddCleanupHook([env] {
    if (g_logger.env == env) {
      g_logger.fn.Reset();
      g_logger.env = nullptr;
    }
  });
  exports.Set("setLibbpfLogger", Napi::Function::New(env, SetLibbpfLogger, "setLibbpfLogger"));
  exports.Set("possibleCpus", Napi::Function::New(env, PossibleCpus, "possibleCpus"));
  exports.Set("progTypeNames", Napi::Function::New(env, ProgTypeNames, "progTypeNames"));
  exports.Set("mapTypeNames", Napi::Function::New(env, MapTypeNames, "mapTypeNames"));
  exports.Set("helperNames", Napi::Function::New(env, HelperNamesJs, "helperNames"));
  exports.Set("probeProgType", Napi::Function::New(env, ProbeProgType, "probeProgType"));
  exports.Set("probeMapType", Napi::Function::New(env, ProbeMapType, "probeMapType"));
  exports.Set("probeHelper", Napi::Function::New(env, ProbeHelper, "probeHelper"));
  exports.Set("btfVmlinux", Napi::Function::New(env, BtfVmlinux, "btfVmlinux"));
}

}  // namespace fk
