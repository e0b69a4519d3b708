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
import { backoff, KeyScheduler, type Clock } from '../sched/index.js';
import type { Table } from '../statedb/index.js';
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
  /** Told of every loss of a desired entry (events). */
  lost?(key: string, cause: 'deleted' | 'failed'): void;
}

export class Reactor {
  readonly #p: ReactorParams;
  /** Consecutive losses per desired key (absent: none since it last resolved). */
  readonly #losses = new Map<string, number>();
  /** Entries waiting out their backoff; they come due only once started. */
  readonly #delayed: KeyScheduler;
  readonly #delayedCause = new Map<string, RequeueCause>();

  constructor(p: ReactorParams) {
    this.#p = p;
    this.#delayed = new KeyScheduler(p.clock, (keys) => this.#fire(keys), { paused: true });
  }

  start(): void {
    this.#delayed.start();
  }

  stop(): void {
    this.#delayed.stop();
  }

  /** Entries waiting out a backoff before they are written again (for status). */
  get backingOff(): number {
    return this.#delayed.size;
  }

  /** Consecutive losses of one entry (for status). */
  lossesOf(key: string): number {
    return this.#losses.get(key) ?? 0;
  }

  /** Forget an entry that is no longer desired. */
  forget(key: string): void {
    if (!this.#losses.has(key) && !this.#delayedCause.has(key)) return;
    this.#losses.delete(key);
    this.#delayed.cancel(key);
    this.#delayedCause.delete(key);
  }

  /**
   * observedEntry would do something with this change: false for most events (an entry
   * resolving, going STALE on the legacy path, with no losses to forget), so that the
   * caller need not make the address's text for them.
   */
  cares(after: NeighState | undefined): boolean {
    const reaction = reactionTo(after, this.#p.mode(), this.#p.protocol);
    if (reaction === 'none') return false;
    if (reaction === 'healthy' || reaction === 'stale') return this.#losses.size > 0;
    return true;
  }

  observed(c: ObservedChange): void {
    this.observedEntry(c.ifindex, c.ip, c.after);
  }

  /**
   * The entry (ifindex, ip) changed; `after` is its state now (undefined: gone). The
   * reaction comes first: most events (an entry resolving) need no table lookup at all.
   */
  observedEntry(ifindex: number, ip: string, after: NeighState | undefined): void {
    const reaction = reactionTo(after, this.#p.mode(), this.#p.protocol);
    if (reaction === 'none') return;
    if (reaction === 'healthy') {
      if (this.#losses.size > 0) this.forget(neighKey(ifindex, ip));
      return;
    }
    const key = neighKey(ifindex, ip);
    if (!this.#p.desired.has(key)) {
      if (this.#losses.has(key)) this.forget(key);
      return;
    }
    if (!this.#p.devices.isSelected(ifindex)) return;
    switch (reaction) {
      case 'stale':
        return; // the refresher's sweep (refresh.ts) finds it, at the pace of the rate limit
      case 'deleted':
      case 'failed':
        this.#lost(key, reaction);
        return;
    }
  }

  #lost(key: string, cause: 'deleted' | 'failed'): void {
    this.#p.lost?.(key, cause);
    const n = (this.#losses.get(key) ?? 0) + 1;
    this.#losses.set(key, n);
    if (n === 1) {
      this.#delayed.cancel(key);
      this.#p.requeue(key, cause);
      return;
    }
    const at = this.#p.clock.now() + backoff(this.#p.retryMinMs, this.#p.retryMaxMs, n - 1);
    this.#delayed.at(key, at);
    this.#delayedCause.set(key, cause);
  }

  #fire(keys: string[]): void {
    for (const key of keys) {
      const cause = this.#delayedCause.get(key) ?? 'deleted';
      this.#delayedCause.delete(key);
      if (this.#p.desired.has(key)) this.#p.requeue(key, cause);
    }
  }
}
