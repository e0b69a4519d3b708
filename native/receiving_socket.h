// ReceivingSocket<T>: what the socket classes share. It owns the descriptor and receives on
// the libuv loop in batches: it reads datagrams until EAGAIN, an error, a full batch, or less
// than kMinRoom bytes of its buffer are left, then makes one onData call with the batch and
// then (if any) one onError call. It also gives the class `fd`, `receive`, `pause`, `ref`,
// `unref` and `close`.
//
// A socket class T derives from ReceivingSocket<T> and says what it keeps of each datagram:
//
//   static constexpr SocketNames kNames{...};
//   using Address = sockaddr_nl;  // the sender's address of a recvmsg
//   // No more datagrams fit in this batch.
//   bool BatchFull() const;
//   // Takes the datagram of `len` bytes at `data`, `offset` bytes into the batch; returns the
//   // bytes of the batch buffer it keeps (the next datagram is read behind them).
//   size_t Accept(uint8_t* data, size_t len, size_t offset, const Address& from);
//   // The arguments of onData for a batch of `used` bytes at `data` (none: nothing to
//   // deliver), and a fresh batch.
//   std::vector<napi_value> TakeBatch(Napi::Env env, const uint8_t* data, size_t used);
//   // Where its receives are in fault injection (faults.h).
//   static constexpr FaultSite kRecvSite = ...;
// and may replace ReceiveOne (one recvmsg) with its own, as NetlinkSocket does to take its
// dump lock around it.
#pragma once

#include <napi.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "faults.h"
#include "fd.h"
#include "poller.h"

namespace fk {

// The buffer one batch is read into, and the least room a recvmsg is offered (a batch ends
// when less is left). A datagram that does not fit is reported as EMSGSIZE, never cut.
constexpr size_t kBatchBytes = 256 * 1024;
constexpr size_t kMinRoom = 64 * 1024;

// One non-blocking recvmsg of one datagram into `room` bytes at `buf`, with the sender's
// address in `from` (`from_len` bytes); EINTR is retried. Returns the datagram's length, or -1
// with `*err` set: 0 when nothing is queued, else the errno (EMSGSIZE: it did not fit).
ssize_t ReceiveDatagram(int fd, uint8_t* buf, size_t room, void* from, socklen_t from_len,
                        int* err);

// ReceiveDatagram with the injected fault `fault` applied (Fault::kNone: the same). A deaf
// period reads and drops every queued datagram, then reports nothing queued.
ssize_t ReceiveWithFault(int fd, uint8_t* buf, size_t room, void* from, socklen_t from_len,
                         int* err, const Fault& fault, FaultState* state, bool netlink);

// How a socket class names itself.
struct SocketNames {
  const char* cls;            // "NetlinkSocket": the JS class
  const char* kind;           // "netlink": the syscall of "socket is closed" errors
  const char* receive_usage;  // "receive(onData, onError)": the TypeError of bad arguments
};

// A receive error after which polling the descriptor again is pointless: the descriptor is
// not (or no longer) a socket. Every other error is the socket's pending error (sk_err),
// which the recvmsg that reports it clears: the socket keeps working, and whoever reads it
// decides what the error means (an overflow, a link that went down, a dump's error).
bool IsFatalReceiveError(int err);

template <typename T>
class ReceivingSocket : public Napi::ObjectWrap<T> {
 public:
  ~ReceivingSocket() override { poller_.Close(); }

 protected:
  using Properties = std::vector<Napi::ClassPropertyDescriptor<T>>;

  explicit ReceivingSocket(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<T>(info), poller_([this](int status) { OnReadable(status); }) {}

  // Class T with the shared properties and its `own`.
  static Napi::Function DefineSocket(Napi::Env env, const Properties& own) {
    using Wrap = Napi::ObjectWrap<T>;
    Properties props = {
        Wrap::InstanceAccessor("fd", &ReceivingSocket::GetFd, nullptr),
        Wrap::InstanceMethod("receive", &ReceivingSocket::Receive),
        Wrap::InstanceMethod("pause", &ReceivingSocket::Pause),
        Wrap::InstanceMethod("queuedBytes", &ReceivingSocket::QueuedBytes),
        Wrap::InstanceMethod("ref", &ReceivingSocket::JsRef),
        Wrap::InstanceMethod("unref", &ReceivingSocket::JsUnref),
        Wrap::InstanceMethod("close", &ReceivingSocket::Close),
    };
    props.insert(props.end(), own.begin(), own.end());
    return Wrap::DefineClass(env, T::kNames.cls, props);
  }

  // Called by close() before the descriptor goes; a class with threads that use it stops them.
  void BeforeClose() {}

  // The socket owns `fd` from now on.
  void Adopt(UniqueFd fd) { fd_ = std::move(fd); }

  // The descriptor; EBADF once closed.
  int CheckOpen(Napi::Env env) {
    if (!fd_.Valid()) ThrowErrno(env, EBADF, T::kNames.kind, "socket is closed");
    return fd_.Get();
  }

  // One recvmsg of one datagram into `room` bytes at `buf` (see ReceiveDatagram), with the
  // fault injection of this socket's receives.
  template <typename Address>
  ssize_t ReceiveOne(uint8_t* buf, size_t room, Address* from, int* err) {
    Fault fault = MaybeFault(T::kRecvSite, &fault_state_);
    return ReceiveWithFault(fd_.Get(), buf, room, from, sizeof(*from), err, fault, &fault_state_,
                            T::kRecvSite == FaultSite::kNetlinkRecv);
  }

 private:
  Napi::Value GetFd(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), fd_.Get());
  }

  // receive(onData, onError): starts polling; replaces earlier callbacks.
  Napi::Value Receive(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    if (!info[0].IsFunction() || !info[1].IsFunction()) ThrowType(env, T::kNames.receive_usage);
    on_data_ = Napi::Persistent(info[0].As<Napi::Function>());
    on_error_ = Napi::Persistent(info[1].As<Napi::Function>());
    if (!context_) {
      std::string resource = std::string("fibkeeper:") + T::kNames.cls;
      context_ = std::make_unique<Napi::AsyncContext>(env, resource.c_str());
    }
    if (scratch_.empty()) scratch_.resize(kBatchBytes);
    poller_.Start(env, fd, this->Value());
    return env.Undefined();
  }

  Napi::Value Pause(const Napi::CallbackInfo& info) {
    poller_.Stop();
    return info.Env().Undefined();
  }

  // queuedBytes(): the memory of what waits in the receive queue (SO_MEMINFO's rmem_alloc:
  // skb truesize, the figure the kernel holds against the receive buffer); -1 on a kernel
  // without SO_MEMINFO (before 4.12).
  Napi::Value QueuedBytes(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = CheckOpen(env);
    uint32_t mem[SK_MEMINFO_VARS] = {};
    socklen_t len = sizeof(mem);
    if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) != 0) {
      if (errno == ENOPROTOOPT) return Napi::Number::New(env, -1);
      ThrowErrno(env, errno, "getsockopt", "SO_MEMINFO");
    }
    return Napi::Number::New(env, mem[SK_MEMINFO_RMEM_ALLOC]);
  }

  Napi::Value JsRef(const Napi::CallbackInfo& info) {
    poller_.SetRef(true);
    return info.Env().Undefined();
  }

  Napi::Value JsUnref(const Napi::CallbackInfo& info) {
    poller_.SetRef(false);
    return info.Env().Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    static_cast<T&>(*this).BeforeClose();  // a class's own use of the fd ends first
    poller_.Close();                         // before the fd goes away
    fd_.Reset();
    on_data_.Reset();
    on_error_.Reset();
    return info.Env().Undefined();
  }

  void OnReadable(int status) {
    Napi::Env env = this->Env();
    Napi::HandleScope scope(env);
    Napi::Object self = this->Value();  // keeps this object alive during the callbacks
    if (status < 0) {
      poller_.Stop();  // libuv cannot poll this socket any more
      Deliver(env, self, 0, -status, "uv_poll", true);
      return;
    }
    T& socket = static_cast<T&>(*this);
    size_t used = 0;
    int err = 0;
    while (fd_.Valid() && scratch_.size() - used >= kMinRoom && !socket.BatchFull()) {
      typename T::Address from{};
      uint8_t* at = scratch_.data() + used;
      ssize_t n = socket.ReceiveOne(at, scratch_.size() - used, &from, &err);
      if (n < 0) break;
      used += socket.Accept(at, static_cast<size_t>(n), used, from);
    }
    Deliver(env, self, used, err, "recvmsg");
  }

  // An error after which the socket is no longer polled carries `fatal: true`.
  void Deliver(Napi::Env env, const Napi::Object& self, size_t used, int err, const char* syscall,
               bool stopped = false) {
    std::vector<napi_value> args = static_cast<T&>(*this).TakeBatch(env, scratch_.data(), used);
    if (!args.empty() && !on_data_.IsEmpty()) {
      CallFromLoop(env, *context_, self, on_data_.Value(), args);
    }
    if (err == 0 || on_error_.IsEmpty() || !fd_.Valid()) return;
    if (IsFatalReceiveError(err)) {
      poller_.Stop();
      stopped = true;
    }
    Napi::Error error = ErrnoError(env, err, syscall);
    if (stopped) error.Set("fatal", Napi::Boolean::New(env, true));
    CallFromLoop(env, *context_, self, on_error_.Value(), {error.Value()});
  }

  UniqueFd fd_;
  FaultState fault_state_;
  SocketPoller poller_;
  std::vector<uint8_t> scratch_;
  Napi::FunctionReference on_data_;
  Napi::FunctionReference on_error_;
  std::unique_ptr<Napi::AsyncContext> context_;
};

}  // namespace fk
