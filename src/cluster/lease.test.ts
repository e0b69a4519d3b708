// LeaseKeeper's fence under a clock that a loaded machine gives: timers that fire a little
// early (libuv schedules by whole, cached milliseconds) and a process preempted between two
// reads of the clock. Whatever the interleaving, the keeper must announce the fence: a fence
// it only noted to itself leaves the published hold set holding IPs it may no longer hold.
import { describe, expect, it } from 'vitest';
import { noopClusterMetrics } from './metrics.js';
import type { Clock, TimerHandle } from '../sched/index.js';
import { LeaseKeeper, type LeaseChange } from './lease.js';
import type { ClusterStore } from './store.js';

/** A clock whose reads are scripted: `reads` are returned first, then `time`. */
class ScriptedClock implements Clock {
  time = 1_000;
  reads: number[] = [];
  timers = new Map<object, { due: number; fn: () => void }>();
  now(): number {
    return this.reads.shift() ?? this.time;
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const h = {};
    this.timers.set(h, { due: this.time + ms, fn });
    return h as TimerHandle;
  }
  clearTimeout(h: TimerHandle): void {
    this.timers.delete(h as object);
  }
  /** Runs the timer due last (the fence timer is the one due latest here). */
  fireLatest(): number {
    const [h, t] = [...this.timers].sort((a, b) => b[1].due - a[1].due)[0]!;
    this.timers.delete(h);
    t.fn();
    return t.due;
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
    // The fence timer fires 0.4 ms early (mayHold still true), and the process is preempted
    // for 5 ms before the re-arm reads the clock again.
    clock.time = holdUntil + 5;
    clock.reads = [holdUntil - 0.4];
    clock.fireLatest();
    expect(lease.mayHold()).toBe(false);
    expect(changes).toEqual(['granted', 'fenced']);
  });
});
