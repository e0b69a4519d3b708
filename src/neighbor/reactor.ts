// Turns observed changes of desired entries into work for the reconciler: an entry that
// vanished (deleted by anyone, flushed) or FAILED without the kernel retrying it is written
// again as soon as the event arrives (STALE entries on the legacy path are the refresher's:
// refresh.ts).
//
// Bounds, so that an unreachable next hop never becomes a write loop and ARP stays bounded:
//   - per entry: consecutive losses back off exponentially (retryMin·2^(n-2) after the
//     n-th loss, up to retryMax; the first loss is repaired at once). A resolved entry
//     (REACHABLE, DELAY, PROBE, or STALE with managed) resets its count.
//   - per entry: the reconciler never writes a row again sooner than requeueMinIntervalMs
//     after its last write;
//   - in total: every re-insert and refresh takes a token from the reconciler's rate
//     limiter (neighbor.rateLimit per second).
import type { Clock, Table, TimerHandle } from '../statedb/index.js';
import { backoff } from './config.js';
import type { DeviceTracker } from './devices.js';
import { reactionTo, type NeighState, type ObservedChange } from './observed.js';
import { neighKey, type DesiredNeighbor, type RefreshMode } from './types.js';

/** Why an entry is written again: lost, FAILED (legacy), STALE (legacy), or a mode switch. */
export type RequeueCause = 'deleted' | 'failed' | 'refresh' | 'mode';

export interface ReactorParams {
  desired: Table<DesiredNeighbor>;
  devices: DeviceTracker;
  /** The refresh path now (auto switches it with the table size). */
  mode: () => RefreshMode;
  protocol: number;
  clock: Clock;
  retryMinMs: number;
  retryMaxMs: number;
  /** Asks the reconciler to write the row `key` again (rate-limited there). */
  requeue(key: string, cause: RequeueCause): void;
}

/** Keys due at times; a binary heap with lazy deletion (the map says what is current). */
class Deadlines {
  private readonly due = new Map<string, number>();
  private heap: { key: string; at: number }[] = [];

  get size(): number {
    return this.due.size;
  }

  schedule(key: string, at: number): void {
    this.due.set(key, at);
    const h = this.heap;
    h.push({ key, at });
    for (let i = h.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.at <= h[i]!.at) break;
      [h[parent], h[i]] = [h[i]!, h[parent]!];
      i = parent;
    }
    if (h.length > 2 * this.due.size + 1024) this.rebuild();
  }

  cancel(key: string): void {
    this.due.delete(key);
  }

  /** The earliest current due time, or Infinity. */
  next(): number {
    for (;;) {
      const top = this.heap[0];
      if (top === undefined) return Infinity;
      if (this.due.get(top.key) === top.at) return top.at;
      this.pop();
    }
  }

  /** Removes and returns the keys due at or before `now`. */
  takeDue(now: number): string[] {
    const out: string[] = [];
    while (this.next() <= now) {
      const top = this.pop()!;
      this.due.delete(top.key);
      out.push(top.key);
    }
    return out;
  }

  private pop(): { key: string; at: number } | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined || h.length === 0) return top;
    h[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l]!.at < h[m]!.at) m = l;
      if (r < h.length && h[r]!.at < h[m]!.at) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
    return top;
  }

  private rebuild(): void {
    const items = [...this.due].map(([key, at]) => ({ key, at }));
    this.heap = [];
    for (const it of items) this.schedule(it.key, it.at);
  }
}

export class Reactor {
  private readonly p: ReactorParams;
  /** Consecutive losses per desired key (absent: none since it last resolved). */
  private readonly losses = new Map<string, number>();
  private readonly delayed = new Deadlines();
  private readonly delayedCause = new Map<string, RequeueCause>();
  private timer: TimerHandle | undefined = undefined;
  private timerAt = Infinity;
  private running = false;

  constructor(p: ReactorParams) {
    this.p = p;
  }

  start(): void {
    this.running = true;
    this.arm();
  }

  stop(): void {
    this.running = false;
    if (this.timer !== undefined) this.p.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Entries waiting out a backoff before they are written again (for status). */
  get backingOff(): number {
    return this.delayed.size;
  }

  /** Consecutive losses of one entry (for status). */
  lossesOf(key: string): number {
    return this.losses.get(key) ?? 0;
  }

  /** Forget an entry that is no longer desired. */
  forget(key: string): void {
    if (!this.losses.has(key) && !this.delayedCause.has(key)) return;
    this.losses.delete(key);
    this.delayed.cancel(key);
    this.delayedCause.delete(key);
  }

  observed(c: ObservedChange): void {
    this.observedEntry(c.ifindex, c.ip, c.after);
  }

  /**
   * The entry (ifindex, ip) changed; `after` is its state now (undefined: gone). The
   * reaction comes first: most events (an entry resolving) need no table lookup at all.
   */
  observedEntry(ifindex: number, ip: string, after: NeighState | undefined): void {
    const reaction = reactionTo(after, this.p.mode(), this.p.protocol);
    if (reaction === 'none') return;
    if (reaction === 'healthy') {
      if (this.losses.size > 0) this.forget(neighKey(ifindex, ip));
      return;
    }
    const key = neighKey(ifindex, ip);
    if (!this.p.desired.has(key)) {
      if (this.losses.has(key)) this.forget(key);
      return;
    }
    if (!this.p.devices.isSelected(ifindex)) return;
    switch (reaction) {
      case 'stale':
        return; // the refresher's sweep (refresh.ts) finds it, at the pace of the rate limit
      case 'deleted':
      case 'failed':
        this.lost(key, reaction);
        return;
    }
  }

  private lost(key: string, cause: 'deleted' | 'failed'): void {
    const n = (this.losses.get(key) ?? 0) + 1;
    this.losses.set(key, n);
    if (n === 1) {
      this.delayed.cancel(key);
      this.p.requeue(key, cause);
      return;
    }
    const at = this.p.clock.now() + backoff(this.p.retryMinMs, this.p.retryMaxMs, n - 1);
    this.delayed.schedule(key, at);
    this.delayedCause.set(key, cause);
    this.arm();
  }

  private arm(): void {
    if (!this.running) return;
    const next = this.delayed.next();
    if (next === Infinity || next >= this.timerAt) return;
    if (this.timer !== undefined) this.p.clock.clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = this.p.clock.setTimeout(() => this.fire(), Math.max(0, next - this.p.clock.now()));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    for (const key of this.delayed.takeDue(this.p.clock.now())) {
      const cause = this.delayedCause.get(key) ?? 'deleted';
      this.delayedCause.delete(key);
      if (this.p.desired.has(key)) this.p.requeue(key, cause);
    }
    this.arm();
  }
}
