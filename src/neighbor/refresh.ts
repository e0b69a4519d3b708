// Legacy refresh: on the legacy path fibkeeper makes the kernel re-resolve (NTF_USE) each of
// its entries that went STALE, at most neighbor.rateLimit writes a second together with
// every other re-write (the reconciler's rate limiter). XDP never triggers resolution, so
// without this an entry would stay STALE with an address nobody checks again.
//
// A sweep, not a queue. A cursor walks the desired table round and round; each turn (every
// `tickMs`) it hands the reconciler the STALE entries it passes, but only while fewer than
// `outstanding` of its refreshes wait to be written. The reconciler drains them at
// rateLimit per second, so the sweep goes exactly as fast as the budget allows, keeps no
// state per entry (100,000 STALE entries cost nothing but the table they are in), needs no
// event to notice an entry (a lost event or an overflow changes nothing), and refreshes every
// entry once per pass: round-robin, in table order.
import { NUD_STALE } from '../netlink/index.js';
import { Periodic, type Clock } from '../sched/index.js';
import type { Row, Table } from '../statedb/index.js';
import type { DeviceTracker } from './devices.js';
import { isOwned, type ObservedNeighbors } from './observed.js';
import type { DesiredNeighbor, RefreshMode } from './types.js';

export interface RefresherParams {
  desired: Table<DesiredNeighbor>;
  observed: ObservedNeighbors;
  devices: DeviceTracker;
  protocol: number;
  /** The refresh path now: the sweep runs only on the legacy one. */
  mode: () => RefreshMode;
  clock: Clock;
  /** Hands an entry to the reconciler to be written again (cause: refresh). */
  requeue(key: string): void;
  /** The refresh of `key` is no longer waiting (written, or the row went). */
  written(key: string): boolean;
  /** Refreshes handed over and not yet written, at most. */
  outstanding: number;
  /** Desired rows looked at per turn, at most. */
  scanPerTick: number;
  /** Time between turns, ms. */
  tickMs: number;
}

/** A handed-over refresh that was neither written nor dropped after this long is forgotten. */
const FORGET_AFTER_MS = 30_000;

export class Refresher {
  readonly #p: RefresherParams;
  #cursor: Iterator<Row<DesiredNeighbor>> | undefined = undefined;
  /** Keys handed over and not yet written, with the time they were. */
  readonly #waiting = new Map<string, number>();
  readonly #ticks: Periodic;
  /** Entries handed over since start (status, tests). */
  handedOver = 0;

  constructor(p: RefresherParams) {
    this.#p = p;
    this.#ticks = new Periodic(p.clock, p.tickMs, () => this.turn());
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#ticks.stop();
  }

  /** Refreshes handed to the reconciler that wait to be written (for status). */
  get pending(): number {
    return this.#waiting.size;
  }

  /** One turn of the sweep. */
  turn(): void {
    if (this.#p.mode() !== 'legacy') {
      this.#waiting.clear();
      this.#cursor = undefined;
      return;
    }
    const now = this.#p.clock.now();
    for (const [key, at] of this.#waiting) {
      if (this.#p.written(key) || now - at > FORGET_AFTER_MS) this.#waiting.delete(key);
    }
    let room = this.#p.outstanding - this.#waiting.size;
    let scanned = 0;
    let restarted = false;
    while (room > 0 && scanned < this.#p.scanPerTick) {
      const next = this.#cursor?.next();
      if (next === undefined || next.done === true) {
        // The end of a pass: start the next one, but pass nothing twice in one turn.
        if (restarted) break;
        restarted = true;
        this.#cursor = this.#p.desired.rows();
        continue;
      }
      scanned++;
      const row = next.value;
      const d = row.object;
      const e = this.#p.observed.find(d.ifindex, d.nexthop);
      if (e === undefined || (e.state & NUD_STALE) === 0 || !isOwned(e, this.#p.protocol)) continue;
      if (this.#waiting.has(row.key) || !this.#p.devices.isSelected(d.ifindex)) continue;
      this.#waiting.set(row.key, now);
      this.#p.requeue(row.key);
      this.handedOver++;
      room--;
    }
  }
}
