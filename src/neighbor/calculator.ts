// The desired-neighbor calculator: for each forwardable IP × selected device, the next hops
// the kernel's FIB gives (pipelined `ip route get IP oif DEV fibmatch`, one per group of IPs
// the kernel must answer alike while routing is table-only, else one per pair: share.ts),
// kept in the DesiredNeighbor table with references back to the IPs that need each entry.
//
// Work is incremental. A forwardable IP that appears is looked up on every selected device;
// one that goes (or becomes a node address) releases its references without any lookup; a
// device that becomes selected is looked up for every IP, one that leaves releases its
// entries; a route change looks up only the pairs it can affect (RouteTracker.affected). A
// full pass runs on demand (periodic resync, route overflow). A lookup that fails keeps the
// previous answer and is retried with backoff; "no route through this device" is an answer.
import type { Logger } from '../log/index.js';
import { backoff, Timer, type Clock } from '../sched/index.js';
import type { Table } from '../statedb/index.js';
import type { NeighborMetrics } from './metrics.js';
import type { DeviceTracker } from './devices.js';
import type { ForwardableIPs } from './forwardable.js';
import { NextHopAssignments, NONE, SELF_HOP } from './assignments.js';
import type { LookupOutcome } from './nexthop.js';
import { NoEntryReasons } from './reasons.js';
import type { GroupKey } from './prefixes.js';
import type { RouteTracker } from './routes.js';
import { lookupNextHops, type LookupFn, type SharedLookups } from './share.js';
import { neighKey, splitNeighKey, type DesiredNeighbor, type RouteRow } from './types.js';

export type { LookupFn } from './share.js';

export interface CalculatorParams {
  forwardable: ForwardableIPs;
  devices: DeviceTracker;
  routes: RouteTracker;
  desired: Table<DesiredNeighbor>;
  lookup: LookupFn;
  /**
   * The group whose lookup an IP may share (share.ts); undefined, or no function at all,
   * looks the IP up on its own.
   */
  groupOf?: (ip: string) => GroupKey | undefined;
  clock: Clock;
  log: Logger;
  metrics: NeighborMetrics;
  /** Lookups per call of `lookup`. */
  chunk: number;
  retryMinMs: number;
  retryMaxMs: number;
}

interface LookupFailure {
  error: string;
  failures: number;
  due: number;
}

/** Failed lookups of a pair that hold back the first calculation; later ones do not. */
const INIT_RETRIES = 3;

/** A list of IPs to look up on a device, taken from `pos` on. */
interface BulkList {
  ifindex: number;
  ips: string[];
  pos: number;
  released: number;
  iter?: undefined;
}

/** Every forwardable IP, read from the table's iterator; `left`: about how many (status). */
interface BulkTable {
  ifindex: number;
  ips?: undefined;
  iter: Iterator<string>;
  left: number;
}

type Bulk = BulkList | BulkTable;

export class Calculator {
  readonly #p: CalculatorParams;
  /** ifindex → IPs to look up soon (changes). */
  readonly #urgent = new Map<number, Set<string>>();
  /** What the lookups answered, and the desired rows it makes (assignments.ts). */
  readonly #hops: NextHopAssignments;
  /**
   * Many IPs to look up on a device, in chunks: a list (a bulk add; `released` is the release
   * count when it was made: unchanged, every IP in it is still wanted), or every forwardable
   * IP (a device selected, a full resync), read from the table as the chunks are taken —
   * a copy of a million IPs made ~30 MB of garbage at each full resync.
   */
  #bulk: Bulk[] = [];
  /** Why an IP has no next hop on a device, for status (reasons.ts). */
  readonly #noEntry = new NoEntryReasons();
  /** "ifindex|ip" → the failed lookup waiting for its retry. */
  readonly #failed = new Map<string, LookupFailure>();
  /** Wakes the pass when the earliest failed lookup is due again (at #retryAt). */
  readonly #retry: Timer;
  #retryAt = Infinity;
  #running = false;
  #pumping = false;
  #scheduled = false;
  #inFlight = 0;
  #initDone: (() => void) | undefined;
  #idleWaiters: (() => void)[] = [];
  /** Pairs whose next hops came from another IP's lookup (status, tests). */
  shared = 0;
  /** Counts releases (IPs removed or now the node's own): lookups in flight recheck theirs. */
  #released = 0;

  constructor(p: CalculatorParams) {
    this.#p = p;
    this.#hops = new NextHopAssignments(p.desired);
    this.#retry = new Timer(p.clock);
    this.#initDone = p.desired.registerInitializer('first-calculation');
  }

  // ---- lifecycle ---------------------------------------------------------------------

  start(): void {
    if (this.#running) return;
    this.#running = true;
    for (const d of this.#p.devices.selected()) this.#queueDevice(d.ifindex);
    this.#kick();
  }

  stop(): void {
    this.#running = false;
    this.#retry.cancel();
    this.#flushIdle();
  }

  /** Resolves when no lookup is queued or in flight (retries scheduled later do not count). */
  waitIdle(): Promise<void> {
    if (!this.#running || this.#idle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Pairs queued or in flight (for status). */
  get pending(): number {
    let n = this.#inFlight;
    for (const s of this.#urgent.values()) n += s.size;
    for (const b of this.#bulk) n += b.ips === undefined ? b.left : b.ips.length - b.pos;
    return n;
  }

  // ---- inputs ------------------------------------------------------------------------

  forwardableChanged(added: readonly string[], removed: readonly string[]): void {
    if (removed.length > 0) this.#release(removed);
    if (added.length === 0) return;
    const devices = this.#p.devices.selected();
    if (added.length >= BULK_ADD) {
      // Many at once (a config or state load, a large API call): a list per device, taken
      // in chunks after the changes queued one by one.
      const ips = added.filter((ip) => !this.#p.devices.isNodeAddress(ip));
      const released = this.#released;
      for (const d of devices) this.#bulk.push({ ifindex: d.ifindex, ips, pos: 0, released });
    } else {
      for (const ip of added) {
        if (this.#p.devices.isNodeAddress(ip)) continue;
        for (const d of devices) this.#queue(d.ifindex, ip);
      }
    }
    this.#kick();
  }

  selectionChanged(added: readonly number[], removed: readonly number[]): void {
    for (const d of removed) this.#dropDevice(d);
    for (const d of added) this.#queueDevice(d);
    this.#kick();
  }

  nodeAddressChanged(ip: string, present: boolean): void {
    if (!this.#p.forwardable.has(ip)) return;
    if (present) {
      this.#release([ip]);
      return;
    }
    for (const d of this.#p.devices.selected()) this.#queue(d.ifindex, ip);
    this.#kick();
  }

  routeChanged(before: RouteRow | undefined, after: RouteRow | undefined): void {
    const selected = this.#p.devices.selected().map((d) => d.ifindex);
    const pairs = this.#p.routes.affected(before, after, this.#p.forwardable.index, selected);
    if (pairs.size === 0) return;
    for (const [d, ips] of pairs) {
      for (const ip of ips) if (!this.#p.devices.isNodeAddress(ip)) this.#queue(d, ip);
    }
    this.#kick();
  }

  /** Looks every pair up again (periodic resync, lost route events). */
  fullResync(): void {
    this.#bulk = [];
    for (const d of this.#p.devices.selected()) this.#queueDevice(d.ifindex);
    this.#kick();
  }

  // ---- status ------------------------------------------------------------------------

  /** The next hops of one forwardable IP, by device. */
  nexthopsOf(ip: string): Map<number, readonly string[]> {
    return this.#hops.nexthopsOf(ip);
  }

  /**
   * The string kept for `ip` when it is a forwardable IP that is its own next hop on the
   * device (on-link): the observed table keys its entry with it instead of the copy a
   * neighbor message brings (one address in memory, not two, per on-link IP).
   */
  onLinkString(ifindex: number, ip: string): string | undefined {
    return this.#hops.onLinkString(ifindex, ip);
  }

  /** Why an IP has no next hop on a device, when there is more to say than "no route". */
  noEntryReason(ifindex: number, ip: string): string | undefined {
    return this.#noEntry.get(ifindex, ip);
  }

  /** The last lookup error of a pair, while it is being retried. */
  lookupError(ifindex: number, ip: string): string | undefined {
    return this.#failed.get(neighKey(ifindex, ip))?.error;
  }

  get failingLookups(): number {
    return this.#failed.size;
  }

  // ---- queueing ----------------------------------------------------------------------

  #queue(ifindex: number, ip: string): void {
    let s = this.#urgent.get(ifindex);
    if (s === undefined) this.#urgent.set(ifindex, (s = new Set()));
    s.add(ip);
  }

  #queueDevice(ifindex: number): void {
    this.#bulk = this.#bulk.filter((b) => b.ifindex !== ifindex);
    const left = this.#p.forwardable.size;
    if (left > 0) this.#bulk.push({ ifindex, iter: this.#p.forwardable.ips(), left });
  }

  #kick(): void {
    if (!this.#running || this.#pumping || this.#scheduled) return;
    this.#scheduled = true;
    // Coalesce a burst of synchronous events into one pass.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#pump();
    });
  }

  #idle(): boolean {
    return this.#inFlight === 0 && this.#urgent.size === 0 && this.#bulk.length === 0;
  }

  #flushIdle(): void {
    const w = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const f of w) f();
  }

  /**
   * Up to `n` IPs of one device: changes first, then due retries, then whole devices.
   * Undefined when nothing is due.
   */
  #take(n: number): { ifindex: number; ips: string[]; wanted?: boolean } | undefined {
    for (const [d, set] of this.#urgent) {
      const ips: string[] = [];
      for (const ip of set) {
        if (ips.length >= n) break;
        set.delete(ip);
        ips.push(ip);
      }
      if (set.size === 0) this.#urgent.delete(d);
      if (ips.length > 0) return { ifindex: d, ips };
    }
    const now = this.#p.clock.now();
    let retry: { ifindex: number; ips: string[] } | undefined;
    for (const [key, f] of this.#failed) {
      if (f.due > now) continue; // in flight: Infinity
      const { ifindex, ip } = splitNeighKey(key);
      if (retry === undefined) retry = { ifindex, ips: [] };
      else if (retry.ifindex !== ifindex) continue;
      if (retry.ips.length >= n) break;
      f.due = Infinity; // the outcome reschedules or clears it
      retry.ips.push(ip);
    }
    if (retry !== undefined) return retry;
    for (;;) {
      const b = this.#bulk[0];
      if (b === undefined) return undefined;
      if (b.ips !== undefined) return this.#takeList(b, n);
      // The table read live: an IP added since is read too, one removed is not; the node's
      // own addresses are left out here.
      const ips: string[] = [];
      while (ips.length < n) {
        const r = b.iter.next();
        if (r.done === true) break;
        if (!this.#p.devices.isNodeAddress(r.value)) ips.push(r.value);
      }
      b.left = Math.max(0, b.left - ips.length);
      if (ips.length < n) this.#bulk.shift();
      if (ips.length > 0) return { ifindex: b.ifindex, ips, wanted: true };
    }
  }

  #takeList(b: BulkList, n: number): { ifindex: number; ips: string[]; wanted: boolean } {
    const end = Math.min(b.ips.length, b.pos + n);
    const ips = b.ips.slice(b.pos, end);
    b.pos = end;
    if (b.pos >= b.ips.length) this.#bulk.shift();
    // Nothing released since the list was made: every IP of it is still wanted.
    return { ifindex: b.ifindex, ips, wanted: b.released === this.#released };
  }

  // ---- the pass ----------------------------------------------------------------------

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (let g = this.#take(this.#p.chunk); g !== undefined; g = this.#take(this.#p.chunk)) {
        if (!this.#running) break;
        if (!this.#p.devices.isSelected(g.ifindex)) continue;
        const ips = g.wanted === true ? g.ips : g.ips.filter((ip) => this.#wanted(ip));
        if (ips.length === 0) continue;
        this.#inFlight = ips.length;
        const released = this.#released;
        const result = await lookupNextHops(g.ifindex, ips, this.#groupOf, this.#p.lookup);
        this.#inFlight = 0;
        if (!this.#running) break;
        this.#apply(g.ifindex, ips, result, released !== this.#released);
      }
    } catch (err) {
      this.#p.log.error({ err }, 'next-hop calculation failed');
    } finally {
      this.#pumping = false;
      this.#inFlight = 0;
    }
    this.#armRetry();
    this.#maybeInitialized();
    if (this.#idle()) this.#flushIdle();
  }

  /** The IP is forwardable and not the node's own. */
  #wanted(ip: string): boolean {
    return this.#p.forwardable.has(ip) && !this.#p.devices.isNodeAddress(ip);
  }

  readonly #groupOf = (ip: string): GroupKey | undefined => this.#p.groupOf?.(ip);

  /**
   * Applies the outcomes of a chunk. `recheck`: IPs were released while the lookups were in
   * flight, so each one's wanted() is asked again.
   */
  #apply(ifindex: number, ips: readonly string[], result: SharedLookups, recheck: boolean): void {
    const { lookups, outcomes } = result;
    this.#p.metrics.lookups('nexthop', lookups.nexthop);
    this.#p.metrics.lookups('unreachable', lookups.unreachable);
    this.#p.metrics.lookups('error', lookups.error);
    this.shared += result.shared;
    // The device left while the lookups were in flight: its entries are already released.
    if (!this.#p.devices.isSelected(ifindex)) return;
    const again = this.#urgent.get(ifindex);
    const check = again !== undefined && again.size > 0;
    this.#p.desired.write((w) => {
      for (let i = 0; i < ips.length; i++) {
        const ip = ips[i]!;
        const outcome: LookupOutcome = outcomes[i]!;
        // Removed, or queued again while in flight: the newer lookup decides.
        if ((check && again.has(ip)) || (recheck && !this.#wanted(ip))) continue;
        if (outcome.kind === 'error') {
          this.#lookupFailed(ifindex, ip, outcome.error);
          continue;
        }
        if (this.#failed.size > 0) this.#failed.delete(neighKey(ifindex, ip));
        this.#noEntry.note(
          ifindex,
          ip,
          outcome.kind === 'unreachable' ? outcome.reason : undefined,
        );
        this.#hops.assign(
          w,
          ifindex,
          ip,
          outcome.kind === 'self'
            ? SELF_HOP
            : outcome.kind === 'nexthops'
              ? outcome.nexthops
              : NONE,
        );
      }
    });
  }

  #lookupFailed(ifindex: number, ip: string, error: string): void {
    const key = neighKey(ifindex, ip);
    const prev = this.#failed.get(key);
    const failures = (prev?.failures ?? 0) + 1;
    const due = this.#p.clock.now() + backoff(this.#p.retryMinMs, this.#p.retryMaxMs, failures);
    this.#failed.set(key, { error, failures, due });
    if (failures === 1) this.#p.log.warn({ ip, ifindex, error }, 'next-hop lookup failed');
  }

  /** Drops every assignment of these IPs (removed, or now the node's own). */
  #release(ips: readonly string[]): void {
    this.#released++;
    this.#p.desired.write((w) => {
      for (const ip of ips) {
        this.#hops.release(w, ip);
        this.#noEntry.forgetIp(ip);
        for (const d of this.#urgent.values()) d.delete(ip);
        for (const d of this.#hops.devices()) this.#failed.delete(neighKey(d, ip));
      }
    });
    this.#maybeInitialized();
  }

  #dropDevice(ifindex: number): void {
    this.#urgent.delete(ifindex);
    this.#noEntry.forgetDevice(ifindex);
    this.#bulk = this.#bulk.filter((b) => b.ifindex !== ifindex);
    for (const key of [...this.#failed.keys()]) {
      if (key.startsWith(`${ifindex}|`)) this.#failed.delete(key);
    }
    this.#hops.dropDevice(ifindex);
  }

  // ---- retries and initialization ----------------------------------------------------

  #armRetry(): void {
    if (!this.#running) return;
    let next = Infinity;
    for (const f of this.#failed.values()) next = Math.min(next, f.due);
    if (next === Infinity || next >= this.#retryAt) return;
    this.#retryAt = next;
    this.#retry.start(Math.max(0, next - this.#p.clock.now()), () => {
      this.#retryAt = Infinity;
      this.#kick();
    });
  }

  /**
   * The desired table counts as initialized once every input is, and the work they caused
   * is done: from then on, prune sees the complete desired state.
   */
  #maybeInitialized(): void {
    if (this.#initDone === undefined || !this.#running || !this.#idle()) return;
    const inputs = [this.#p.forwardable, this.#p.devices.table, this.#p.routes.table];
    if (!inputs.every((t) => t.initialized)) return;
    for (const f of this.#failed.values()) if (f.failures < INIT_RETRIES) return;
    const done = this.#initDone;
    this.#initDone = undefined;
    done();
    this.#p.log.info({ desired: this.#p.desired.size }, 'first next-hop calculation done');
  }

  /** Called when an input table finished initializing. */
  inputInitialized(): void {
    this.#maybeInitialized();
    this.#kick();
  }
}

/** Added IPs from this many on go to the whole-list queue instead of the per-pair one. */
const BULK_ADD = 256;
