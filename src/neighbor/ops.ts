// The reconciler's operations on the kernel neighbor table: the only part of the subsystem
// that writes neighbor entries. Every entry it writes carries NTF_EXT_LEARNED (exempt from
// garbage collection and gc_thresh3), fibkeeper's NDA_PROTOCOL mark, and NTF_EXT_MANAGED on
// the managed path or NTF_USE on the legacy path. Neither flag changes the state or the
// link-layer address of an existing entry: the kernel only (re)starts resolution, so a
// write of an entry that is already there is harmless (idempotent).
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { NeighborMetrics } from './metrics.js';
import {
  AF_INET,
  AF_INET6,
  NetlinkError,
  NTF_PROXY,
  NTF_USE,
  NUD_NONE,
  NUD_STALE,
  type Neigh,
  type NeighBulkResult,
  type NeighFields,
  type NeighSpec,
} from '../netlink/index.js';
import type { BatchResult, Operations } from '../statedb/index.js';
import type { NeighborEvents } from './events.js';
import { isForeign, isOwned, observedRow, type ObservedNeighbors } from './observed.js';
import { WritePacer } from './pace.js';
import type { RequeueCause } from './reactor.js';
import type { DesiredNeighbor, RefreshMode } from './types.js';

/** The netlink calls the operations use (NetlinkHandle has them; tests pass a fake). */
export interface NeighborKernel {
  neighSetMany(entries: readonly NeighSpec[]): Promise<NeighBulkResult>;
  neighDelMany(entries: readonly Pick<NeighSpec, 'ifindex' | 'dst'>[]): Promise<NeighBulkResult>;
  neighGet(key: Pick<NeighSpec, 'ifindex' | 'dst'>): Promise<Neigh>;
  /** Every entry, one at a time (valid during the call): no list of a million objects. */
  neighEach(each: (n: NeighFields) => void): Promise<number>;
}

export interface NeighborOpsParams {
  kernel: NeighborKernel;
  /** The refresh path entries are written for now (auto switches it with the table size). */
  mode: () => RefreshMode;
  protocol: number;
  observed: ObservedNeighbors;
  metrics: NeighborMetrics;
  log: Logger;
  /** Write new legacy entries in two steps (kernels before 5.16). */
  twoStep: boolean;
  /**
   * Events of the entries written that may be unread at most before a write waits for them
   * (pace.ts: what the event socket holds); 0: never wait.
   */
  backlog: number;
  /** Stops (false) or resumes (true) reading the neighbor-event socket (pace.ts). */
  reading?(on: boolean): void;
  /** Neighbor events read so far (pace.ts). */
  eventsRead?(): number;
  /** Overflows of the neighbor-event socket so far (pace.ts). */
  eventOverflows?(): number;
  /** Events waiting unread in the neighbor-event socket now, whoever caused them (pace.ts). */
  eventsQueued?(): number;
  /** Why a row is being written again (set by requeue, consumed here for the metrics). */
  causes: Map<string, RequeueCause>;
  /** Called by prune with desired keys whose entry the kernel does not have. */
  missing?(keys: readonly string[]): void;
  /** Whether (ifindex, ip) is a desired entry now (prune's membership test). */
  wanted(ifindex: number, ip: string): boolean;
  /** Where writes and deletes are reported as events (a few per burst). */
  events?: NeighborEvents;
}

/** Up to `max` keys of `objs` at the positions `at` that did not fail. */
function okKeys(
  objs: readonly DesiredNeighbor[],
  at: readonly number[],
  results: readonly (Error | undefined)[],
  max: number,
): string[] {
  const out: string[] = [];
  for (const i of at) {
    if (out.length >= max) break;
    if (results[i] === undefined) out.push(objs[i]!.key);
  }
  return out;
}

/** Up to this many deletes in a batch, entries the observed table lacks are asked of the kernel. */
const ASK_KERNEL_UP_TO = 256;

const isErrno = (err: unknown, ...names: string[]): boolean =>
  err instanceof NetlinkError && names.includes(err.errnoName);

export class NeighborOps implements Operations<DesiredNeighbor> {
  readonly #p: NeighborOpsParams;
  readonly #pacer: WritePacer;

  constructor(p: NeighborOpsParams) {
    this.#p = p;
    this.#pacer = new WritePacer({
      budget: p.backlog,
      read: p.eventsRead ?? (() => 0),
      overflows: p.eventOverflows,
      queued: p.eventsQueued,
      reading: p.reading,
    });
  }

  /** The entry as fibkeeper writes it on the `mode` path. */
  spec(d: DesiredNeighbor, mode: RefreshMode = this.#p.mode()): NeighSpec {
    // One object literal per mode: every spec of a batch has the same shape.
    if (mode === 'managed') {
      return {
        ifindex: d.ifindex,
        dst: d.nexthop,
        state: NUD_NONE,
        externLearned: true,
        protocol: this.#p.protocol,
        managed: true,
      };
    }
    return {
      ifindex: d.ifindex,
      dst: d.nexthop,
      state: NUD_NONE,
      externLearned: true,
      protocol: this.#p.protocol,
      flags: NTF_USE,
    };
  }

  /** Writes the entry (create or re-resolve). Idempotent. */
  async update(d: DesiredNeighbor): Promise<void> {
    const [err] = await this.updateBatch([d]);
    if (err !== undefined) throw err;
  }

  /**
   * Writes every entry that nobody else owns: an operator's or another agent's entry for the
   * same next hop is left alone (it already gives XDP a neighbor) and counts as success.
   */
  async updateBatch(objs: readonly DesiredNeighbor[]): Promise<BatchResult> {
    const results = new Array<Error | undefined>(objs.length);
    const todo: number[] = [];
    const specs: NeighSpec[] = [];
    const mode = this.#p.mode();
    let created = 0;
    /** Positions of the entries the kernel lacks (for events only). */
    const fresh = this.#p.events === undefined ? undefined : ([] as number[]);
    for (let i = 0; i < objs.length; i++) {
      const d = objs[i]!;
      const seen = this.#p.observed.find(d.ifindex, d.nexthop);
      if (seen !== undefined && isForeign(seen, this.#p.protocol)) continue;
      if (seen === undefined) {
        created++;
        fresh?.push(i);
      }
      todo.push(i);
      specs.push(this.spec(d, mode));
    }
    if (todo.length === 0) return results;
    if (mode === 'legacy' && this.#p.twoStep) await this.#createFirst(objs, todo);
    // Events per new entry: the kernel announces a legacy entry (NTF_USE) once, when it
    // resolves; a managed one (or a two-step legacy one) when it is created too.
    const events = created * (mode === 'legacy' && !this.#p.twoStep ? 1 : 2);
    if (events > 0) this.#pacer.writing(created, events);
    const out = await this.#p.kernel.neighSetMany(specs);
    if (events > 0) await this.#pacer.written();
    for (const f of out.failures) results[todo[f.index]!] = f.error;
    let inserts = 0;
    const by: Record<RequeueCause, number> = { deleted: 0, failed: 0, refresh: 0, mode: 0 };
    const causes = this.#p.causes;
    /** A few of the entries written again after a loss, with the cause (for events). */
    const repaired: [string, string][] = [];
    /** Every entry written for a reason (events: they are not new). */
    const caused = fresh === undefined ? undefined : new Set<string>();
    if (causes.size === 0) inserts = todo.length - out.failures.length;
    else {
      for (const i of todo) {
        const key = objs[i]!.key;
        const cause = causes.get(key);
        if (cause !== undefined) {
          causes.delete(key);
          caused?.add(key);
        }
        if (results[i] !== undefined) continue;
        if (cause === undefined) inserts++;
        else by[cause]++;
        if ((cause === 'deleted' || cause === 'failed') && repaired.length < 5) {
          repaired.push([key, cause]);
        }
      }
    }
    const ev = this.#p.events;
    if (ev !== undefined && fresh !== undefined) {
      // New entries: those the kernel lacked (a repaired one is reported as such).
      const fresh2 = caused!.size === 0 ? fresh : fresh.filter((i) => !caused!.has(objs[i]!.key));
      let n = 0;
      for (const i of fresh2) if (results[i] === undefined) n++;
      ev.written(n, (max) => okKeys(objs, fresh2, results, max));
      ev.repaired(repaired, by.deleted + by.failed);
    }
    this.#p.metrics.inserted(inserts);
    this.#p.metrics.reinserted('deleted', by.deleted);
    this.#p.metrics.reinserted('failed', by.failed);
    this.#p.metrics.refreshed(by.refresh);
    return results;
  }

  /**
   * Kernels before 5.16 ignore NTF_EXT_LEARNED when NTF_USE is set: create entries that do
   * not exist yet with extern_learn and the mark first. Without a link-layer address the
   * kernel answers EINVAL but keeps the new entry; the NTF_USE write then resolves it.
   */
  async #createFirst(objs: readonly DesiredNeighbor[], todo: readonly number[]): Promise<void> {
    const fresh = todo
      .map((i) => objs[i]!)
      .filter((d) => this.#p.observed.find(d.ifindex, d.nexthop) === undefined)
      .map((d) => ({
        ifindex: d.ifindex,
        dst: d.nexthop,
        state: NUD_STALE,
        externLearned: true,
        protocol: this.#p.protocol,
      }));
    if (fresh.length > 0) await this.#p.kernel.neighSetMany(fresh);
  }

  async delete(d: DesiredNeighbor): Promise<void> {
    const [err] = await this.deleteBatch([d]);
    if (err !== undefined) throw err;
  }

  /**
   * Deletes the entries that carry fibkeeper's mark; an entry someone else owns (or one that
   * is already gone) is left as it is and counts as success.
   */
  async deleteBatch(objs: readonly DesiredNeighbor[]): Promise<BatchResult> {
    const results = new Array<Error | undefined>(objs.length);
    for (const d of objs) this.#p.causes.delete(d.key);
    const owned = await this.#ownership(objs);
    const del: number[] = [];
    for (let i = 0; i < objs.length; i++) {
      const o = owned[i];
      if (o instanceof Error) results[i] = o;
      else if (o === true) del.push(i);
    }
    if (del.length === 0) return results;
    // Each delete is announced by one event: paced as writes are (1,000,000 deletes made
    // faster than they were read overflowed the event socket, and a full dump followed).
    this.#pacer.writing(del.length);
    const out = await this.#p.kernel.neighDelMany(
      del.map((i) => ({ ifindex: objs[i]!.ifindex, dst: objs[i]!.nexthop })),
    );
    await this.#pacer.written(out.failures.length);
    for (const f of out.failures) {
      if (!isErrno(f.error, 'ENOENT', 'ENODEV')) results[del[f.index]!] = f.error;
    }
    this.#p.metrics.deleted('reconcile', del.length - out.failures.length);
    this.#p.events?.deleted(del.length - out.failures.length, (max) =>
      okKeys(objs, del, results, max),
    );
    return results;
  }

  /**
   * Whether each entry is fibkeeper's now (true), someone else's (false) or gone
   * (undefined), from the observed table, which neighbor events keep current. An entry it
   * does not know is asked of the kernel when the batch is small (one get each,
   * pipelined); in a large batch (a device or an owner going away) it counts as
   * fibkeeper's, since fibkeeper wrote it and its event is merely still on the way.
   */
  async #ownership(objs: readonly DesiredNeighbor[]): Promise<(boolean | Error | undefined)[]> {
    const ask = objs.length <= ASK_KERNEL_UP_TO;
    const out = new Array<boolean | Error | undefined>(objs.length);
    const asked: Promise<void>[] = [];
    for (let i = 0; i < objs.length; i++) {
      const d = objs[i]!;
      const seen = this.#p.observed.find(d.ifindex, d.nexthop);
      if (seen !== undefined) out[i] = isOwned(seen, this.#p.protocol);
      else if (!ask) out[i] = true;
      else asked.push(this.#askKernel(d).then((o) => void (out[i] = o)));
    }
    if (asked.length > 0) await Promise.all(asked);
    return out;
  }

  /** Whether the kernel's entry is fibkeeper's (undefined: it has none). */
  async #askKernel(d: DesiredNeighbor): Promise<boolean | Error | undefined> {
    try {
      const n = await this.#p.kernel.neighGet({ ifindex: d.ifindex, dst: d.nexthop });
      const row = observedRow(n);
      return row === undefined ? undefined : isOwned(row, this.#p.protocol);
    } catch (err) {
      if (isErrno(err, 'ENOENT', 'ENODEV')) return undefined;
      return err instanceof Error ? err : new Error(describeError(err));
    }
  }

  /**
   * Deletes every entry of fibkeeper's own that is not desired, from a fresh dump (never from
   * a possibly partial event view), and reports desired entries the kernel lacks (as the
   * observed table, kept exact by events and dumps, shows them). Entries without the mark,
   * and marked ones someone wrote over, are never touched. Idempotent. The dump is read
   * entry by entry and the desired ones are looked up, not collected: a prune of a million
   * entries builds no set of them.
   */
  async prune(desired: Iterable<DesiredNeighbor>): Promise<void> {
    const stale: Pick<NeighSpec, 'ifindex' | 'dst'>[] = [];
    const protocol = this.#p.protocol;
    await this.#p.kernel.neighEach((n) => {
      if (n.protocol !== protocol || n.dst === undefined) return;
      if ((n.family !== AF_INET && n.family !== AF_INET6) || (n.flags & NTF_PROXY) !== 0) return;
      if (this.#p.wanted(n.ifindex, n.dst)) return;
      // Carries the mark but someone wrote over it, now or before (the observed table
      // remembers): not fibkeeper's to delete.
      const seen = this.#p.observed.find(n.ifindex, n.dst);
      if (!isOwned(n, protocol) || (seen !== undefined && seen.foreign === true)) return;
      stale.push({ ifindex: n.ifindex, dst: n.dst });
    });
    let failed: Error | undefined;
    if (stale.length > 0) {
      const out = await this.#p.kernel.neighDelMany(stale);
      const real = out.failures.filter((f) => !isErrno(f.error, 'ENOENT', 'ENODEV'));
      this.#p.metrics.deleted('prune', stale.length - out.failures.length);
      this.#p.log.info({ deleted: stale.length - out.failures.length }, 'pruned stale entries');
      if (real.length > 0) failed = real[0]!.error;
    }
    const missing: string[] = [];
    for (const d of desired) {
      if (this.#p.observed.find(d.ifindex, d.nexthop) === undefined) missing.push(d.key);
    }
    if (missing.length > 0) this.#p.missing?.(missing);
    if (failed !== undefined) throw failed;
  }
}
