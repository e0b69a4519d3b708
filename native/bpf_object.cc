// BpfObject: a BPF ELF object opened and loaded through libbpf. Before load the caller sets
// rodata variables, map pin paths, reused maps and map sizes; after load it takes programs
// and maps out as independent BpfProgram/BpfMap objects (each with a dup of the fd).
#include <bpf/btf.h>

#include <cstring>
#include <memory>
#include <vector>

#include "bpf.h"
#include "errors.h"

namespace fk {
namespace {

constexpr uint32_t kDefaultLogBytes = 4 * 1024 * 1024;

struct ObjectCloser {
  void operator()(bpf_object* obj) const {
    QuietLibbpf quiet;  // may run in a finalizer: no JS from libbpf's print callback
    bpf_object__close(obj);
  }
};

struct RodataVar {
  std::string name;
  std::string section;
  uint32_t offset;
  uint32_t size;
};

// The names of an object's programs or maps: `next` walks them, `name` names one.
template <typename Item, typename Prev>
Napi::Array Names(Napi::Env env, const bpf_object* obj, Item* (*next)(const bpf_object*, Prev*),
                  const char* (*name)(const Item*)) {
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  for (Item* it = next(obj, nullptr); it != nullptr; it = next(obj, it)) out.Set(n++, name(it));
  return out;
}

class BpfObject : public Napi::ObjectWrap<BpfObject> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "BpfObject",
                       {
                           InstanceAccessor<&BpfObject::GetLoaded>("loaded"),
                           InstanceMethod<&BpfObject::ProgramNames>("programNames"),
                           InstanceMethod<&BpfObject::MapNames>("mapNames"),
                           InstanceMethod<&BpfObject::RodataVariables>("rodataVariables"),
                           InstanceMethod<&BpfObject::SetRodata>("setRodata"),
                           InstanceMethod<&BpfObject::SetMapPinPath>("setMapPinPath"),
                           InstanceMethod<&BpfObject::ReuseMap>("reuseMap"),
                           InstanceMethod<&BpfObject::SetMaxEntries>("setMaxEntries"),
                           InstanceMethod<&BpfObject::Load>("load"),
                           InstanceMethod<&BpfObject::Program>("program"),
                           InstanceMethod<&BpfObject::Map>("map"),
                           InstanceMethod<&BpfObject::Close>("close"),
                       });
  }

  // new BpfObject(path, {logSize?, logLevel?, pinRoot?})
  explicit BpfObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BpfObject>(info) {
    Napi::Env env = info.Env();
    std::string path = ArgString(info, 0, "path");
    Napi::Object o = info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
    log_.assign(OptUint(o, "logSize", kDefaultLogBytes), '\0');
    pin_root_ = o.Has("pinRoot") && o.Get("pinRoot").IsString()
                    ? o.Get("pinRoot").As<Napi::String>().Utf8Value()
                    : std::string();
    bpf_object_open_opts opts;
    InitOpts(&opts);
    opts.kernel_log_buf = log_.data();
    opts.kernel_log_size = log_.size();
    opts.kernel_log_level = OptUint(o, "logLevel", 0);
    if (!pin_root_.empty()) opts.pin_root_path = pin_root_.c_str();
    bpf_object* obj = bpf_object__open_file(path.c_str(), &opts);
    if (obj == nullptr) ThrowErrno(env, errno, "bpf_object__open_file", path);
    obj_.reset(obj);
    path_ = path;
  }

 private:
  bpf_object* Obj(Napi::Env env) {
    if (!obj_) ThrowErrno(env, EBADF, "BpfObject", "is closed");
    return obj_.get();
  }

  bpf_object* Unloaded(Napi::Env env, const char* what) {
    bpf_object* obj = Obj(env);
    if (loaded_ || load_failed_) ThrowErrno(env, EBUSY, what, "object is already loaded");
    return obj;
  }

  bpf_map* FindMap(Napi::Env env, bpf_object* obj, const std::string& name) {
    bpf_map* map = bpf_object__find_map_by_name(obj, name.c_str());
    if (map == nullptr) ThrowErrno(env, ENOENT, "bpf_object__find_map_by_name", name);
    return map;
  }

  Napi::Value GetLoaded(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), loaded_);
  }

  Napi::Value ProgramNames(const Napi::CallbackInfo& info) {
    return Names(info.Env(), Obj(info.Env()), bpf_object__next_program, bpf_program__name);
  }

  Napi::Value MapNames(const Napi::CallbackInfo& info) {
    return Names(info.Env(), Obj(info.Env()), bpf_object__next_map, bpf_map__name);
  }

  // Every variable of every .rodata* data section of the object's BTF.
  std::vector<RodataVar> Variables(Napi::Env env) {
    const btf* b = bpf_object__btf(Obj(env));
    std::vector<RodataVar> out;
    if (b == nullptr) return out;
    for (__u32 id = 1; id < btf__type_cnt(b); id++) {
      const btf_type* t = btf__type_by_id(b, id);
      if (!btf_is_datasec(t)) continue;
      std::string section = btf__name_by_offset(b, t->name_off);
      if (section.rfind(".rodata", 0) != 0) continue;
      const btf_var_secinfo* vsi = btf_var_secinfos(t);
      for (__u16 i = 0; i < btf_vlen(t); i++, vsi++) {
        const btf_type* var = btf__type_by_id(b, vsi->type);
        if (var == nullptr || !btf_is_var(var)) continue;
        out.push_back({btf__name_by_offset(b, var->name_off), section, vsi->offset, vsi->size});
      }
    }
    return out;
  }

  // rodataVariables(): [{name, section, offset, size}]
  Napi::Value RodataVariables(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    uint32_t n = 0;
    for (const RodataVar& v : Variables(env)) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", v.name);
      o.Set("section", v.section);
      o.Set("offset", v.offset);
      o.Set("size", v.size);
      out.Set(n++, o);
    }
    return out;
  }

  // setRodata(name, bytes): the initial value of a `const volatile` variable, before load.
  Napi::Value SetRodata(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    bpf_object* obj = Unloaded(env, "setRodata");
    std::string name = ArgString(info, 0, "name");
    auto bytes = ArgBuffer(info, 1, "bytes");
    for (const RodataVar& v : Variables(env)) {
      if (v.name != name) continue;
      if (bytes.Length() != v.size) {
        ThrowErrno(env, EINVAL, "setRodata",
                   name + " is " + std::to_string(v.size) + " bytes, got " +
                       std::to_string(bytes.Length()));
      }
      bpf_map* map = FindMap(env, obj, v.section);
      size_t size = 0;
      const void* initial = bpf_map__initial_value(map, &size);
      if (initial == nullptr || v.offset + v.size > size) {
        ThrowErrno(env, EINVAL, "setRodata", name + " lies outside " + v.section);
      }
      std::vector<uint8_t> data(static_cast<const uint8_t*>(initial),
                                static_cast<const uint8_t*>(initial) + size);
      std::memcpy(data.data() + v.offset, bytes.Data(), v.size);
      int rc = bpf_map__set_initial_value(map, data.data(), data.size());
      if (rc != 0) ThrowLibbpf(env, rc, "bpf_map__set_initial_value", v.section);
      return env.Undefined();
    }
    ThrowErrno(env, ENOENT, "setRodata", "no const volatile variable " + name);
  }

  // Runs `set(map)`, a libbpf call `fn` that returns 0 or a negative errno, on the map named
  // by argument 0, before load. Its error names `context`, or the map when that is empty.
  template <typename Set>
  Napi::Value SetOnMap(const Napi::CallbackInfo& info, const char* method, const char* fn,
                       const std::string& context, Set set) {
    Napi::Env env = info.Env();
    std::string name = ArgString(info, 0, "map");
    int rc = set(FindMap(env, Unloaded(env, method), name));
    if (rc != 0) ThrowLibbpf(env, rc, fn, context.empty() ? name : context);
    return env.Undefined();
  }

  // setMapPinPath(name, path): the map is pinned at `path` (and reused if pinned there).
  Napi::Value SetMapPinPath(const Napi::CallbackInfo& info) {
    std::string path = ArgString(info, 1, "path");
    return SetOnMap(info, "setMapPinPath", "bpf_map__set_pin_path", path,
                    [&](bpf_map* map) { return bpf_map__set_pin_path(map, path.c_str()); });
  }

  // reuseMap(name, mapFd): the object uses this existing map instead of creating one.
  Napi::Value ReuseMap(const Napi::CallbackInfo& info) {
    return SetOnMap(info, "reuseMap", "bpf_map__reuse_fd", "",
                    [&](bpf_map* map) { return bpf_map__reuse_fd(map, ArgFd(info, 1, "mapFd")); });
  }

  // setMaxEntries(name, maxEntries)
  Napi::Value SetMaxEntries(const Napi::CallbackInfo& info) {
    return SetOnMap(info, "setMaxEntries", "bpf_map__set_max_entries", "", [&](bpf_map* map) {
      return bpf_map__set_max_entries(map, ArgUint(info, 1, "maxEntries"));
    });
  }

  // load(): on failure the error carries the kernel's verifier log in `verifierLog`.
  Napi::Value Load(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    bpf_object* obj = Unloaded(env, "bpf_object__load");
    log_[0] = '\0';
    int rc = bpf_object__load(obj);
    if (rc != 0) {
      load_failed_ = true;
      Napi::Error error = ErrnoError(env, -rc, "bpf_object__load", path_);
      log_.back() = '\0';
      error.Set("verifierLog", std::string(log_.data()));
      throw error;
    }
    loaded_ = true;
    return env.Undefined();
  }

  bpf_object* Loaded(Napi::Env env, const char* what) {
    bpf_object* obj = Obj(env);
    if (!loaded_) ThrowErrno(env, EINVAL, what, "object is not loaded");
    return obj;
  }

  Napi::Value Program(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    bpf_object* obj = Loaded(env, "program");
    std::string name = ArgString(info, 0, "name");
    bpf_program* prog = bpf_object__find_program_by_name(obj, name.c_str());
    if (prog == nullptr) ThrowErrno(env, ENOENT, "bpf_object__find_program_by_name", name);
    int fd = bpf_program__fd(prog);
    if (fd < 0) ThrowErrno(env, ENOENT, "bpf_program__fd", name + " was not loaded");
    return NewFdObject(env, BpfKind::kProgram, DupFd(env, fd));
  }

  Napi::Value Map(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    bpf_object* obj = Loaded(env, "map");
    std::string name = ArgString(info, 0, "name");
    int fd = bpf_map__fd(FindMap(env, obj, name));
    if (fd < 0) ThrowErrno(env, ENOENT, "bpf_map__fd", name + " was not created");
    return NewFdObject(env, BpfKind::kMap, DupFd(env, fd));
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    obj_.reset();
    return info.Env().Undefined();
  }

  std::unique_ptr<bpf_object, ObjectCloser> obj_;
  std::vector<char> log_;  // libbpf writes verifier logs here (not through the print callback)
  std::string pin_root_;
  std::string path_;
  bool loaded_ = false;
  bool load_failed_ = false;
};

}  // namespace

void InitBpfObject(Napi::Env env, Napi::Object exports) {
  exports.Set("BpfObject", BpfObject::Define(env));
}

}  // namespace fk
