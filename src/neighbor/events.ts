// What the neighbor subsystem reports as events (src/events): entries written for new next
// hops, written again after the kernel lost them (repaired), lost (deleted by someone, or
// FAILED on the legacy path), deleted as no longer wanted, and next hops that became unusable
// (unresolved past neighbor.unusableAfter). Each kind is a Burst: a bulk load of a million
// entries is a few events, and an entry costs a counter (its text is made only for the few
// examples). Unusable next hops are looked for once a second, and only while the kernel holds
// unresolved entries of ours: those that crossed neighbor.unusableAfter since the last look.
import { Burst, SAMPLE_SIZE, type EventSink, type EventType } from '../events/index.js';
import { Periodic, type Clock } from '../sched/index.js';
import { splitNeighKey } from './types.js';
import type { UnusableList } from './unusable.js';

/** Length of a summary window. */
const WINDOW_MS = 1000;
/** How often unusable next hops are looked for while there are unresolved entries. */
const UNUSABLE_CHECK_MS = 1000;

export interface NeighborEventsParams {
  sink: EventSink;
  clock: Clock;
  /** A device's name (undefined: gone). */
  nameOf(ifindex: number): string | undefined;
  /** Unresolved entries of ours in the kernel now (cheap). */
  unresolved(): number;
  /** Now less neighbor.unusableAfter: an entry FAILED at this time or earlier is unusable. */
  unusableUpTo(): number;
  /** Next hops that went FAILED in (after, upTo] and are unusable: the count, `max` rows. */
  newlyUnusable(after: number, upTo: number, max: number): UnusableList;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const listed = (sample: readonly string[], n: number) =>
  sample.length === 0 ? '' : `: ${sample.join(', ')}${n > sample.length ? ', …' : ''}`;

export class NeighborEvents {
  readonly #p: NeighborEventsParams;
  readonly #written: Burst;
  readonly #repaired: Burst;
  readonly #lost: Burst;
  readonly #deleted: Burst;
  readonly #unusable: Burst;
  readonly #check: Periodic;
  /**
   * Where the last look ended: an entry unusable since is one whose first FAILED came after
   * it (each episode is reported once, when it crosses neighbor.unusableAfter; a next hop
   * that only becomes wanted later is in health and status, not in an event).
   */
  #checkedUpTo = -Infinity;

  constructor(p: NeighborEventsParams) {
    this.#p = p;
    const burst = (type: EventType, describe: (n: number, s: readonly string[]) => string) =>
      new Burst({ sink: p.sink, clock: p.clock, type, windowMs: WINDOW_MS, describe });
    this.#written = burst(
      'neighbor.written',
      (n, s) => `${plural(n, 'neighbor entry', 'neighbor entries')} written${listed(s, n)}`,
    );
    this.#repaired = burst(
      'neighbor.repaired',
      (n, s) =>
        `${plural(n, 'neighbor entry', 'neighbor entries')} written again after the kernel lost them${listed(s, n)}`,
    );
    this.#lost = burst(
      'neighbor.lost',
      (n, s) => `${plural(n, 'neighbor entry', 'neighbor entries')} lost${listed(s, n)}`,
    );
    this.#deleted = burst(
      'neighbor.deleted',
      (n, s) =>
        `${plural(n, 'neighbor entry', 'neighbor entries')} deleted (no longer wanted)${listed(s, n)}`,
    );
    this.#unusable = burst(
      'neighbor.unusable',
      (n, s) =>
        `${plural(n, 'next hop')} unusable: no ARP/NDP answer past neighbor.unusableAfter${listed(s, n)}`,
    );
    this.#check = new Periodic(p.clock, UNUSABLE_CHECK_MS, () => this.#checkUnusable());
  }

  /** "10.0.0.2 on eth0" for a desired key ("ifindex|ip"). */
  describe(key: string, why?: string): string {
    const { ifindex, ip } = splitNeighKey(key);
    const dev = this.#p.nameOf(ifindex) ?? `if${ifindex}`;
    return `${ip} on ${dev}${why ? ` (${why})` : ''}`;
  }

  start(): void {
    this.#check.start();
  }

  stop(): void {
    this.#check.stop();
    for (const b of [this.#written, this.#repaired, this.#lost, this.#deleted, this.#unusable]) {
      b.stop();
    }
  }

  /** `n` entries written for new next hops; `keys(max)` names some. */
  written(n: number, keys: (max: number) => readonly string[]): void {
    this.#written.add(n, (max) => keys(max).map((k) => this.describe(k)));
  }

  /** Entries written again after a loss, with their keys and causes. */
  repaired(found: readonly [key: string, cause: string][], n: number): void {
    this.#repaired.add(n, (max) => found.slice(0, max).map(([k, c]) => this.describe(k, c)));
  }

  /** One desired entry the kernel lost: deleted (by anyone, flushed) or FAILED (legacy). */
  lost(key: string, cause: 'deleted' | 'failed'): void {
    this.#lost.add(1, () => [this.describe(key, cause)]);
  }

  /** `n` entries deleted as no longer wanted (reconcile) or stale (prune). */
  deleted(n: number, keys: (max: number) => readonly string[]): void {
    this.#deleted.add(n, (max) => keys(max).map((k) => this.describe(k)));
  }

  #checkUnusable(): void {
    const upTo = this.#p.unusableUpTo();
    const after = this.#checkedUpTo;
    this.#checkedUpTo = upTo;
    if (this.#p.unresolved() === 0) return;
    const found = this.#p.newlyUnusable(after, upTo, SAMPLE_SIZE);
    if (found.count === 0) return;
    this.#unusable.add(found.count, (max) =>
      found.entries
        .slice(0, max)
        .map(
          (u) =>
            `${u.nexthop} on ${u.device} (${u.state} for ${u.forSeconds} s${u.forwardable.length ? `; forwardable ${u.forwardable.join(' ')}` : ''})`,
        ),
    );
  }
}
