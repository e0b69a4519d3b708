// LeaseKeeper's fence under a clock that a loaded machine gives: timers that fire a little
// early (libuv schedules by whole, cached milliseconds) and a process preempted between two
// reads of the clock. Whatever the interleaving, the keeper must announce the fence: a fence
// it only noted to itself leaves the published hold set holding IPs it may no longer hold.
import { describe, expect, it } from 'vitest';
import { noopClusterMetrics } from './metrics.js';
import { FakeClock } from '../sched/testing.js';
import { LeaseKeeper, type LeaseChange } from './lease.js';
import type { ClusterStore } from './store.js';

/** A FakeClock whose reads are scripted: `reads` are returned first, then its time. */
class ScriptedClock extends FakeClock {
  reads: number[] = [];
  override now(): number {
    return this.reads.shift() ?? super.now();
  }
}

const settle = () => new Promise<void>((r) => setImmediate(r));

describe('LeaseKeeper fence', () => {
  it('announces the fence when the clock passes holdUntil between the timer and its re-arm', async () => {
    const clock = new ScriptedClock();
    const never = new Promise<number>(() => undefined); // cut off: no keep-alive answers
    const store = {
      grantLease: async () => ({ id: '7', ttlSeconds: 1 }),
      keepAlive: () => never,
      revokeLease: async () => undefined,
    } as unknown as ClusterStore;
    const changes: LeaseChange[] = [];
    const lease = new LeaseKeeper({
      store,
      clock,
      ttlSeconds: 1,
      renewIntervalMs: 150,
      fenceMarginMs: 250,
      retryMinMs: 50,
      retryMaxMs: 1000,
      metrics: noopClusterMetrics(),
      onChange: (c) => changes.push(c),
    });
    lease.start();
    await settle();
    expect(changes).toEqual(['granted']);
    const holdUntil = lease.holdUntil;
    // Up to just before the fence timer: the keep-alives go out, unanswered.
    clock.advance(holdUntil - clock.now() - 1);
    expect(lease.mayHold()).toBe(true);
    expect(changes).toEqual(['granted']);
    // The fence timer (due at holdUntil, the first timer then) fires 0.4 ms early (mayHold
    // still true), and the process is preempted for 5 ms before the re-arm reads the clock.
    clock.reads = [holdUntil - 0.4, holdUntil + 5];
    clock.advance(1);
    expect(clock.reads).toEqual([]);
    expect(lease.mayHold()).toBe(false);
    expect(changes).toEqual(['granted', 'fenced']);
  });
});
