// sd_notify(3) without libsystemd: one datagram to the AF_UNIX socket that systemd names in
// $NOTIFY_SOCKET (a path, or "@name" for an abstract socket), e.g. "READY=1\nSTATUS=...".
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "errors.h"
#include "fd.h"
#include "init.h"

namespace fk {
namespace {

// sdNotify(socket, message): sends `message` to `socket`; returns the bytes sent.
Napi::Value SdNotify(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString() || !info[1].IsString()) ThrowType(env, "sdNotify(socket, message)");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  std::string message = info[1].As<Napi::String>().Utf8Value();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() < 2 || (path[0] != '/' && path[0] != '@') || path.size() > sizeof(addr.sun_path)) {
    ThrowType(env, "NOTIFY_SOCKET must be an absolute path or @name (at most 108 bytes): " + path);
  }
  memcpy(addr.sun_path, path.data(), path.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + path.size();
  if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract: no terminating NUL counted
  else if (path.size() < sizeof(addr.sun_path)) len += 1;
  UniqueFd fd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.Valid()) ThrowErrno(env, errno, "socket", "AF_UNIX");
  ssize_t n = sendto(fd.Get(), message.data(), message.size(), MSG_NOSIGNAL,
                     reinterpret_cast<const sockaddr*>(&addr), len);
  if (n < 0) ThrowErrno(env, errno, "sendto", path);
  return Napi::Number::New(env, static_cast<double>(n));
}

}  // namespace

void InitNotify(Napi::Env env, Napi::Object exports) {
  exports.Set("sdNotify", Napi::Function::New(env, SdNotify, "sdNotify"));
}

}  // namespace fk
