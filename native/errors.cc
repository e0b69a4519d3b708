#include "errors.h"

#include <string.h>

namespace fk {

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  if (name != nullptr) return name;
  return "E" + std::to_string(err);
}

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& context) {
  if (err <= 0) err = EIO;  // never report "success" as an error
  std::string code = ErrnoName(err);
  std::string message = syscall;
  if (!context.empty()) message += " " + context;
  message += ": " + code + " (" + strerror(err) + ")";
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  error.Set("errno", Napi::Number::New(env, err));
  error.Set("syscall", Napi::String::New(env, syscall));
  return error;
}

void ThrowErrno(Napi::Env env, int err, const char* syscall, const std::string& context) {
  throw ErrnoError(env, err, syscall, context);
}

void ThrowLibbpf(Napi::Env env, long ret, const char* fn, const std::string& context) {
  int err = ret < 0 ? static_cast<int>(-ret) : errno;
  ThrowErrno(env, err, fn, context);
}

void ThrowType(Napi::Env env, const std::string& message) {
  throw Napi::TypeError::New(env, message);
}

}  // namespace fk
