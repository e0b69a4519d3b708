// The calculator's answers: for each selected device, the next hops each forwardable IP has
// there, and the DesiredNeighbor rows they make, each with references back to the IPs that
// need it. The calculator decides what to look up and when; this keeps what the lookups said
// and writes the desired table to match.
import type { Table, TableWriter } from '../statedb/index.js';
import { familyOfText } from './nexthop.js';
import { DesiredRow, type RefSet } from './refset.js';
import { neighKey, type DesiredNeighbor } from './types.js';

/** No next hop: released, unreachable, or the device dropped. */
export const NONE: readonly string[] = [];

/**
 * For assign(): the IP is its own one next hop (on-link). Checked against what is known
 * before a list is made: a full resync of unchanged on-link IPs allocates none.
 */
export const SELF_HOP: unique symbol = Symbol('self');

/** Next hops of one IP on one device: the one next hop itself, or several. */
type Hops = string | readonly string[];

export class NextHopAssignments {
  readonly #desired: Table<DesiredNeighbor>;
  /**
   * ifindex → forwardable IP → its next hops on that device, but for the common case of an
   * on-link IP that is its own one next hop: that one is not kept here (a map entry fewer
   * per IP) but read from the desired table — its row (ifindex, ip) references the IP
   * itself (#hopsOf). One other next hop is kept as the string, several as an array. A
   * device stays in the map (maybe with no entry) until it is dropped.
   */
  readonly #byDevice = new Map<number, Map<string, Hops>>();

  constructor(desired: Table<DesiredNeighbor>) {
    this.#desired = desired;
  }

  /** The devices that have (or had since they were selected) an assignment. */
  devices(): IterableIterator<number> {
    return this.#byDevice.keys();
  }

  /** The next hops of one forwardable IP, by device. */
  nexthopsOf(ip: string): Map<number, readonly string[]> {
    const out = new Map<number, readonly string[]>();
    for (const d of this.#byDevice.keys()) {
      const nh = this.#hopsOf(d, ip);
      if (nh !== undefined) out.set(d, hopList(nh));
    }
    return out;
  }

  /** The string kept for `ip` when it is its own one next hop on the device (on-link). */
  onLinkString(ifindex: number, ip: string): string | undefined {
    const h = this.#hopsOf(ifindex, ip);
    return typeof h === 'string' && h === ip ? h : undefined;
  }

  /** Sets the next hops of (ifindex, ip), adjusting references and desired rows. */
  assign(
    w: TableWriter<DesiredNeighbor>,
    ifindex: number,
    ip: string,
    hops: readonly string[] | typeof SELF_HOP,
  ): void {
    let m = this.#byDevice.get(ifindex);
    const cur = m === undefined ? undefined : this.#hopsOf(ifindex, ip, m);
    if (hops === SELF_HOP && cur === ip) return;
    const nexthops = hops === SELF_HOP ? [ip] : hops;
    if (sameHops(cur, nexthops)) return;
    const old = cur === undefined ? NONE : hopList(cur);
    for (const nh of old) if (!nexthops.includes(nh)) this.#unref(w, ifindex, nh, ip);
    for (const nh of nexthops) if (!old.includes(nh)) this.#ref(w, ifindex, nh, ip);
    if (nexthops.length === 0) {
      m?.delete(ip);
      return;
    }
    if (m === undefined) this.#byDevice.set(ifindex, (m = new Map()));
    // Its own one next hop: the desired row (ifindex, ip) says so, referencing the IP.
    if (nexthops.length === 1 && nexthops[0] === ip) m.delete(ip);
    else m.set(ip, nexthops.length === 1 ? nexthops[0]! : nexthops);
  }

  /** Drops every assignment of `ip`, on every device (inside the caller's write). */
  release(w: TableWriter<DesiredNeighbor>, ip: string): void {
    for (const [d] of this.#byDevice) this.assign(w, d, ip, NONE);
  }

  /** Drops every assignment on a device that left the selection. */
  dropDevice(ifindex: number): void {
    const m = this.#byDevice.get(ifindex);
    if (m === undefined) return;
    // The IPs with next hops there: those in the map, and those that are their own (the
    // device's desired rows that reference their own next hop).
    const ips = new Set(m.keys());
    for (const row of this.#desired.list()) {
      if (row.ifindex === ifindex && row.refs.has(row.nexthop)) ips.add(row.nexthop);
    }
    this.#desired.write((w) => {
      for (const ip of ips) this.assign(w, ifindex, ip, NONE);
    });
    this.#byDevice.delete(ifindex);
  }

  /**
   * The next hops of `ip` on a device: kept in the device's map, or (an on-link IP that is
   * its own one next hop) the desired row (ifindex, ip) referencing the IP; undefined: none.
   */
  #hopsOf(ifindex: number, ip: string, m = this.#byDevice.get(ifindex)): Hops | undefined {
    const h = m?.get(ip);
    if (h !== undefined || m === undefined) return h;
    const row = this.#refsOf(neighKey(ifindex, ip)) as DesiredRow | undefined;
    return row !== undefined && row.has(ip) ? row.nexthop : undefined;
  }

  /** The forwardable IPs that need desired row `key` (the row itself: a DesiredRow). */
  #refsOf(key: string): RefSet | undefined {
    return this.#desired.get(key) as DesiredRow | undefined;
  }

  #ref(w: TableWriter<DesiredNeighbor>, ifindex: number, nexthop: string, ip: string): void {
    const key = neighKey(ifindex, nexthop);
    let s = this.#refsOf(key);
    if (s === undefined) {
      const row = new DesiredRow(key, ifindex, nexthop, familyOfText(nexthop));
      w.upsert(row);
      s = row;
    }
    s.add(ip);
  }

  #unref(w: TableWriter<DesiredNeighbor>, ifindex: number, nexthop: string, ip: string): void {
    const key = neighKey(ifindex, nexthop);
    const s = this.#refsOf(key);
    if (s === undefined) return;
    s.delete(ip);
    if (s.size === 0) w.delete(key);
  }
}

function hopList(h: Hops): readonly string[] {
  return typeof h === 'string' ? [h] : h;
}

function sameHops(cur: Hops | undefined, next: readonly string[]): boolean {
  if (cur === undefined) return next.length === 0;
  if (typeof cur === 'string') return next.length === 1 && next[0] === cur;
  return cur.length === next.length && cur.every((x, i) => x === next[i]);
}
