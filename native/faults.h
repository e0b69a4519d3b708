// Fault injection at the native boundary, for tests only. Disarmed (the default, and always
// in production) it costs one relaxed atomic load per send and receive. A test arms it with
// configureFaults() (src/native/faults.ts, from FIBKEEPER_TEST_FAULTS): then a send or
// receive of a socket may fail with a chosen errno, lose its datagram, deliver it cut short,
// hang, or begin a storm of EAGAIN or a deaf period, each with the probability the test set.
// Nothing of this is in the option table: see docs/architecture.md, "Fault injection".
#pragma once

#include <napi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fk {

// Where a fault is injected.
enum class FaultSite : int { kNetlinkRecv = 0, kNetlinkSend, kPacketRecv, kPacketSend };

struct Fault {
  enum Kind : int {
    kNone = 0,
    kErrno,     // the call fails with `err`; a receive leaves the datagram queued
    kLose,      // a receive reads the datagram and reports `err` (ENOBUFS, EMSGSIZE); a send
                // reports success but nothing reaches the kernel (no reply will come). As
                // the kernel does, ENOBUFS spares a netlink dump's data (netlink_dump()
                // waits for room instead of dropping): that datagram arrives, then ENOBUFS.
    kEmpty,     // a receive finds nothing (EAGAIN) although data is queued
    kDiscard,   // a receive reads the datagram and delivers nothing (a deaf socket)
    kTruncate,  // a receive delivers only the first `keep` bytes of the datagram
    kHang,      // a send sleeps `hang_ms` before it is made
  };
  Kind kind = kNone;
  int err = 0;
  uint32_t hang_ms = 0;
  double keep_fraction = 1.0;
};

// What one socket remembers between calls: the storm and deaf periods it is in.
struct FaultState {
  int64_t empty_until_ns = 0;
  int64_t deaf_until_ns = 0;
  int pending_err = 0;  // reported by the next receive (after a spared dump datagram)
};

extern std::atomic<bool> g_faults_armed;

// The fault for one call at `site` of the socket whose state is `state` (kNone unless armed).
Fault NextFault(FaultSite site, FaultState* state);

// Inline fast path: nothing to do unless a test armed the faults.
inline Fault MaybeFault(FaultSite site, FaultState* state) {
  if (!g_faults_armed.load(std::memory_order_relaxed)) return Fault{};
  return NextFault(site, state);
}

// Sleeps `ms` milliseconds (a hung kernel call), EINTR resumed.
void FaultSleep(uint32_t ms);

}  // namespace fk
