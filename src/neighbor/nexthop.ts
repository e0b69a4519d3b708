// From the kernel's answer to `ip route get IP oif DEV fibmatch` to the next hops a
// forwardable IP needs on DEV (pure).
//
//   on-link leg on DEV       → the IP itself
//   leg via a gateway on DEV → the gateway (RTA_GATEWAY, or RTA_VIA for an IPv6 next hop
//                              of an IPv4 route)
//   multipath                → every leg on DEV (each its own entry; sorted)
//   no route through DEV     → none: fibmatch makes the kernel answer ENETUNREACH instead of
//                              its "assume the destination is on-link" fallback for oif
import {
  errnoName,
  NetlinkError,
  RTN_UNICAST,
  routeTypeName,
  RTNH_F_DEAD,
  type Route,
} from '../netlink/index.js';

export type LookupOutcome =
  /** The next hops on the device (possibly empty when every leg is elsewhere). */
  | { readonly kind: 'nexthops'; readonly nexthops: readonly string[] }
  /**
   * On-link: the IP is its own one next hop. One shared object, where `nexthops: [ip]` made
   * two per IP (100,000 of them at each load and full resync; hopsOfOutcome gives the list).
   */
  | { readonly kind: 'self' }
  /** Not routed through the device (or not forwardable at all): no entry. */
  | { readonly kind: 'unreachable'; readonly reason: string }
  /** The lookup itself failed: keep what was known and retry. */
  | { readonly kind: 'error'; readonly error: string };

/** Errnos that mean "no route for this IP through this device", not a failure. */
const UNREACHABLE = new Set([
  'ENETUNREACH', // no route (fibmatch with oif)
  'EHOSTUNREACH', // unreachable route
  'EACCES', // prohibit route
  'EINVAL', // blackhole route
  'ESRCH',
  'ENETDOWN',
  'ENODEV', // the device is gone
]);

function errnoOf(err: Error): string | undefined {
  if (err instanceof NetlinkError) return err.errnoName;
  const e = err as { errno?: unknown; code?: unknown };
  if (typeof e.code === 'string' && e.code.startsWith('E')) return e.code;
  if (typeof e.errno === 'number') return errnoName(Math.abs(e.errno));
  return undefined;
}

/**
 * What an answer says for every IP it answers: the gateways of the legs on the device, an
 * on-link leg as undefined (the destination itself). The next hops of one IP follow from
 * it with nextHopsFor(); an answer shared by many IPs (share.ts) is turned into this once.
 */
export type AnswerOutcome =
  | { readonly kind: 'nexthops'; readonly gateways: readonly (string | undefined)[] }
  | Exclude<LookupOutcome, { kind: 'nexthops' }>;

export function answerOutcome(answer: Route | Error, ifindex: number): AnswerOutcome {
  if (answer instanceof Error) {
    const name = errnoOf(answer);
    if (name !== undefined && UNREACHABLE.has(name)) return { kind: 'unreachable', reason: name };
    return { kind: 'error', error: answer.message };
  }
  if (answer.type !== RTN_UNICAST) {
    return { kind: 'unreachable', reason: `${routeTypeName(answer.type)} route` };
  }
  if (
    answer.nhid !== undefined &&
    (answer.multipath?.length ?? 0) === 0 &&
    answer.oif === undefined &&
    answer.gateway === undefined
  ) {
    return { kind: 'unreachable', reason: nexthopObjectReason(answer.nhid) };
  }
  const gateways: (string | undefined)[] = [];
  if (answer.multipath !== undefined && answer.multipath.length > 0) {
    for (const leg of answer.multipath) {
      if (leg.ifindex !== ifindex || (leg.flags & RTNH_F_DEAD) !== 0) continue;
      gateways.push(leg.gateway ?? leg.via?.address);
    }
  } else if (answer.oif === ifindex) {
    gateways.push(answer.gateway ?? answer.via?.address);
  }
  return { kind: 'nexthops', gateways };
}

/**
 * The reason for an answer that names a nexthop object without its legs (the kernel shows
 * them only with net.ipv4.nexthop_compat_mode=1): fibkeeper cannot tell its next hops.
 */
export function nexthopObjectReason(nhid: number): string {
  return `route via nexthop object ${nhid}, whose legs the kernel does not show (net.ipv4.nexthop_compat_mode=0; set it to 1)`;
}

/**
 * Unreachable reasons that say no more than "not routed via this device". A lookup with an
 * output device answers EHOSTUNREACH for no route and for a reject route alike: status tells
 * them apart from the routes (RouteTracker.explain).
 */
const PLAIN = new Set(['ENETUNREACH', 'EHOSTUNREACH', 'ESRCH']);

/**
 * A reason worth keeping for status (a broadcast or local address, a blackhole, prohibit or
 * unreachable route, a nexthop object), as a person reads it; undefined for "no route via
 * this device", which status says anyway.
 */
export function notableReason(reason: string): string | undefined {
  if (PLAIN.has(reason)) return undefined;
  switch (reason) {
    case 'EINVAL':
      return 'blackhole route';
    case 'EACCES':
      return 'prohibit route';
    case 'ENETDOWN':
      return 'device down';
    case 'ENODEV':
      return 'device gone';
    default:
      return reason;
  }
}

const NO_HOPS: LookupOutcome = { kind: 'nexthops', nexthops: [] };

/** The outcome of every on-link IP that is its own one next hop. */
export const SELF: LookupOutcome = Object.freeze({ kind: 'self' });

/** One gateway's outcome, made once per answer: every IP the answer stands for shares it. */
const viaOne = new WeakMap<AnswerOutcome, LookupOutcome>();

/**
 * The next hops of `ip` under an answer's outcome: sorted, without duplicates. Allocates
 * nothing for an on-link IP (SELF) or one gateway (shared by the answer's IPs).
 */
export function nextHopsFor(o: AnswerOutcome, ip: string): LookupOutcome {
  if (o.kind !== 'nexthops') return o;
  const g = o.gateways;
  if (g.length === 0) return NO_HOPS;
  if (g.length === 1) {
    const gw = g[0];
    if (gw === undefined) return SELF;
    let out = viaOne.get(o);
    if (out === undefined) viaOne.set(o, (out = { kind: 'nexthops', nexthops: [gw] }));
    return out;
  }
  const out = [...new Set(g.map((x) => x ?? ip))].sort();
  return { kind: 'nexthops', nexthops: out };
}

/** The next hops an outcome gives `ip` (none for unreachable and errors). */
export function hopsOfOutcome(o: LookupOutcome, ip: string): readonly string[] {
  if (o.kind === 'self') return [ip];
  return o.kind === 'nexthops' ? o.nexthops : [];
}

/** The next hops of `ip` on `ifindex` from the kernel's answer to its own lookup. */
export function nextHopsOf(answer: Route | Error, ip: string, ifindex: number): LookupOutcome {
  return nextHopsFor(answerOutcome(answer, ifindex), ip);
}

/** The family of an address in canonical text. */
export function familyOfText(ip: string): 4 | 6 {
  return ip.includes(':') ? 6 : 4;
}
