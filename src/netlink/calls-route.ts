// Route calls, each the equivalent of an `ip route` command, and the route lookups the
// neighbor subsystem makes in bulk (`ip route get`).
import { InvalidArgumentError } from '../errors/index.js';
import { afOfText } from '../ipaddr/index.js';
import type { BulkOutcome } from './bulk.js';
import type { Client } from './client.js';
import {
  AF_INET6,
  AF_UNSPEC,
  formatRoute,
  type NetlinkError,
  type Nexthop,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  parseRoute,
  type Route,
  RT_SCOPE_LINK,
  RT_SCOPE_NOWHERE,
  RT_SCOPE_UNIVERSE,
  RT_TABLE_MAIN,
  RTM_DELROUTE,
  RTM_F_FIB_MATCH,
  RTM_F_LOOKUP_TABLE,
  RTM_GETROUTE,
  RTM_NEWROUTE,
  RTN_UNICAST,
  RTN_UNSPEC,
  RTPROT_BOOT,
  RTPROT_UNSPEC,
  type Writer,
} from './codec/index.js';

/** A route to add, replace or delete. */
export interface RouteSpec {
  /** "10.0.0.0/24", "2001:db8::/64", a bare address (host route) or "default". */
  dst: string;
  /** Needed only for "default": AF_INET (default) or AF_INET6. */
  family?: number;
  /** Default RT_TABLE_MAIN. */
  table?: number;
  /** RTPROT_*; default boot (as `ip route add`), unspecified (any) for delete. */
  protocol?: number;
  /** RT_SCOPE_*; default link without a gateway, else universe (nowhere for delete). */
  scope?: number;
  /** RTN_*; default unicast (unspecified for delete). */
  type?: number;
  gateway?: string;
  oif?: number;
  /** The metric. */
  priority?: number;
  prefsrc?: string;
  /** Multipath legs: `nexthop via GW dev OIF weight W`. */
  nexthops?: { gateway?: string; oif: number; weight?: number; flags?: number }[];
}

/** Splits "a.b.c.d/len" into address and length; bare addresses are host routes. */
export function parsePrefix(
  dst: string,
  family?: number,
): { family: number; address?: string; len: number } {
  if (dst === 'default') {
    const f = family ?? 2;
    return { family: f, len: 0 };
  }
  const slash = dst.indexOf('/');
  const address = slash < 0 ? dst : dst.slice(0, slash);
  const f = afOfText(address);
  const max = f === AF_INET6 ? 128 : 32;
  const len = slash < 0 ? max : Number(dst.slice(slash + 1));
  if (!Number.isInteger(len) || len < 0 || len > max || (slash >= 0 && dst.length === slash + 1)) {
    throw new InvalidArgumentError(`bad prefix ${JSON.stringify(dst)}`);
  }
  return { family: f, address, len };
}

function toRoute(s: RouteSpec, del: boolean): Route {
  const p = parsePrefix(s.dst, s.family);
  const gw = s.gateway !== undefined || (s.nexthops?.length ?? 0) > 0;
  const r: Route = {
    family: p.family,
    dstLen: p.len,
    srcLen: 0,
    tos: 0,
    table: s.table ?? RT_TABLE_MAIN,
    protocol: s.protocol ?? (del ? RTPROT_UNSPEC : RTPROT_BOOT),
    scope: s.scope ?? (del ? RT_SCOPE_NOWHERE : gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK),
    type: s.type ?? (del ? RTN_UNSPEC : RTN_UNICAST),
    flags: 0,
  };
  if (p.address !== undefined) r.dst = p.address;
  if (s.gateway !== undefined) r.gateway = s.gateway;
  if (s.oif !== undefined) r.oif = s.oif;
  if (s.priority !== undefined) r.priority = s.priority;
  if (s.prefsrc !== undefined) r.prefsrc = s.prefsrc;
  if (s.nexthops) {
    r.multipath = s.nexthops.map((n): Nexthop => {
      const weight = n.weight ?? 1;
      if (!Number.isInteger(weight) || weight < 1 || weight > 256) {
        throw new InvalidArgumentError(`route ${s.dst}: bad nexthop weight ${weight}`);
      }
      const leg: Nexthop = { ifindex: n.oif, flags: n.flags ?? 0, hops: weight - 1 };
      if (n.gateway !== undefined) leg.gateway = n.gateway;
      return leg;
    });
  }
  return r;
}

/** routeList — like `ip route show table all` (or `table N`), optionally one family. */
export async function routeList(
  c: Client,
  filter: { family?: number; table?: number } = {},
): Promise<Route[]> {
  const req: Route = {
    family: filter.family ?? AF_UNSPEC,
    dstLen: 0,
    srcLen: 0,
    tos: 0,
    table: filter.table ?? 0,
    protocol: 0,
    scope: 0,
    type: 0,
    flags: 0,
  };
  const all = await c.dump(
    (w) => formatRoute(w, RTM_GETROUTE, NLM_F_REQUEST, req),
    parseRoute,
    'routeList',
  );
  // The kernel filters too, but only with strict checking: filter here as well.
  return all.filter(
    (r) =>
      (filter.family === undefined || r.family === filter.family) &&
      (filter.table === undefined || r.table === filter.table),
  );
}

/** routeAdd — like `ip route add DST [via GW] [dev OIF] [metric M] [table T] [nexthop ...]`. */
export function routeAdd(c: Client, spec: RouteSpec): Promise<void> {
  const r = toRoute(spec, false);
  return c.ack(
    (w) => formatRoute(w, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL, r),
    `routeAdd ${spec.dst}`,
  );
}

/** routeReplace — like `ip route replace ...`: adds, or replaces the route with that key. */
export function routeReplace(c: Client, spec: RouteSpec): Promise<void> {
  const r = toRoute(spec, false);
  return c.ack(
    (w) => formatRoute(w, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE, r),
    `routeReplace ${spec.dst}`,
  );
}

/** routeDel — like `ip route del DST [via GW] [dev OIF] [table T]`. ESRCH when absent. */
export function routeDel(c: Client, spec: RouteSpec): Promise<void> {
  const r = toRoute(spec, true);
  return c.ack((w) => formatRoute(w, RTM_DELROUTE, NLM_F_REQUEST, r), `routeDel ${spec.dst}`);
}

/** A route lookup. */
export interface RouteQuery {
  dst: string;
  /** Restrict the lookup to this output device (`oif DEV`). */
  oif?: number;
  /** Look up as if received on this device (`iif DEV`). */
  iif?: number;
  src?: string;
  mark?: number;
  /**
   * `fibmatch`: return the matching FIB entry (every multipath leg) instead of the one
   * path the kernel would pick for this flow.
   */
  fibmatch?: boolean;
}

function encodeQuery(w: Writer, q: RouteQuery): void {
  const family = afOfText(q.dst);
  const r: Route = {
    family,
    dstLen: family === AF_INET6 ? 128 : 32,
    srcLen: 0,
    tos: 0,
    table: 0,
    protocol: 0,
    scope: 0,
    type: 0,
    // IPv6 accepts only RTM_F_FIB_MATCH here; IPv4 also reports the table with LOOKUP_TABLE.
    flags: (family === AF_INET6 ? 0 : RTM_F_LOOKUP_TABLE) | (q.fibmatch ? RTM_F_FIB_MATCH : 0),
    dst: q.dst,
  };
  if (q.src !== undefined) {
    r.src = q.src;
    r.srcLen = r.dstLen;
  }
  if (q.oif !== undefined) r.oif = q.oif;
  if (q.iif !== undefined) r.iif = q.iif;
  if (q.mark !== undefined) r.mark = q.mark;
  formatRoute(w, RTM_GETROUTE, NLM_F_REQUEST, r);
}

const describeQuery = (q: RouteQuery): string =>
  `routeGet ${q.dst}${q.oif === undefined ? '' : ` oif ${q.oif}`}${q.fibmatch ? ' fibmatch' : ''}`;

/**
 * routeGet — like `ip route get DST [oif DEV] [fibmatch]`: the kernel's FIB answer,
 * with `gateway`, `oif` and (fibmatch) the `multipath` legs. ENETUNREACH (and friends)
 * become NetlinkError.
 */
export function routeGet(
  c: Client,
  dst: string,
  opts: Omit<RouteQuery, 'dst'> = {},
): Promise<Route> {
  const q: RouteQuery = { ...opts, dst };
  return c.get((w) => encodeQuery(w, q), parseRoute, describeQuery(q));
}

/**
 * routeGetMany — many `ip route get` lookups pipelined (a window of requests in flight,
 * batched into few sendmsg calls). Result i is the Route for queries[i], or the
 * NetlinkError the kernel answered it with (unreachable destinations are no exception).
 */
export async function routeGetMany(
  c: Client,
  queries: readonly RouteQuery[],
): Promise<(Route | NetlinkError)[]> {
  const outcome: BulkOutcome<Route> = await c.bulk({
    what: 'routeGetMany',
    count: queries.length,
    mode: 'reply',
    encode: (w, i) => encodeQuery(w, queries[i]!),
    parse: parseRoute,
    describe: (i) => describeQuery(queries[i]!),
  });
  const out: (Route | NetlinkError)[] = outcome.results as (Route | NetlinkError)[];
  for (const f of outcome.failures) out[f.index] = f.error as NetlinkError;
  return out;
}
