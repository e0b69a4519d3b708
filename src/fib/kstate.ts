// What the XDP program must know of the kernel's configuration to forward only what the
// kernel would: computed here, purely, from the namespace's addresses, routes and sysctls
// (kwatch.ts reads them, the datapath writes the result into fk_state and the LPM tries). Every value errs on the side of passing frames to the kernel.
import {
  AF_INET,
  AF_INET6,
  RTN_BLACKHOLE,
  RTN_PROHIBIT,
  RTN_THROW,
  RTN_UNICAST,
  RTN_UNREACHABLE,
  RTN_UNSPEC,
  type Address,
  type Route,
  type Rule,
} from '../netlink/index.js';
import { FK_MAX_SLOTS, FK_SLOT_OTHER } from './layout.js';
import {
  NOT_READY,
  buildLocal4,
  lpm4Key,
  lpm6Key,
  type DevState,
  type KernelState,
} from './layout-state.js';

/** The sysctls the program depends on, as read from /proc/sys/net of the namespace. */
export interface NetSysctls {
  /** net.ipv4.fib_multipath_hash_policy / net.ipv6.fib_multipath_hash_policy. */
  mpPolicy4: number;
  mpPolicy6: number;
  /** net.ipv4.conf.all.rp_filter. */
  rpFilterAll: number;
  /** net.ipv6.conf.all.forwarding. */
  ip6ForwardingAll: boolean;
  /** Per device name: net.ipv4.conf.DEV.rp_filter and net.ipv6.conf.DEV.disable_ipv6. */
  dev: ReadonlyMap<string, { rpFilter: number; disableIpv6: boolean }>;
}

/** A device that has a counter slot and is present (attached or about to be). */
export interface SlotDevice {
  name: string;
  ifindex: number;
  slot: number;
  /**
   * The FK_REASON_* index under which the node's policy sends every IPv4 / IPv6 frame from
   * this device to the kernel (netfilter, tc, xfrm); 0 or absent: none.
   */
  policy4?: number;
  policy6?: number;
}

export interface KernelInputs {
  addresses: readonly Address[];
  routes: readonly Route[];
  /** The IPv4 policy rules (absent: the default ones). */
  rules?: readonly Rule[];
  sysctls: NetSysctls;
  devices: readonly SlotDevice[];
  /** Devices whose egress has a policy of its own: ifindex -> FK_REASON_* index. */
  egress?: ReadonlyMap<number, number>;
  /** The generation of the reverse-path cache to write (never 0). */
  rpGen?: number;
}

export interface KernelMirror {
  /** fk_state, the local-address table included. */
  state: KernelState;
  /** fk_egress: ifindex -> FK_REASON_* index. */
  egress: ReadonlyMap<number, number>;
  /**
   * The key sets the three lists were made from: the same object as in a mirror written
   * before means the same keys (the writer leaves that map alone).
   */
  sets?: {
    local4w: ReadonlyMap<string, Buffer>;
    mpath4: ReadonlyMap<string, Buffer>;
    mpath6: ReadonlyMap<string, Buffer>;
  };
  /** Keys of fk_local4w, fk_mpath4, fk_mpath6. */
  local4w: Buffer[];
  mpath4: Buffer[];
  mpath6: Buffer[];
  /** For status and logs. */
  summary: {
    localAddresses: number;
    localPrefixes: number;
    multipath4: number;
    multipath6: number;
  };
}

/** Route types whose destinations are the node's own, or not unicast: never a source. */
export function localType(type: number): boolean {
  return ![
    RTN_UNSPEC,
    RTN_UNICAST,
    RTN_BLACKHOLE,
    RTN_UNREACHABLE,
    RTN_PROHIBIT,
    RTN_THROW,
  ].includes(type);
}

/** The program refuses these sources before it looks at local4 (0/8, 127/8, 224/3). */
export function martianAlready(dst: string, len: number): boolean {
  const top = Number(dst.split('.')[0]);
  return ((top === 0 || top === 127) && len >= 8) || (top >= 224 && len >= 3);
}

function rp(v: number): 0 | 1 | 2 {
  return v === 1 ? 1 : v === 2 ? 2 : v > 2 ? 2 : 0;
}

/** One device's entry: rp_filter as the kernel takes it (the max of all and DEV). */
function devState(d: SlotDevice, s: NetSysctls, v4: ReadonlySet<number>): DevState {
  const own = s.dev.get(d.name);
  return {
    ready: own !== undefined,
    rpFilter: rp(Math.max(s.rpFilterAll, own?.rpFilter ?? 0)),
    v4Addr: v4.has(d.ifindex),
    ip6Off: !s.ip6ForwardingAll || (own?.disableIpv6 ?? true),
    policy4: d.policy4 ?? 0,
    policy6: d.policy6 ?? 0,
  };
}

/**
 * Entries of devices that share a slot (the :other slot) merged so that the program checks
 * at least as much as each of them needs: any rp_filter makes it strict, an IPv4 address
 * only when every device has one, IPv6 off when it is off for any.
 */
function merge(a: DevState, b: DevState): DevState {
  return {
    ready: a.ready && b.ready,
    rpFilter: a.rpFilter || b.rpFilter ? 1 : 0,
    v4Addr: a.v4Addr && b.v4Addr,
    ip6Off: a.ip6Off || b.ip6Off,
    policy4: a.policy4 || b.policy4 || 0,
    policy6: a.policy6 || b.policy6 || 0,
  };
}

/**
 * IPv4 policy rules whose selectors the reverse-path lookup of XDP cannot reproduce: the
 * kernel looks the route back up as arriving from the loopback device with the packet's
 * ports and protocol, bpf_fib_lookup from the ingress device without them. An incoming
 * device, ports, protocol, or a selector this codec does not decode send rp_filter packets
 * to the kernel.
 */
export function rpRulesDiffer(rules: readonly Rule[]): boolean {
  return rules.some(
    (r) =>
      r.family === AF_INET &&
      (r.iifname !== undefined ||
        r.ipProto !== undefined ||
        r.sportRange !== undefined ||
        r.dportRange !== undefined ||
        (r.other?.length ?? 0) > 0),
  );
}

function prefixKeys(
  routes: readonly Route[],
  family: number,
  pick: (r: Route) => boolean,
): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const r of routes) {
    if (r.family !== family || !pick(r)) continue;
    const dst = r.dst ?? (family === AF_INET ? '0.0.0.0' : '::');
    const key = family === AF_INET ? lpm4Key(dst, r.dstLen) : lpm6Key(dst, r.dstLen);
    out.set(key.toString('hex'), key);
  }
  return out;
}

const RTAX_LOCK = 1;
const RTAX_MTU = 2;

/**
 * The smallest route MTU that is not locked, per family (0: none). The kernel forwards with
 * a route's MTU; bpf_fib_lookup enforces it only when locked, so the program passes packets
 * larger than this to the kernel (any route counts, whichever the packet takes).
 */
function unlockedMtu(routes: readonly Route[], family: number): number {
  let min = 0;
  for (const r of routes) {
    if (r.family !== family) continue;
    const v = unlockedMtuOf(r);
    if (v > 0) min = min === 0 ? v : Math.min(min, v);
  }
  return Math.min(min, 0xffff);
}

/** The route's MTU when it has one and it is not locked, else 0. */
export function unlockedMtuOf(r: Route): number {
  if (r.metrics === undefined) return 0;
  const mtu = r.metrics.find((m) => m.type === RTAX_MTU);
  const lock = r.metrics.find((m) => m.type === RTAX_LOCK);
  if (mtu === undefined || mtu.value.length < 4) return 0;
  const locked =
    lock !== undefined &&
    lock.value.length >= 4 &&
    (lock.value.readUInt32LE(0) & (1 << RTAX_MTU)) !== 0;
  return locked ? 0 : mtu.value.readUInt32LE(0);
}

/**
 * Routes whose next hop the kernel picks by hash: several legs, a nexthop object (it may be
 * a group), or (IPv6 dumps of old kernels) sibling routes reported one leg at a time.
 */
function multipathRoutes(routes: readonly Route[]): Set<Route> {
  const out = new Set<Route>();
  const siblings = new Map<string, Route[]>();
  for (const r of routes) {
    if (r.type !== RTN_UNICAST) continue;
    if ((r.multipath?.length ?? 0) > 1 || r.nhid !== undefined) out.add(r);
    if (r.family === AF_INET6) {
      const k = `${r.table}|${r.dst ?? '::'}/${r.dstLen}|${r.src ?? ''}/${r.srcLen}|${r.priority ?? 0}`;
      const list = siblings.get(k) ?? [];
      list.push(r);
      siblings.set(k, list);
    }
  }
  for (const list of siblings.values()) if (list.length > 1) for (const r of list) out.add(r);
  return out;
}

/**
 * What the routes and policy rules tell the program: the part of the mirror that kroutes.ts
 * keeps incrementally from the route feed's events, and routeFacts() computes from a dump
 * (the reference the incremental one is checked against).
 */
export interface RouteFacts {
  /** IPv4 /32 destinations of local-type routes (the node's own, broadcast, ...). */
  local32: readonly string[];
  /** Keys of fk_local4w (wider local-type IPv4 routes), by their hex. */
  wide: ReadonlyMap<string, Buffer>;
  /** Keys of fk_mpath4 / fk_mpath6 (destinations the kernel picks a leg for by hash). */
  mpath4: ReadonlyMap<string, Buffer>;
  mpath6: ReadonlyMap<string, Buffer>;
  /** The smallest unlocked route MTU per family, 0: none. */
  routeMtu4: number;
  routeMtu6: number;
  /** IPv4 rules whose selectors the reverse-path lookup cannot reproduce. */
  rpRules: boolean;
}

/** RouteFacts from a full dump of routes and IPv4 rules. */
export function routeFacts(routes: readonly Route[], rules: readonly Rule[] = []): RouteFacts {
  const local32: string[] = [];
  const wide = new Map<string, Buffer>();
  for (const r of routes) {
    if (r.family !== AF_INET || !localType(r.type)) continue;
    const dst = r.dst ?? '0.0.0.0';
    if (martianAlready(dst, r.dstLen)) continue;
    if (r.dstLen === 32) local32.push(dst);
    else {
      const key = lpm4Key(dst, r.dstLen);
      wide.set(key.toString('hex'), key);
    }
  }
  const mp = multipathRoutes(routes);
  return {
    local32,
    wide,
    mpath4: prefixKeys(routes, AF_INET, (r) => mp.has(r)),
    mpath6: prefixKeys(routes, AF_INET6, (r) => mp.has(r)),
    routeMtu4: unlockedMtu(routes, AF_INET),
    routeMtu6: unlockedMtu(routes, AF_INET6),
    rpRules: rpRulesDiffer(rules),
  };
}

export function mirrorKernel(k: KernelInputs): KernelMirror {
  return mirrorFrom(routeFacts(k.routes, k.rules ?? []), k);
}

/** The mirror from the route facts and the rest of the inputs (addresses, sysctls, devices). */
export function mirrorFrom(
  facts: RouteFacts,
  k: Omit<KernelInputs, 'routes' | 'rules'>,
): KernelMirror {
  const v4Dev = new Set<number>();
  const local: string[] = [];
  for (const a of k.addresses) {
    if (a.family !== AF_INET) continue;
    v4Dev.add(a.index);
    const ip = a.local ?? a.address;
    if (ip !== undefined && !martianAlready(ip, 32)) local.push(ip);
  }
  for (const dst of facts.local32) local.push(dst);
  const { table, overflow } = buildLocal4(local);
  // the facts' own map when nothing overflowed (the writer sees an unchanged set by identity)
  const wide = overflow.length === 0 ? facts.wide : new Map(facts.wide);
  for (const a of overflow) {
    const key = lpm4Key(a, 32);
    (wide as Map<string, Buffer>).set(key.toString('hex'), key);
  }
  const mpath4 = [...facts.mpath4.values()];
  const mpath6 = [...facts.mpath6.values()];

  const dev: DevState[] = Array.from({ length: FK_MAX_SLOTS }, () => ({ ...NOT_READY }));
  const filled = new Set<number>();
  for (const d of k.devices) {
    if (d.slot < 0 || d.slot >= FK_MAX_SLOTS) continue;
    const st = devState(d, k.sysctls, v4Dev);
    dev[d.slot] =
      d.slot === FK_SLOT_OTHER && filled.has(d.slot) ? merge(dev[d.slot] ?? NOT_READY, st) : st;
    filled.add(d.slot);
  }
  const state: KernelState = {
    mpPolicy4: Math.min(255, Math.max(0, k.sysctls.mpPolicy4)),
    mpPolicy6: Math.min(255, Math.max(0, k.sysctls.mpPolicy6)),
    mpath4: mpath4.length > 0,
    mpath6: mpath6.length > 0,
    local4w: wide.size > 0,
    routeMtu4: facts.routeMtu4,
    routeMtu6: facts.routeMtu6,
    rpRules: facts.rpRules,
    rpGen: k.rpGen ?? 1,
    dev,
    local4: table,
  };
  return {
    state,
    sets: { local4w: wide, mpath4: facts.mpath4, mpath6: facts.mpath6 },
    egress: k.egress ?? new Map(),
    local4w: [...wide.values()],
    mpath4,
    mpath6,
    summary: {
      localAddresses: new Set(local).size,
      localPrefixes: wide.size,
      multipath4: mpath4.length,
      multipath6: mpath6.length,
    },
  };
}
