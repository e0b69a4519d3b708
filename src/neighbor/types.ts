// The rows of the neighbor subsystem's tables and the constants every part agrees on.
// Re-exported (the public ones) from index.ts.

/**
 * fibkeeper's NDA_PROTOCOL value: the ownership mark on every neighbor entry it writes.
 * `ip neigh` shows it as `proto 241`. 241 is in no iproute2 rt_protos list and no
 * RTPROT_* constant of the kernel (they stop at 192, eigrp). Delete and prune touch only
 * entries that carry it.
 */
export const FIBKEEPER_NEIGH_PROTOCOL = 241;

/** A forwardable IP: canonical address (the key) and who wants it forwardable. */
export interface ForwardableIP {
  /** Canonical text ("2001:db8::1"): two spellings of one address are one row. */
  readonly ip: string;
  readonly family: 4 | 6;
  /** Sorted, without duplicates; never empty (the row is deleted with its last owner). */
  readonly owners: readonly string[];
}

/** A link as the subsystem sees it, with the verdict on whether it is managed. */
export interface Device {
  readonly ifindex: number;
  readonly name: string;
  /** Hardware address; undefined when the link has none (or an all-zero one). */
  readonly mac: string | undefined;
  /** IFF_* */
  readonly flags: number;
  /** ARPHRD_* */
  readonly type: number;
  readonly kind: string | undefined;
  /** Selected: matches the configured names, up with carrier, L2 with ARP, not the holder. */
  readonly selected: boolean;
  /** Why it is not selected ("down", "no carrier", "NOARP", ...); undefined when selected. */
  readonly reason: string | undefined;
}

/**
 * A route, kept as the change signal for next-hop recomputation (the next hop itself always
 * comes from the kernel's FIB).
 */
export interface RouteRow {
  /** family|table|dst/len|src/len|tos|metric: the kernel's identity of a route. */
  readonly key: string;
  readonly family: 4 | 6;
  readonly table: number;
  /** Destination prefix, canonical ("10.0.0.0/24", "::/0"). */
  readonly dst: string;
  readonly dstLen: number;
  readonly srcLen: number;
  readonly tos: number;
  readonly priority: number;
  /** RTN_* */
  readonly type: number;
  /** The legs as "ifindex|gateway" (gateway empty when on-link); sorted. */
  readonly legs: readonly string[];
  /** Devices of the legs (one for a single-path route, several for multipath); sorted. */
  readonly oifs: readonly number[];
  /** The route points at a nexthop object (RTA_NH_ID). */
  readonly nhid: number | undefined;
}

/**
 * A neighbor entry fibkeeper wants in the kernel: next hop `nexthop` on device `ifindex`.
 * `refs` are the forwardable IPs whose route on that device leads to this next hop. It is a
 * live set owned by the calculator: changing it is not a table write, because the kernel
 * entry does not depend on it; the row is deleted when the set becomes empty.
 */
export interface DesiredNeighbor {
  /** "ifindex|nexthop" (neighKey): the primary key. */
  readonly key: string;
  readonly ifindex: number;
  readonly nexthop: string;
  readonly family: 4 | 6;
  readonly refs: ReadonlySet<string>;
}

/** A neighbor entry as the kernel reports it (dump or event). */
export interface ObservedNeighbor {
  readonly ifindex: number;
  readonly ip: string;
  readonly family: 4 | 6;
  /** NUD_* */
  readonly state: number;
  /** NTF_* */
  readonly flags: number;
  /** NDA_FLAGS_EXT (NTF_EXT_MANAGED) */
  readonly flagsExt: number;
  /** NDA_PROTOCOL; undefined when the entry carries none. */
  readonly protocol: number | undefined;
  readonly lladdr: string | undefined;
}

/** Primary key of a neighbor entry (desired or observed): "ifindex|ip". */
export function neighKey(ifindex: number, ip: string): string {
  // One flat string: `${ifindex}|${ip}` of 13 characters or more is a V8 ConsString, which
  // every row keeps beside its flattened copy (32 bytes more per entry); join builds the
  // characters into one string.
  return [ifindex, ip].join('|');
}

/** The inverse of neighKey. */
export function splitNeighKey(key: string): { ifindex: number; ip: string } {
  const bar = key.indexOf('|');
  return { ifindex: Number(key.slice(0, bar)), ip: key.slice(bar + 1) };
}

/** How entries stay fresh: the kernel re-resolves them (managed) or fibkeeper does (legacy). */
export type RefreshMode = 'managed' | 'legacy';

/** A desired next hop that does not answer (NeighborHealth.unusable). */
export interface UnusableEntry {
  nexthop: string;
  device: string;
  /** The kernel entry's NUD state now: failed, or incomplete while the kernel retries. */
  state: string;
  /** Seconds since it first went FAILED without resolving. */
  forSeconds: number;
  /** Some forwardable IPs routed through it (at most 5). */
  forwardable: string[];
}
