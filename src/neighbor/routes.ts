// The Route table, from route events (IPv4 and IPv6, every table), used only as the change
// signal for next-hop recomputation: the next hop itself always comes from the kernel.
//
// Which (forwardable IP, device) pairs can a route change affect? Next hops are looked up
// with the output device fixed (`ip route get IP oif DEV fibmatch`), and such a lookup only
// matches routes with a leg on DEV (IPv4 skips the others and falls back to shorter
// prefixes; IPv6 is strict). So a change of route P in table T affects (x, D) only when
//   - x is inside P,
//   - P had or has a leg on D (or P has no device at all: blackhole, unreachable, nexthop
//     objects — then every device),
//   - and table T has no route more specific than P that contains x and has a leg on D:
//     such a route answers the lookup in T whatever happens to P.
// Routes with a TOS or a source prefix never match the lookups (TOS 0, no source) and hide
// nothing. Nexthop objects are not watched; the periodic full resync covers changes to
// them (policy rules are watched: rules.ts).
//
// The tracker also keeps the destination prefix of every route (prefixes.ts): an IP's
// longest containing prefix is the group whose lookup it shares.
import { parsePrefix, prefixCovers, type IpPrefix, type IpRangeIndex } from '../ipaddr/index.js';
import {
  AF_INET,
  AF_INET6,
  RTM_F_CLONED,
  RTN_BLACKHOLE,
  RTN_PROHIBIT,
  RTN_UNREACHABLE,
  RTNH_F_DEAD,
  routeTypeName,
  type Route,
} from '../netlink/index.js';
import { Table } from '../statedb/index.js';
import { groupLength, PrefixIndex, type GroupKey } from './prefixes.js';
import type { RouteRow } from './types.js';

export interface RouteListener {
  routeChanged(before: RouteRow | undefined, after: RouteRow | undefined): void;
}

interface Leg {
  ifindex: number;
  gateway: string;
}

function legsOf(r: Route): Leg[] {
  if (r.multipath !== undefined && r.multipath.length > 0) {
    return r.multipath
      .filter((l) => (l.flags & RTNH_F_DEAD) === 0 && l.ifindex > 0)
      .map((l) => ({ ifindex: l.ifindex, gateway: l.gateway ?? l.via?.address ?? '' }));
  }
  if (r.oif === undefined || r.oif <= 0) return [];
  return [{ ifindex: r.oif, gateway: r.gateway ?? r.via?.address ?? '' }];
}

const legKey = (l: Leg): string => `${l.ifindex}|${l.gateway}`;

/** The row for a route message; undefined for cached clones and other families. */
export function routeRow(
  r: Route,
  legs: readonly string[] = legsOf(r).map(legKey),
): RouteRow | undefined {
  if (r.family !== AF_INET && r.family !== AF_INET6) return undefined;
  if (r.flags & RTM_F_CLONED) return undefined;
  const family = r.family === AF_INET ? 4 : 6;
  const dst = `${r.dst ?? (family === 4 ? '0.0.0.0' : '::')}/${r.dstLen}`;
  const src = `${r.src ?? ''}/${r.srcLen}`;
  const priority = r.priority ?? 0;
  const oifs = [...new Set(legs.map((l) => Number(l.slice(0, l.indexOf('|')))))].sort(
    (a, b) => a - b,
  );
  return {
    key: `${family}|${r.table}|${dst}|${src}|${r.tos}|${priority}`,
    family,
    table: r.table,
    dst,
    dstLen: r.dstLen,
    srcLen: r.srcLen,
    tos: r.tos,
    priority,
    type: r.type,
    oifs,
    nhid: r.nhid,
    legs: [...legs].sort(),
  };
}

function sameRoute(a: RouteRow, b: RouteRow): boolean {
  return (
    a.type === b.type &&
    a.nhid === b.nhid &&
    a.legs.length === b.legs.length &&
    a.legs.every((l, i) => l === b.legs[i])
  );
}

/** A prefix of one table that answers lookups on the devices it has legs on. */
interface HidingPrefix {
  prefix: IpPrefix;
  /** ifindex → number of routes of this prefix with a leg on it. */
  oifs: Map<number, number>;
}

const groupKey = (r: RouteRow): string => `${r.family}|${r.table}`;

/** Route types that reject traffic instead of forwarding it. */
const REJECTS = [RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT];

export class RouteTracker {
  readonly table: Table<RouteRow>;
  /** The destination of every route in the table (counted per route). */
  readonly prefixes = new PrefixIndex();
  #listener: RouteListener | undefined = undefined;
  /**
   * Route destination (as a group key) → its routes: how many, and how many reject traffic
   * (blackhole, unreachable, prohibit) by type. For status: why an IP has no next hop.
   */
  readonly #byDst = new Map<GroupKey, { dst: string; routes: number; rejects: number[] }>();
  /** family|table → prefix text → the devices its routes have legs on. */
  readonly #hiding = new Map<string, Map<string, HidingPrefix>>();

  constructor(now?: () => number) {
    this.table = new Table<RouteRow>({
      name: 'routes',
      primaryKey: (r) => r.key,
      equals: sameRoute,
      now,
    });
  }

  setListener(l: RouteListener | undefined): void {
    this.#listener = l;
  }

  /**
   * A route event. `new` carries the whole route (IPv6 multipath too); `del` carries the
   * legs removed (IPv6 can delete one leg of a multipath route), so the row keeps the rest.
   */
  apply(kind: 'new' | 'del', r: Route): void {
    const incoming = routeRow(r);
    if (incoming === undefined) return;
    const before = this.table.get(incoming.key);
    let after: RouteRow | undefined = incoming;
    if (kind === 'del') {
      if (before === undefined) return;
      const gone = new Set(incoming.legs);
      const rest = before.legs.filter((l) => !gone.has(l));
      after = gone.size === 0 || rest.length === 0 ? undefined : routeRow(r, rest);
    }
    this.#set(incoming.key, before, after);
  }

  /** Replaces the table with a dump; listeners hear each route that differs. */
  load(routes: readonly Route[]): void {
    const want = new Map<string, RouteRow>();
    for (const r of routes) {
      const row = routeRow(r);
      if (row === undefined) continue;
      const prev = want.get(row.key);
      // A dump lists each IPv6 multipath leg of old kernels as its own message: merge them.
      want.set(row.key, prev === undefined ? row : mergeRows(r, prev, row));
    }
    for (const row of this.table.list()) {
      if (!want.has(row.key)) this.#set(row.key, row, undefined);
    }
    for (const [key, row] of want) this.#set(key, this.table.get(key), row);
  }

  #set(key: string, before: RouteRow | undefined, after: RouteRow | undefined): void {
    if (after === undefined) {
      if (before === undefined) return;
      this.table.delete(key);
    } else if (!this.table.upsert(after)) {
      return;
    }
    if (before !== undefined) this.#unhide(before);
    if (after !== undefined) this.#hide(after);
    if (before === undefined && after !== undefined) this.prefixes.add(after.dst);
    else if (before !== undefined && after === undefined) this.prefixes.remove(before.dst);
    if (before !== undefined) this.#count(before, -1);
    if (after !== undefined) this.#count(after, 1);
    this.#listener?.routeChanged(before, after);
  }

  #count(r: RouteRow, delta: 1 | -1): void {
    const key = this.prefixes.keyOf(r.dst);
    let e = this.#byDst.get(key);
    if (e === undefined) this.#byDst.set(key, (e = { dst: r.dst, routes: 0, rejects: [0, 0, 0] }));
    e.routes += delta;
    const reject = REJECTS.indexOf(r.type);
    if (reject >= 0) e.rejects[reject]! += delta;
    if (e.routes <= 0) this.#byDst.delete(key);
  }

  /**
   * Why an IP may have no next hop, from the routes alone (the lookups with an output device
   * answer "no route to host" for a reject route and for no route alike): "no route", the
   * reject route at its longest containing prefix ("blackhole route 10.9.0.0/16"), or
   * undefined (routes exist, the lookups say none leaves through a selected device).
   */
  explain(ip: string): string | undefined {
    const key = this.prefixes.groupOf(ip);
    const e = this.#byDst.get(key);
    if (e === undefined) return groupLength(key) < 0 ? 'no route' : undefined;
    const types = REJECTS.filter((_, i) => e.rejects[i]! > 0);
    if (types.length === 0 || e.rejects.reduce((a, b) => a + b, 0) < e.routes) return undefined;
    return `${types.map((t) => routeTypeName(t)).join('/')} route ${e.dst}`;
  }

  #hide(r: RouteRow): void {
    if (r.tos !== 0 || r.srcLen !== 0 || r.oifs.length === 0) return;
    let g = this.#hiding.get(groupKey(r));
    if (g === undefined) this.#hiding.set(groupKey(r), (g = new Map()));
    let h = g.get(r.dst);
    if (h === undefined) {
      h = { prefix: parsePrefix(r.dst, { hostBits: 'clear' }), oifs: new Map() };
      g.set(r.dst, h);
    }
    for (const i of r.oifs) h.oifs.set(i, (h.oifs.get(i) ?? 0) + 1);
  }

  #unhide(r: RouteRow): void {
    if (r.tos !== 0 || r.srcLen !== 0 || r.oifs.length === 0) return;
    const g = this.#hiding.get(groupKey(r));
    const h = g?.get(r.dst);
    if (g === undefined || h === undefined) return;
    for (const i of r.oifs) {
      const n = (h.oifs.get(i) ?? 0) - 1;
      if (n > 0) h.oifs.set(i, n);
      else h.oifs.delete(i);
    }
    if (h.oifs.size === 0) g.delete(r.dst);
    if (g.size === 0) this.#hiding.delete(groupKey(r));
  }

  /**
   * The (forwardable IP, device) pairs whose next hop a change from `before` to `after` can
   * affect, by device: `ips` are the forwardable IPs, `selected` the selected devices.
   */
  affected(
    before: RouteRow | undefined,
    after: RouteRow | undefined,
    ips: IpRangeIndex,
    selected: readonly number[],
  ): Map<number, string[]> {
    const out = new Map<number, string[]>();
    const r = after ?? before;
    if (r === undefined || selected.length === 0) return out;
    if (r.tos !== 0 || r.srcLen !== 0) return out; // never matches a TOS-0, sourceless lookup
    const devices = affectedDevices(before, after, selected);
    if (devices.length === 0) return out;
    const prefix = parsePrefix(r.dst, { hostBits: 'clear' });
    const covered = ips.covered(prefix);
    if (covered.length === 0) return out;
    const group = this.#hiding.get(groupKey(r));
    for (const d of devices) {
      const hidden = new Set<string>();
      for (const h of group?.values() ?? []) {
        if (h.prefix.length <= prefix.length || !h.oifs.has(d)) continue;
        if (!prefixCovers(prefix, h.prefix)) continue;
        for (const ip of ips.covered(h.prefix)) hidden.add(ip);
      }
      const list = hidden.size === 0 ? covered : covered.filter((ip) => !hidden.has(ip));
      if (list.length > 0) out.set(d, list);
    }
    return out;
  }
}

/** Selected devices a route change can matter to (see the header). */
function affectedDevices(
  before: RouteRow | undefined,
  after: RouteRow | undefined,
  selected: readonly number[],
): number[] {
  const rows = [before, after].filter((x): x is RouteRow => x !== undefined);
  if (rows.some((x) => x.oifs.length === 0)) return [...selected];
  const oifs = new Set<number>();
  for (const x of rows) for (const i of x.oifs) oifs.add(i);
  return selected.filter((d) => oifs.has(d));
}

function mergeRows(r: Route, a: RouteRow, b: RouteRow): RouteRow {
  const legs = [...new Set([...a.legs, ...b.legs])];
  return routeRow(r, legs) ?? a;
}
