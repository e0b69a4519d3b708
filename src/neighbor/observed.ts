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
  type Neigh,
} from '../netlink/index.js';
import type { Initializable } from '../statedb/index.js';
import {
  FIBKEEPER_NEIGH_PROTOCOL,
  splitNeighKey,
  type ObservedNeighbor,
  type RefreshMode,
} from './types.js';

/** What the reactions and the ownership rules read of an entry. */
export interface NeighState {
  /** NUD_* */
  readonly state: number;
  /** NTF_* */
  readonly flags: number;
  /** NDA_FLAGS_EXT (NTF_EXT_MANAGED) */
  readonly flagsExt: number;
  /** NDA_PROTOCOL; undefined when the entry carries none. */
  readonly protocol: number | undefined;
  /**
   * The observed table found the entry foreign once and remembers it until the entry
   * disappears (see isForeign); absent on a row read from a dump.
   */
  readonly foreign?: boolean;
}

/** fibkeeper wrote the entry and nobody has written over it since. */
export function isOwned(n: NeighState, protocol: number): boolean {
  return n.protocol === protocol && !isForeign(n, protocol);
}

/**
 * Someone else owns the entry; fibkeeper neither writes over it nor deletes it, and takes the
 * next hop back only once the entry is gone. Foreign is:
 *   - a PERMANENT or NOARP entry, whoever wrote it (the kernel never puts fibkeeper's
 *     entries in these states; `nud noarp`/`nud permanent` are how an operator pins one);
 *   - an entry with another protocol, or with extern_learn but without fibkeeper's mark;
 *   - fibkeeper's mark without its extern_learn flag in any state but FAILED: another writer
 *     replaced the entry (an admin write sets the flags it is given and keeps the protocol)
 *     — FAILED without the flags is the first half of `ip neigh del`, whose deletion follows;
 *   - an entry the observed table has seen foreign before (`foreign`), until it disappears.
 * A plain entry the kernel learned by itself (no mark, no flags, a dynamic state) is not
 * foreign: fibkeeper adopts it by writing its own flags over it (state and lladdr are kept).
 */
export function isForeign(n: NeighState, protocol: number): boolean {
  if (n.foreign === true || (n.state & (NUD_PERMANENT | NUD_NOARP)) !== 0) return true;
  if (n.protocol === protocol) {
    return (n.flags & NTF_EXT_LEARNED) === 0 && (n.state & NUD_FAILED) === 0;
  }
  if ((n.flags & NTF_EXT_LEARNED) !== 0) return true;
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

const HEALTHY = NUD_REACHABLE | NUD_DELAY | NUD_PROBE;

/**
 * What an observed change of a desired entry calls for. `after` is undefined when the entry
 * was deleted. A managed entry that FAILED needs nothing: the kernel re-resolves managed
 * entries by itself, so rewriting it would only add ARP.
 */
export function reactionTo(
  after: NeighState | undefined,
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

/**
 * An observed change: the entry (ifindex, ip) and its state after the change (undefined:
 * the entry is gone). `after` may be the table's live entry: read it at once.
 */
export interface ObservedChange {
  readonly ifindex: number;
  readonly ip: string;
  readonly after: NeighState | undefined;
}

/** The kernel's "no protocol" and the bits an entry keeps of NDA_FLAGS_EXT. */
const NO_PROTOCOL = 0x1ff;
const EXT_BITS = 0x3;
/** Seen foreign (sticky until the entry disappears): above the protocol's 9 bits. */
const FOREIGN = 1 << 27;
/** Which load (dump) saw the entry last, as a parity bit: the others are gone. */
const MARK = 1 << 28;
/** The last load changed or added the entry (until takeChanges hands it over). */
const CHANGED = 1 << 29;
/** The bits of an entry that are its own, not the message's. */
const KEEP = FOREIGN | MARK | CHANGED;

/**
 * One entry, packed: state, flags, the low NDA_FLAGS_EXT bits and the protocol in one small
 * integer, a 6-byte lladdr in two 24-bit halves (any other length as text). Updated in
 * place by events, so an event that changes an entry allocates nothing here.
 */
class Entry implements NeighState {
  /**
   * state | flags << 8 | (flagsExt & EXT_BITS) << 16 | (protocol ?? NO_PROTOCOL) << 18
   * | FOREIGN
   */
  bits = 0;
  macHi = -1;
  macLo = -1;
  macText: string | undefined = undefined;

  get state(): number {
    return this.bits & 0xff;
  }
  get flags(): number {
    return (this.bits >>> 8) & 0xff;
  }
  get flagsExt(): number {
    return (this.bits >>> 16) & EXT_BITS;
  }
  get protocol(): number | undefined {
    const p = (this.bits >>> 18) & NO_PROTOCOL;
    return p === NO_PROTOCOL ? undefined : p;
  }
  get foreign(): boolean {
    return (this.bits & FOREIGN) !== 0;
  }
  get mark(): number {
    return this.bits & MARK;
  }
  setMark(mark: number): void {
    this.bits = (this.bits & ~MARK) | mark;
  }
  get lladdr(): string | undefined {
    if (this.macText !== undefined) return this.macText;
    if (this.macHi < 0) return undefined;
    return `${hex3(this.macHi)}:${hex3(this.macLo)}`;
  }

  /**
   * Sets the entry from a message; false when nothing changed. Marks it foreign (for good)
   * when it looks foreign to `protocol`, fibkeeper's mark.
   */
  set(n: NeighMessage, protocol: number): boolean {
    const p = n.protocol === undefined || n.protocol > 0xff ? NO_PROTOCOL : n.protocol;
    const bits =
      (n.state & 0xff) |
      ((n.flags & 0xff) << 8) |
      ((n.flagsExt & EXT_BITS) << 16) |
      (p << 18) |
      (this.bits & KEEP);
    let hi = -1;
    let lo = -1;
    let text: string | undefined = undefined;
    const mac = n.lladdr;
    if (mac !== undefined && mac !== '') {
      hi = macHalf(mac, 0);
      lo = hi < 0 ? -1 : macHalf(mac, 9);
      if (lo < 0 || mac.length !== 17 || mac.charCodeAt(8) !== 58) {
        hi = -1;
        lo = -1;
        text = mac;
      }
    }
    if (bits === this.bits && hi === this.macHi && lo === this.macLo && text === this.macText) {
      return false;
    }
    this.bits = bits;
    if ((bits & FOREIGN) === 0 && isForeign(this, protocol)) this.bits |= FOREIGN;
    this.macHi = hi;
    this.macLo = lo;
    this.macText = text;
    return true;
  }
}

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** Three "xx:" bytes of a MAC at `from` as a 24-bit number; -1 when not in that form. */
function macHalf(mac: string, from: number): number {
  let v = 0;
  for (let i = 0; i < 3; i++) {
    const o = from + 3 * i;
    const a = hexVal(mac.charCodeAt(o));
    const b = hexVal(mac.charCodeAt(o + 1));
    if (a < 0 || b < 0 || (i < 2 && mac.charCodeAt(o + 2) !== 58)) return -1;
    v = (v << 8) | (a << 4) | b;
  }
  return v;
}

const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function hex3(v: number): string {
  return `${HEX2[(v >>> 16) & 0xff]}:${HEX2[(v >>> 8) & 0xff]}:${HEX2[v & 0xff]}`;
}

function familyOf(ip: string): 4 | 6 {
  return ip.includes(':') ? 6 : 4;
}

/** What the table reads of a neighbor message: a parsed Neigh or NeighFields read in place. */
export type NeighMessage = Pick<
  Neigh,
  'family' | 'ifindex' | 'state' | 'flags' | 'flagsExt' | 'dst' | 'lladdr' | 'protocol'
>;

/** The message is about an entry the table keeps (IPv4/IPv6, an address, not a proxy). */
function kept(n: NeighMessage): n is NeighMessage & { dst: string } {
  return (
    (n.family === AF_INET || n.family === AF_INET6) &&
    n.dst !== undefined &&
    (n.flags & NTF_PROXY) === 0
  );
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
  /** ifindex → ip → entry */
  private readonly byDevice = new Map<number, Map<string, Entry>>();
  private count = 0;
  /** Grows with every change (apply, load): what a cached census is checked against. */
  version = 0;
  private readonly init = deferred();

  /**
   * The string an entry is kept under, when one is already in memory for that address (a
   * desired next hop's): a message read from a socket brings its own copy of the address,
   * and 1,000,000 entries would keep 1,000,000 copies.
   */
  private readonly intern: ((ifindex: number, ip: string) => string | undefined) | undefined;

  constructor(
    protocol = FIBKEEPER_NEIGH_PROTOCOL,
    intern?: (ifindex: number, ip: string) => string | undefined,
  ) {
    this.protocol = protocol;
    this.intern = intern;
  }

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
    return this.count;
  }

  /**
   * The live entry of (ifindex, ip): read it at once, an event changes it in place.
   * Undefined when the kernel has none.
   */
  find(
    ifindex: number,
    ip: string,
  ): (NeighState & { readonly lladdr: string | undefined }) | undefined {
    return this.byDevice.get(ifindex)?.get(ip);
  }

  /** The entry with key "ifindex|ip", as a row of its own. */
  get(key: string): ObservedNeighbor | undefined {
    const { ifindex, ip } = splitNeighKey(key);
    const e = this.byDevice.get(ifindex)?.get(ip);
    return e === undefined ? undefined : rowOf(ifindex, ip, e);
  }

  /** Every entry, as rows of their own. */
  *values(): IterableIterator<ObservedNeighbor> {
    for (const [ifindex, m] of this.byDevice) for (const [ip, e] of m) yield rowOf(ifindex, ip, e);
  }

  /**
   * A neighbor event. Returns the entry after the change (the live entry: read it at once),
   * null when the entry went away, undefined when nothing changed. A FAILED entry reported
   * FAILED again counts as a change: the kernel does not report FAILED → INCOMPLETE, so a
   * second FAILED is the end of a new resolution attempt (which the legacy path retries).
   */
  apply(kind: 'new' | 'del', n: NeighMessage): NeighState | null | undefined {
    if (!kept(n)) return undefined;
    let m = this.byDevice.get(n.ifindex);
    const cur = m?.get(n.dst);
    if (kind === 'del') {
      if (cur === undefined || m === undefined) return undefined;
      this.version++;
      this.account(cur, n.ifindex, n.dst, -1);
      m.delete(n.dst);
      this.count--;
      if (m.size === 0) this.byDevice.delete(n.ifindex);
      return null;
    }
    if (cur !== undefined) {
      this.account(cur, n.ifindex, n.dst, -1);
      const changed = cur.set(n, this.protocol);
      this.account(cur, n.ifindex, n.dst, 1);
      if (!changed) return (n.state & NUD_FAILED) !== 0 ? cur : undefined;
      this.version++;
      return cur;
    }
    this.version++;
    const e = new Entry();
    e.set(n, this.protocol);
    e.setMark(this.mark);
    const ip = this.intern?.(n.ifindex, n.dst) ?? n.dst;
    if (m === undefined) this.byDevice.set(n.ifindex, (m = new Map()));
    m.set(ip, e);
    this.count++;
    this.account(e, n.ifindex, ip, 1);
    return e;
  }

  /** The parity of the current load: entries a load did not see keep the other one. */
  private mark = 0;
  /** A load (a dump) is under way. */
  private loading = false;
  /** Entries a load found gone, until the changes are taken. */
  private gone: { ifindex: number; ip: string }[] = [];

  /**
   * Starts loading a dump, entry by entry (loadEntry), without a list of it or a set of what
   * it saw: each entry the dump has takes the load's parity mark, and endLoad() removes the
   * ones left with the other. Called again before a retry of the same dump (it started
   * over): then every entry is unmarked first.
   */
  beginLoad(): void {
    if (this.loading || this.aborted) {
      // A retry of the dump, or a load after one that failed half-way: some entries carry
      // this load's mark already. Unmark them all.
      if (!this.loading) this.mark ^= MARK;
      this.loading = true;
      this.aborted = false;
      this.unmarkAll();
      return;
    }
    this.loading = true;
    this.mark ^= MARK;
  }

  private aborted = false;

  private unmarkAll(): void {
    for (const m of this.byDevice.values()) for (const e of m.values()) e.setMark(this.mark ^ MARK);
  }

  /** A load that failed: nothing is removed; the next load unmarks everything first. */
  abortLoad(): void {
    if (!this.loading) return;
    this.loading = false;
    this.aborted = true;
  }

  /** One entry of the dump being loaded. */
  loadEntry(n: NeighMessage): void {
    if (!kept(n)) return;
    const after = this.apply('new', n);
    const e = after ?? this.byDevice.get(n.ifindex)?.get(n.dst);
    if (!(e instanceof Entry)) return;
    e.setMark(this.mark);
    if (after) e.bits |= CHANGED;
  }

  /** Ends the load: the entries the dump did not have are gone. */
  endLoad(): void {
    this.loading = false;
    for (const [ifindex, m] of [...this.byDevice]) {
      for (const [ip, e] of m) {
        if (e.mark === this.mark) continue;
        this.account(e, ifindex, ip, -1);
        m.delete(ip);
        this.count--;
        this.version++;
        this.gone.push({ ifindex, ip });
      }
      if (m.size === 0) this.byDevice.delete(ifindex);
    }
  }

  /**
   * Hands over, once, every entry the last load changed, added or found gone, for the
   * reactions (which read the entry as it is now: `find`). A pass over the table.
   */
  takeChanges(fn: (ifindex: number, ip: string) => void): void {
    const gone = this.gone;
    this.gone = [];
    for (const g of gone) fn(g.ifindex, g.ip);
    for (const [ifindex, m] of this.byDevice) {
      for (const [ip, e] of m) {
        if ((e.bits & CHANGED) === 0) continue;
        e.bits &= ~CHANGED;
        fn(ifindex, ip);
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
  private readonly owned = new Array<number>(STATE_NAMES.length).fill(0);
  /** Foreign entries as "ifindex|ip" (there are few). */
  private readonly foreignKeys = new Set<string>();

  /** Counts the entry in (sign 1) or out of (sign -1) the census. */
  private account(e: Entry, ifindex: number, ip: string, sign: 1 | -1): void {
    if (isForeign(e, this.protocol)) {
      if (sign > 0) this.foreignKeys.add(`${ifindex}|${ip}`);
      else this.foreignKeys.delete(`${ifindex}|${ip}`);
    } else if (e.protocol === this.protocol) {
      this.owned[stateIndex(e.state)]! += sign;
    }
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
    this.owned.forEach((n, i) => {
      if (n > 0) byState.set(STATE_NAMES[i]!, n);
    });
    let foreignWanted = 0;
    for (const key of this.foreignKeys) {
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
