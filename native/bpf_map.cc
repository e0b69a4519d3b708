// BpfMap: a BPF map, owned through its own file descriptor. Keys and values are raw bytes
// whose sizes are checked against the map; per-CPU values are laid out as the kernel wants
// them: one slot of roundup(valueSize, 8) bytes per possible CPU.
#include <linux/bpf.h>

#include <vector>

#include "bpf.h"
#include "bpf_fd_object.h"
#include "errors.h"

namespace fk {
namespace {

bool IsPerCpuType(__u32 type) {
  return type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_ARRAY ||
         type == BPF_MAP_TYPE_LRU_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE;
}

class BpfMap : public BpfFdObject<BpfMap> {
 public:
  static constexpr BpfKind kKind = BpfKind::kMap;

  static void Init(Napi::Env env, Napi::Object exports) {
    Export(env, exports,
           {
               InstanceMethod<&BpfMap::Info>("info"),
               InstanceMethod<&BpfMap::Lookup>("lookup"),
               InstanceMethod<&BpfMap::Update>("update"),
               InstanceMethod<&BpfMap::Delete>("delete"),
               InstanceMethod<&BpfMap::Keys>("keys"),
           });
  }

  explicit BpfMap(const Napi::CallbackInfo& info) : BpfFdObject(info) {
    Napi::Env env = info.Env();
    info_ = GetInfo<bpf_map_info>(env, Fd(env));
    per_cpu_ = IsPerCpuType(info_.type);
    int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) ThrowLibbpf(env, cpus, "libbpf_num_possible_cpus");
    cpus_ = static_cast<size_t>(cpus);
  }

 private:
  // Bytes of one value as the syscall sees it: all CPUs' slots for per-CPU maps.
  size_t RawValueSize() const {
    if (!per_cpu_) return info_.value_size;
    return ((static_cast<size_t>(info_.value_size) + 7) & ~static_cast<size_t>(7)) * cpus_;
  }

  const uint8_t* KeyArg(const Napi::CallbackInfo& info, size_t i) {
    auto key = ArgBuffer(info, i, "key");
    if (key.Length() != info_.key_size) {
      ThrowType(info.Env(), "key must be " + std::to_string(info_.key_size) + " bytes, got " +
                                std::to_string(key.Length()));
    }
    return key.Data();
  }

  // info(): {id, name, type, typeName, keySize, valueSize, maxEntries, flags, isPerCpu,
  //          possibleCpus}
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Fd(env);
    Napi::Object out = Napi::Object::New(env);
    out.Set("id", info_.id);
    out.Set("name", std::string(info_.name));
    out.Set("type", info_.type);
    const char* type_name = libbpf_bpf_map_type_str(static_cast<bpf_map_type>(info_.type));
    out.Set("typeName", type_name != nullptr ? type_name : "unknown");
    out.Set("keySize", info_.key_size);
    out.Set("valueSize", info_.value_size);
    out.Set("maxEntries", info_.max_entries);
    out.Set("flags", info_.map_flags);
    out.Set("isPerCpu", per_cpu_);
    out.Set("possibleCpus", static_cast<uint32_t>(cpus_));
    return out;
  }

  // lookup(key): the raw value (all CPUs' slots for per-CPU maps), or undefined if absent.
  Napi::Value Lookup(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = Fd(env);
    const uint8_t* key = KeyArg(info, 0);
    auto value = Napi::Buffer<uint8_t>::New(env, RawValueSize());
    if (bpf_map_lookup_elem(fd, key, value.Data()) != 0) {
      if (errno == ENOENT) return env.Undefined();
      ThrowErrno(env, errno, "bpf_map_lookup_elem", info_.name);
    }
    return value;
  }

  // update(key, rawValue, flags)
  Napi::Value Update(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = Fd(env);
    const uint8_t* key = KeyArg(info, 0);
    auto value = ArgBuffer(info, 1, "value");
    if (value.Length() != RawValueSize()) {
      ThrowType(env, "value must be " + std::to_string(RawValueSize()) + " bytes, got " +
                         std::to_string(value.Length()));
    }
    uint64_t flags = info[2].IsNumber() ? info[2].As<Napi::Number>().Int64Value() : 0;
    if (bpf_map_update_elem(fd, key, value.Data(), flags) != 0) {
      ThrowErrno(env, errno, "bpf_map_update_elem", info_.name);
    }
    return env.Undefined();
  }

  // delete(key): true if deleted, false if there was no such key.
  Napi::Value Delete(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = Fd(env);
    const uint8_t* key = KeyArg(info, 0);
    if (bpf_map_delete_elem(fd, key) != 0) {
      if (errno == ENOENT) return Napi::Boolean::New(env, false);
      ThrowErrno(env, errno, "bpf_map_delete_elem", info_.name);
    }
    return Napi::Boolean::New(env, true);
  }

  // keys(): every key (bpf_map_get_next_key walk), at most maxEntries of them.
  Napi::Value Keys(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = Fd(env);
    Napi::Array out = Napi::Array::New(env);
    std::vector<uint8_t> cur(info_.key_size);
    std::vector<uint8_t> next(info_.key_size);
    const void* prev = nullptr;
    for (uint32_t n = 0; n < info_.max_entries; n++) {
      if (bpf_map_get_next_key(fd, prev, next.data()) != 0) {
        if (errno == ENOENT) break;
        ThrowErrno(env, errno, "bpf_map_get_next_key", info_.name);
      }
      out.Set(n, Napi::Buffer<uint8_t>::Copy(env, next.data(), next.size()));
      cur.swap(next);
      prev = cur.data();
    }
    return out;
  }

  bpf_map_info info_{};
  bool per_cpu_ = false;
  size_t cpus_ = 1;
};

}  // namespace

void InitBpfMap(Napi::Env env, Napi::Object exports) { BpfMap::Init(env, exports); }

}  // namespace fk
