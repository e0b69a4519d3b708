// The observed Neighbor table: the kernel's neighbor entries, from a dump plus neighbor
// events (subscribed before the dump). The policy that says whose an entry is and what an
// observed change means is in ownership.ts (re-exported here).
import { formatV4Number, parseDottedQuadI32 } from '../ipaddr/index.js';
import { AF_INET, AF_INET6, NeighFields, NTF_PROXY, NUD_FAILED } from '../netlink/index.js';
import type { Initializable } from '../statedb/index.js';
import { CHANGED, Entries, familyOf, MARK, type Entry, type NeighMessage } from './entry.js';
import { isForeign, type NeighState } from './ownership.js';
import { UnresolvedEntries } from './unresolved.js';
import { FIBKEEPER_NEIGH_PROTOCOL, splitNeighKey, type ObservedNeighbor } from './types.js';

export {
  isForeign,
  isOwned,
  observedRow,
  reactionTo,
  type NeighState,
  type Reaction,
} from './ownership.js';
export type { NeighMessage } from './entry.js';

/**
 * An observed change: the entry (ifindex, ip) and its state after the change (undefined:
 * the entry is gone). `after` may be the table's live entry: read it at once.
 */
export interface ObservedChange {
  readonly ifindex: number;
  readonly ip: string;
  readonly after: NeighState | undefined;
}

/**
 * What a device's map keys an entry with: an IPv4 address as a signed 32-bit number (to V8 a
 * small integer: hashed and compared without text, stored without a string), an IPv6
 * address as its canonical text.
 */
type IpKey = number | string;

function keyOfIp(ip: string): IpKey {
  return parseDottedQuadI32(ip) ?? ip;
}

function ipOfKey(k: IpKey): string {
  return typeof k === 'number' ? formatV4Number(k) : k;
}

/**
 * The key of the entry a message is about; undefined when the table does not keep it (not
 * IPv4/IPv6, no address, a proxy entry). A message read in place gives an IPv4 address as a
 * number: its text is never made.
 */
function keyOfMessage(n: NeighMessage): IpKey | undefined {
  if ((n.family !== AF_INET && n.family !== AF_INET6) || (n.flags & NTF_PROXY) !== 0) {
    return undefined;
  }
  if (n instanceof NeighFields) return n.dstBytes === 4 ? n.dst4 : n.dst;
  const dst = n.dst;
  return dst === undefined ? undefined : keyOfIp(dst);
}

/**
 * The observed table. It has no watchers (events are handled as they arrive), so it is a
 * plain map per device rather than a statedb Table: no revision log, no per-row node, no
 * composite key, an entry packed into a small object updated in place — which matters with
 * 100,000 entries changing state a few times each. It initializes with the first dump.
 */
export class ObservedNeighbors implements Initializable {
  readonly name = 'neighbors';
  /** fibkeeper's mark: what foreign is judged against. */
  readonly protocol: number;
  /** ifindex → ip (keyOfIp) → entry */
  readonly #byDevice = new Map<number, Entries<IpKey>>();
  #count = 0;
  /** Grows with every change (apply, load): what a cached census is checked against. */
  version = 0;
  readonly #init = deferred();

  /**
   * The string an IPv6 entry is kept under, when one is already in memory for that address
   * (a desired next hop's): a message read from a socket brings its own copy of the address.
   * (An IPv4 entry is kept under a number.)
   */
  readonly #intern: ((ifindex: number, ip: string) => string | undefined) | undefined;

  /** The clock of the unresolved entries' times (ms). */
  readonly #now: () => number;

  constructor(
    protocol = FIBKEEPER_NEIGH_PROTOCOL,
    intern?: (ifindex: number, ip: string) => string | undefined,
    now: () => number = Date.now,
  ) {
    this.protocol = protocol;
    this.#intern = intern;
    this.#now = now;
  }

  get initialized(): boolean {
    return this.#init.done;
  }

  waitInitialized(signal?: AbortSignal): Promise<void> {
    if (this.#init.done) return Promise.resolve();
    if (signal === undefined) return this.#init.promise;
    return new Promise((resolve, reject) => {
      const abort = (): void => reject(signal.reason);
      if (signal.aborted) return abort();
      signal.addEventListener('abort', abort, { once: true });
      this.#init.promise.then(() => {
        signal.removeEventListener('abort', abort);
        resolve();
      }, reject);
    });
  }

  /** Called once the first dump is loaded. */
  markInitialized(): void {
    this.#init.resolve();
  }

  get size(): number {
    return this.#count;
  }

  /**
   * The live entry of (ifindex, ip): read it at once, an event changes it in place.
   * Undefined when the kernel has none.
   */
  find(
    ifindex: number,
    ip: string,
  ): (NeighState & { readonly lladdr: string | undefined }) | undefined {
    return this.#byDevice.get(ifindex)?.get(keyOfIp(ip));
  }

  /** The entry with key "ifindex|ip", as a row of its own. */
  get(key: string): ObservedNeighbor | undefined {
    const { ifindex, ip } = splitNeighKey(key);
    const e = this.#byDevice.get(ifindex)?.get(keyOfIp(ip));
    return e === undefined ? undefined : rowOf(ifindex, ip, e);
  }

  /** Every entry, as rows of their own. */
  *values(): IterableIterator<ObservedNeighbor> {
    for (const [ifindex, m] of this.#byDevice) {
      for (const [k, e] of m) yield rowOf(ifindex, ipOfKey(k), e);
    }
  }

  /**
   * A neighbor event. Returns the entry after the change (the live entry: read it at once),
   * null when the entry went away, undefined when nothing changed. A FAILED entry reported
   * FAILED again counts as a change: the kernel does not report FAILED → INCOMPLETE, so a
   * second FAILED is the end of a new resolution attempt (which the legacy path retries).
   */
  apply(kind: 'new' | 'del', n: NeighMessage): NeighState | null | undefined {
    const k = keyOfMessage(n);
    return k === undefined ? undefined : this.#applyKey(kind, n, k);
  }

  #applyKey(kind: 'new' | 'del', n: NeighMessage, k: IpKey): Entry | null | undefined {
    let m = this.#byDevice.get(n.ifindex);
    const cur = m?.get(k);
    if (kind === 'del') {
      if (cur === undefined || m === undefined) return undefined;
      this.version++;
      this.#account(cur, n.ifindex, k, -1);
      this.#forget(n.ifindex, k);
      m.delete(k);
      this.#count--;
      if (m.size === 0) this.#byDevice.delete(n.ifindex);
      return null;
    }
    if (cur !== undefined) {
      this.#account(cur, n.ifindex, k, -1);
      const changed = cur.set(n, this.protocol);
      this.#account(cur, n.ifindex, k, 1);
      if (!changed) return (n.state & NUD_FAILED) !== 0 ? cur : undefined;
      this.version++;
      return cur;
    }
    this.version++;
    const key = typeof k === 'string' ? (this.#intern?.(n.ifindex, k) ?? k) : k;
    if (m === undefined) this.#byDevice.set(n.ifindex, (m = new Entries<IpKey>()));
    const e = m.add(key);
    e.set(n, this.protocol);
    e.setMark(this.#mark);
    this.#count++;
    this.#account(e, n.ifindex, key, 1);
    return e;
  }

  /** The parity of the current load: entries a load did not see keep the other one. */
  #mark = 0;
  /** A load (a dump) is under way. */
  #loading = false;
  /** Entries a load found gone, until the changes are taken. */
  #gone: { ifindex: number; ip: string }[] = [];

  /**
   * Starts loading a dump, entry by entry (loadEntry), without a list of it or a set of what
   * it saw: each entry the dump has takes the load's parity mark, and endLoad() removes the
   * ones left with the other. Called again before a retry of the same dump (it started
   * over): then every entry is unmarked first.
   */
  beginLoad(): void {
    if (this.#loading || this.#aborted) {
      // A retry of the dump, or a load after one that failed half-way: some entries carry
      // this load's mark already. Unmark them all.
      if (!this.#loading) this.#mark ^= MARK;
      this.#loading = true;
      this.#aborted = false;
      this.#unmarkAll();
      return;
    }
    this.#loading = true;
    this.#mark ^= MARK;
  }

  #aborted = false;

  #unmarkAll(): void {
    for (const m of this.#byDevice.values())
      for (const e of m.values()) e.setMark(this.#mark ^ MARK);
  }

  /** A load that failed: nothing is removed; the next load unmarks everything first. */
  abortLoad(): void {
    if (!this.#loading) return;
    this.#loading = false;
    this.#aborted = true;
  }

  /** One entry of the dump being loaded. */
  loadEntry(n: NeighMessage): void {
    const k = keyOfMessage(n);
    if (k === undefined) return;
    const after = this.#applyKey('new', n, k);
    const e = after ?? this.#byDevice.get(n.ifindex)?.get(k);
    if (e === undefined || e === null) return;
    e.setMark(this.#mark);
    if (after) e.bits |= CHANGED;
  }

  /** Ends the load: the entries the dump did not have are gone. */
  endLoad(): void {
    this.#loading = false;
    for (const [ifindex, m] of [...this.#byDevice]) {
      for (const [k, e] of m) {
        if (e.mark === this.#mark) continue;
        this.#account(e, ifindex, k, -1);
        this.#forget(ifindex, k);
        m.delete(k);
        this.#count--;
        this.version++;
        this.#gone.push({ ifindex, ip: ipOfKey(k) });
      }
      if (m.size === 0) this.#byDevice.delete(ifindex);
    }
  }

  /**
   * Hands over, once, every entry the last load changed, added or found gone, for the
   * reactions (which read the entry as it is now: `find`). A pass over the table.
   */
  takeChanges(fn: (ifindex: number, ip: string) => void): void {
    const gone = this.#gone;
    this.#gone = [];
    for (const g of gone) fn(g.ifindex, g.ip);
    for (const [ifindex, m] of this.#byDevice) {
      for (const [k, e] of m) {
        if ((e.bits & CHANGED) === 0) continue;
        e.bits &= ~CHANGED;
        fn(ifindex, ipOfKey(k));
      }
    }
  }

  /**
   * Replaces the table with a dump given as a list (beginLoad, loadEntry for each, endLoad)
   * and returns what differs: changed, added or gone.
   */
  load(entries: readonly NeighMessage[]): { ifindex: number; ip: string }[] {
    this.beginLoad();
    for (const n of entries) this.loadEntry(n);
    this.endLoad();
    const out: { ifindex: number; ip: string }[] = [];
    this.takeChanges((ifindex, ip) => out.push({ ifindex, ip }));
    return out;
  }

  /** fibkeeper's own entries by NUD state (index: stateIndex), kept as entries change. */
  readonly #owned = new Array<number>(STATE_NAMES.length).fill(0);
  /** Foreign entries as "ifindex|ip" (there are few). */
  readonly #foreignKeys = new Set<string>();

  /** fibkeeper's own entries whose next hop did not answer, since when (unresolved.ts). */
  readonly #unresolved = new UnresolvedEntries<IpKey>();

  /**
   * Counts the entry in (sign 1) or out of (sign -1) the census. A change accounts the entry
   * out, then in again (which also tells the unresolved set its new state); a deletion only
   * out, and the caller forgets it there (#forget).
   */
  #account(e: Entry, ifindex: number, k: IpKey, sign: 1 | -1): void {
    let owned = false;
    if (isForeign(e, this.protocol)) {
      const key = `${ifindex}|${ipOfKey(k)}`;
      if (sign > 0) this.#foreignKeys.add(key);
      else this.#foreignKeys.delete(key);
    } else if (e.protocol === this.protocol) {
      owned = true;
      this.#owned[stateIndex(e.state)]! += sign;
    }
    if (sign > 0) this.#unresolved.note(ifindex, k, owned ? e.state : undefined, this.#now);
  }

  /** The entry (ifindex, k) is gone from the table. */
  #forget(ifindex: number, k: IpKey): void {
    this.#unresolved.note(ifindex, k, undefined, this.#now);
  }

  /** fibkeeper's entries that went FAILED and have not resolved since (cheap). */
  get unresolvedCount(): number {
    return this.#unresolved.size;
  }

  /**
   * Calls `fn` for each of fibkeeper's entries that went FAILED after `after` and at `upTo`
   * (ms, this table's clock) or earlier and have not resolved since, for the next hops
   * `wanted` says fibkeeper wants; in no order. An entry outside the window costs no text.
   */
  forEachUnresolved(
    after: number,
    upTo: number,
    wanted: (ifindex: number, ip: string) => boolean,
    fn: (ifindex: number, ip: string, since: number) => void,
  ): void {
    this.#unresolved.forEach((ifindex, k, t) => {
      if (t > upTo || t <= after) return;
      const ip = ipOfKey(k);
      if (wanted(ifindex, ip)) fn(ifindex, ip, t);
    });
  }

  /** forEachUnresolved up to `since`, as rows, oldest first. */
  unresolvedSince(
    since: number,
    wanted: (ifindex: number, ip: string) => boolean,
  ): { ifindex: number; ip: string; state: number; since: number }[] {
    const out: { ifindex: number; ip: string; state: number; since: number }[] = [];
    this.forEachUnresolved(-Infinity, since, wanted, (ifindex, ip, t) => {
      out.push({ ifindex, ip, state: this.stateOf(ifindex, ip), since: t });
    });
    return out.sort((a, b) => a.since - b.since);
  }

  /** The NUD state of the entry (ifindex, ip) in the table (0 when absent). */
  stateOf(ifindex: number, ip: string): number {
    return this.#byDevice.get(ifindex)?.get(keyOfIp(ip))?.state ?? 0;
  }

  /**
   * fibkeeper's own entries by NUD state name (lower case, as metrics label them), and how
   * many foreign entries hold a next hop that `wanted` says fibkeeper wants. Kept as the
   * entries change: no pass over the table.
   */
  census(wanted: (ifindex: number, ip: string) => boolean): {
    byState: Map<string, number>;
    foreignWanted: number;
  } {
    const byState = new Map<string, number>();
    this.#owned.forEach((n, i) => {
      if (n > 0) byState.set(STATE_NAMES[i]!, n);
    });
    let foreignWanted = 0;
    for (const key of this.#foreignKeys) {
      const { ifindex, ip } = splitNeighKey(key);
      if (wanted(ifindex, ip)) foreignWanted++;
    }
    return { byState, foreignWanted };
  }
}

/** NUD state names as metrics label them, by stateIndex. */
const STATE_NAMES = [
  'incomplete',
  'reachable',
  'stale',
  'delay',
  'probe',
  'failed',
  'noarp',
  'permanent',
  'none',
];

/** The index in STATE_NAMES of a NUD state (its lowest bit; none for 0). */
function stateIndex(state: number): number {
  if (state === 0) return 8;
  return 31 - Math.clz32(state & -state);
}

function rowOf(ifindex: number, ip: string, e: Entry): ObservedNeighbor {
  return {
    ifindex,
    ip,
    family: familyOf(ip),
    state: e.state,
    flags: e.flags,
    flagsExt: e.flagsExt,
    protocol: e.protocol,
    lladdr: e.lladdr,
  };
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
