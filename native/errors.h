// The one way the addon reports a failed system call or libbpf call: a JS Error with
// `code` (errno name, "ENOBUFS"), `errno` (positive number) and `syscall`.
#pragma once

#include <napi.h>

#include <string>

namespace fk {

// Builds the error for `err` (a positive errno value) raised by `syscall`. `context` (a
// path, a name) is appended to the message when not empty.
Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall,
                       const std::string& context = std::string());

// Throws ErrnoError as a C++ exception (the addon is built with NAPI_CPP_EXCEPTIONS).
[[noreturn]] void ThrowErrno(Napi::Env env, int err, const char* syscall,
                             const std::string& context = std::string());

// libbpf returns negative errno values (and NULL pointers with errno set): `ret` is the
// negative return value, or 0 to use errno.
[[noreturn]] void ThrowLibbpf(Napi::Env env, long ret, const char* fn,
                              const std::string& context = std::string());

// A bad argument that the TypeScript wrapper should have caught: a TypeError.
[[noreturn]] void ThrowType(Napi::Env env, const std::string& message);

// The errno name ("ENOBUFS"), or "E<number>" for an unknown value.
std::string ErrnoName(int err);

}  // namespace fk
