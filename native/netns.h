// Network namespaces: enter one on the calling thread for the length of a scope.
#pragma once

#include <napi.h>

#include <string>

#include "fd.h"

namespace fk {

// "/run/netns/<name>" for a bare name, the path itself when it is absolute.
std::string NetnsPath(const std::string& netns);

// Moves the calling thread into the network namespace `netns` (a name under /run/netns or
// an absolute path) and back into the original one when destroyed. An empty `netns` does
// nothing. Going back cannot fail in practice (we hold an fd of the original namespace);
// if it does, the process aborts rather than keep running in the wrong namespace.
class NetnsGuard {
 public:
  NetnsGuard(Napi::Env env, const std::string& netns);
  ~NetnsGuard();
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;

 private:
  UniqueFd saved_;
};

// The optional string property `key` of `obj` ("" when absent or undefined).
std::string OptionalString(const Napi::Object& obj, const char* key);

}  // namespace fk
