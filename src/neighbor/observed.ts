// The observed Neighbor table: the kernel's neighbor entries, from a dump plus neighbor
// events (subscribed before the dump), and the policy that says what an observed change
// means for an entry fibkeeper wants (pure).
import {
  AF_INET,
  AF_INET6,
  NTF_EXT_LEARNED,
  NTF_EXT_MANAGED,
  NTF_PROXY,
  NUD_DELAY,
  NUD_FAILED,
  NUD_NOARP,
  NUD_PERMANENT,
  NUD_PROBE,
  NUD_REACHABLE,
  NUD_STALE,
  nudStateNames,
  type Neigh,
} from '../netlink/index.js';
import type { Initializable } from '../statedb/index.js';
import { neighKey, type ObservedNeighbor, type RefreshMode } from './types.js';

/** The entry carries fibkeeper's protocol mark. */
export function isOwned(n: ObservedNeighbor, protocol: number): boolean {
  return n.protocol === protocol;
}

/**
 * Someone else owns the entry: an operator's permanent or extern_learn entry, or one marked
 * by another protocol. fibkeeper neither overwrites nor deletes it. A plain entry the kernel
 * learned by itself (no mark, not permanent, not extern_learn) is not foreign: fibkeeper
 * adopts it by writing its own flags over it (the state and lladdr are kept).
 */
export function isForeign(n: ObservedNeighbor, protocol: number): boolean {
  if (n.protocol === protocol) return false;
  if ((n.flags & NTF_EXT_LEARNED) !== 0 || (n.state & NUD_PERMANENT) !== 0) return true;
  return n.protocol !== undefined && n.protocol !== 0;
}

export type Reaction =
  /** Nothing to do. */
  | 'none'
  /** The entry went away (deleted, flushed): write it again. */
  | 'deleted'
  /** FAILED and the kernel will not retry by itself (not managed): write it again. */
  | 'failed'
  /** STALE on the legacy path: make the kernel re-resolve it. */
  | 'stale'
  /** Resolved (REACHABLE, or on its way: DELAY/PROBE): forget past losses. */
  | 'healthy';

const HEALTHY = NUD_REACHABLE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;

/**
 * What an observed change of a desired entry calls for. `after` is undefined when the entry
 * was deleted. A managed entry that FAILED needs nothing: the kernel re-resolves managed
 * entries by itself, so rewriting it would only add ARP.
 */
export function reactionTo(
  after: ObservedNeighbor | undefined,
  mode: RefreshMode,
  protocol: number,
): Reaction {
  if (after === undefined) return 'deleted';
  if (isForeign(after, protocol)) return 'none';
  // Not as fibkeeper wrote it: a plain entry the kernel learned in place of ours, or ours
  // stripped of its flags (`ip neigh del` first turns the entry FAILED without them).
  if (after.protocol !== protocol || (after.flags & NTF_EXT_LEARNED) === 0) return 'deleted';
  if (mode === 'managed' && (after.flagsExt & NTF_EXT_MANAGED) === 0) return 'deleted';
  if (after.state & NUD_FAILED) return mode === 'managed' ? 'none' : 'failed';
  if (after.state & NUD_STALE) return mode === 'legacy' ? 'stale' : 'healthy';
  if (after.state & HEALTHY) return 'healthy';
  return 'none'; // INCOMPLETE, NONE: resolution under way
}

/** The row for a neighbor message; undefined for proxy, bridge and address-less entries. */
export function observedRow(n: Neigh): ObservedNeighbor | undefined {
  if ((n.family !== AF_INET && n.family !== AF_INET6) || n.dst === undefined) return undefined;
  if (n.flags & NTF_PROXY) return undefined;
  return {
    ifindex: n.ifindex,
    ip: n.dst,
    family: n.family === AF_INET ? 4 : 6,
    state: n.state,
    flags: n.flags,
    flagsExt: n.flagsExt,
    protocol: n.protocol,
    lladdr: n.lladdr,
  };
}

function sameObserved(a: ObservedNeighbor, b: ObservedNeighbor): boolean {
  return (
    a.state === b.state &&
    a.flags === b.flags &&
    a.flagsExt === b.flagsExt &&
    a.protocol === b.protocol &&
    a.lladdr === b.lladdr
  );
}

/** One observed change: the key, and the entry before and after (undefined: absent). */
export interface ObservedChange {
  key: string;
  before: ObservedNeighbor | undefined;
  after: ObservedNeighbor | undefined;
}

/**
 * The observed table. It has no watchers (events are handled as they arrive), so it is a
 * plain map rather than a statedb Table: no revision log, no per-row node, which matters
 * with 100,000 entries changing state a few times each. It initializes with the first dump.
 */
export class ObservedNeighbors implements Initializable {
  readonly name = 'neighbors';
  private readonly rows = new Map<string, ObservedNeighbor>();
  private readonly init = deferred();

  get initialized(): boolean {
    return this.init.done;
  }

  waitInitialized(signal?: AbortSignal): Promise<void> {
    if (this.init.done) return Promise.resolve();
    if (signal === undefined) return this.init.promise;
    return new Promise((resolve, reject) => {
      const abort = (): void => reject(signal.reason);
      if (signal.aborted) return abort();
      signal.addEventListener('abort', abort, { once: true });
      this.init.promise.then(() => {
        signal.removeEventListener('abort', abort);
        resolve();
      }, reject);
    });
  }

  /** Called once the first dump is loaded. */
  markInitialized(): void {
    this.init.resolve();
  }

  get size(): number {
    return this.rows.size;
  }

  get(key: string): ObservedNeighbor | undefined {
    return this.rows.get(key);
  }

  values(): IterableIterator<ObservedNeighbor> {
    return this.rows.values();
  }

  /** A neighbor event; returns the change, or undefined when nothing changed. */
  apply(kind: 'new' | 'del', n: Neigh): ObservedChange | undefined {
    const row = observedRow(n);
    if (row === undefined) return undefined;
    const key = neighKey(row.ifindex, row.ip);
    const before = this.rows.get(key);
    if (kind === 'del') {
      if (before === undefined) return undefined;
      this.rows.delete(key);
      return { key, before, after: undefined };
    }
    if (before !== undefined && sameObserved(before, row)) return undefined;
    this.rows.set(key, row);
    return { key, before, after: row };
  }

  /** Replaces the table with a dump; returns what differs (as events would have said). */
  load(entries: readonly Neigh[]): ObservedChange[] {
    const changes: ObservedChange[] = [];
    const seen = new Set<string>();
    for (const n of entries) {
      const c = this.apply('new', n);
      const row = observedRow(n);
      if (row !== undefined) seen.add(neighKey(row.ifindex, row.ip));
      if (c !== undefined) changes.push(c);
    }
    for (const [key, row] of [...this.rows]) {
      if (seen.has(key)) continue;
      this.rows.delete(key);
      changes.push({ key, before: row, after: undefined });
    }
    return changes;
  }

  /** Entries with fibkeeper's mark, by NUD state name (lower case, as metrics label them). */
  ownedByState(protocol: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const r of this.rows.values()) {
      if (r.protocol !== protocol) continue;
      const name = (nudStateNames(r.state)[0] ?? 'none').toLowerCase();
      out.set(name, (out.get(name) ?? 0) + 1);
    }
    return out;
  }
}

function deferred(): { promise: Promise<void>; resolve(): void; done: boolean } {
  let resolve: () => void = () => undefined;
  const d = {
    promise: new Promise<void>((r) => (resolve = r)),
    done: false,
    resolve: () => {
      d.done = true;
      resolve();
    },
  };
  return d;
}
