// The rows `fibkeeper status` shows: per forwardable IP its owners and, per device, its next
// hops with the kernel entry's state and flags and the reconcile status; per desired entry
// its device, next hop, references and status; the selected devices; the counters.
import { canonicalIp } from '../ipaddr/index.js';
import type { NeighborCounters } from './metrics.js';
import { neighFlagNames, nudStateNames } from '../netlink/index.js';
import type { StatusKind, Table } from '../statedb/index.js';
import type { Calculator } from './calculator.js';
import type { DeviceTracker } from './devices.js';
import type { ForwardableIPs } from './forwardable.js';
import { isForeign, type ObservedNeighbors } from './observed.js';
import type { Reactor } from './reactor.js';
import type { RouteTracker } from './routes.js';
import {
  neighKey,
  type DesiredNeighbor,
  type ForwardableIP,
  type RefreshMode,
  type UnusableEntry,
} from './types.js';

export interface StatusQuery {
  /** Only this forwardable IP (any spelling). */
  ip?: string;
  /** Only the IPs of this owner. */
  owner?: string;
  /** Only next hops on this device. */
  ifindex?: number;
  /**
   * Only next hops in this state, and the forwardable IPs that lead to them: a kernel NUD
   * state as `ip neigh` names it (FAILED, STALE, …; `none`: no kernel entry) or a reconcile
   * status (pending, done, error).
   */
  state?: string;
  /** Most rows per list (default 1000). */
  limit?: number;
}

/** The kernel's entry for a next hop, as `ip neigh` names states and flags. */
export interface KernelEntryStatus {
  state: string[];
  flags: string[];
  lladdr?: string;
  protocol?: number;
  /**
   * fibkeeper wrote it (its protocol mark, nobody wrote over it), someone else owns it (left
   * alone until it disappears: observed.ts isForeign), or the kernel learned it (adopted on
   * the next write).
   */
  owner: 'fibkeeper' | 'foreign' | 'kernel';
}

export interface NexthopStatus {
  nexthop: string;
  status: StatusKind | 'absent';
  error?: string;
  kernel: KernelEntryStatus | null;
}

export interface ForwardableStatus {
  ip: string;
  owners: readonly string[];
  /** Set when the IP is now an address of this node (then it is not forwarded to). */
  nodeAddress?: string;
  /**
   * Why the IP has no next hop on any selected device: the node's own address, a broadcast
   * or local address, a blackhole/prohibit/unreachable route, a route through a nexthop
   * object whose legs the kernel does not show (each "… on DEV"), or "not routed via a
   * selected device". Absent when it has next hops or a lookup is failing.
   */
  reason?: string;
  devices: {
    ifindex: number;
    device: string;
    nexthops: NexthopStatus[];
    lookupError?: string;
    /** Why there is no next hop on this device, when there is more to say than "no route". */
    noEntry?: string;
  }[];
}

export interface DesiredStatus {
  ifindex: number;
  device: string;
  nexthop: string;
  family: 4 | 6;
  refs: number;
  /** A few of the forwardable IPs that need it. */
  refsSample: string[];
  status: StatusKind;
  error?: string;
  /** Consecutive times the kernel lost it (reset when it resolves). */
  losses: number;
  kernel: KernelEntryStatus | null;
}

export interface DeviceStatus {
  ifindex: number;
  name: string;
  selected: boolean;
  reason?: string;
  mac?: string;
}

export interface NeighborStatus {
  mode: RefreshMode;
  /** What the operator should know of the configuration in use (e.g. a forced `managed` at scale). */
  warnings: string[];
  protocol: number;
  ready: boolean;
  summary: {
    forwardableIps: number;
    desiredEntries: number;
    desiredByStatus: { pending: number; done: number; error: number };
    selectedDevices: number;
    kernelEntriesByState: Record<string, number>;
    /** Desired next hops whose kernel entry belongs to someone else (left alone). */
    foreignEntries: number;
    pendingLookups: number;
    failingLookups: number;
    scheduledRetries: number;
    backingOff: number;
    /**
     * Per family: lookups are shared among the IPs of one route prefix (the policy rules
     * are the defaults); false: one lookup per IP and device.
     */
    sharedLookups: { ipv4: boolean; ipv6: boolean };
    /** (IP, device) pairs whose next hops came from another IP's lookup, since start. */
    sharedPairs: number;
  };
  counters: NeighborCounters;
  devices: DeviceStatus[];
  forwardable: ForwardableStatus[];
  desired: DesiredStatus[];
  /**
   * Desired next hops unresolved past neighbor.unusableAfter (they do not answer ARP/NDP),
   * oldest first, up to the limit.
   */
  unusable: UnusableEntry[];
  /** A list was cut at the limit. */
  truncated: boolean;
}

export interface StatusSources {
  mode: RefreshMode;
  warnings: string[];
  protocol: number;
  ready: boolean;
  forwardable: ForwardableIPs;
  devices: DeviceTracker;
  desired: Table<DesiredNeighbor>;
  observed: ObservedNeighbors;
  calculator: Calculator;
  routes: RouteTracker;
  reactor: Reactor;
  counters: NeighborCounters;
  census: { byState: ReadonlyMap<string, number>; foreignWanted: number };
  pendingLookups: number;
  scheduledRetries: number;
  sharedLookups: { ipv4: boolean; ipv6: boolean };
  unusable: UnusableEntry[];
}

function kernelEntry(s: StatusSources, ifindex: number, ip: string): KernelEntryStatus | null {
  const n = s.observed.find(ifindex, ip);
  if (n === undefined) return null;
  const out: KernelEntryStatus = {
    state: nudStateNames(n.state),
    flags: neighFlagNames(n.flags, n.flagsExt),
    owner: isForeign(n, s.protocol)
      ? 'foreign'
      : n.protocol === s.protocol
        ? 'fibkeeper'
        : 'kernel',
  };
  if (n.lladdr !== undefined) out.lladdr = n.lladdr;
  if (n.protocol !== undefined) out.protocol = n.protocol;
  return out;
}

function nexthopStatus(s: StatusSources, ifindex: number, nexthop: string): NexthopStatus {
  const key = neighKey(ifindex, nexthop);
  const st = s.desired.status(key);
  const out: NexthopStatus = {
    nexthop,
    status: st?.kind ?? 'absent',
    kernel: kernelEntry(s, ifindex, nexthop),
  };
  if (st?.error !== undefined) out.error = st.error;
  return out;
}

function forwardableRow(s: StatusSources, f: ForwardableIP, q: StatusQuery): ForwardableStatus {
  const out: ForwardableStatus = { ip: f.ip, owners: f.owners, devices: [] };
  const node = s.devices.nodeAddresses().get(f.ip);
  if (node !== undefined) out.nodeAddress = node;
  const hops = s.calculator.nexthopsOf(f.ip);
  for (const d of s.devices.selected()) {
    if (q.ifindex !== undefined && d.ifindex !== q.ifindex) continue;
    const nh = hops.get(d.ifindex) ?? [];
    const row: ForwardableStatus['devices'][number] = {
      ifindex: d.ifindex,
      device: d.name,
      nexthops: nh.map((x) => nexthopStatus(s, d.ifindex, x)),
    };
    const err = s.calculator.lookupError(d.ifindex, f.ip);
    if (err !== undefined) row.lookupError = err;
    const why = nh.length === 0 ? s.calculator.noEntryReason(d.ifindex, f.ip) : undefined;
    if (why !== undefined) row.noEntry = why;
    out.devices.push(row);
  }
  const reason = noEntryReason(s, out);
  if (reason !== undefined) out.reason = reason;
  return out;
}

/** The forwardable row's `reason` (see ForwardableStatus.reason). */
function noEntryReason(s: StatusSources, f: ForwardableStatus): string | undefined {
  if (f.nodeAddress !== undefined) return `an address of this node (on ${f.nodeAddress})`;
  if (f.devices.some((d) => d.nexthops.length > 0 || d.lookupError !== undefined)) {
    return undefined;
  }
  const why = f.devices.filter((d) => d.noEntry !== undefined);
  if (why.length > 0) return why.map((d) => `${d.noEntry} on ${d.device}`).join('; ');
  return s.routes.explain(f.ip) ?? 'not routed via a selected device';
}

function desiredRow(s: StatusSources, d: DesiredNeighbor): DesiredStatus {
  const key = neighKey(d.ifindex, d.nexthop);
  const st = s.desired.status(key);
  const sample: string[] = [];
  for (const ip of d.refs) {
    if (sample.length >= 5) break;
    sample.push(ip);
  }
  const out: DesiredStatus = {
    ifindex: d.ifindex,
    device: s.devices.nameOf(d.ifindex) ?? `if${d.ifindex}`,
    nexthop: d.nexthop,
    family: d.family,
    refs: d.refs.size,
    refsSample: sample,
    status: st?.kind ?? 'pending',
    losses: s.reactor.lossesOf(key),
    kernel: kernelEntry(s, d.ifindex, d.nexthop),
  };
  if (st?.error !== undefined) out.error = st.error;
  return out;
}

export function buildStatus(s: StatusSources, q: StatusQuery): NeighborStatus {
  const limit = q.limit ?? 1000;
  let truncated = false;
  let ips: ForwardableIP[];
  if (q.ip !== undefined) {
    const f = s.forwardable.get(canonicalIp(q.ip));
    ips = f === undefined ? [] : [f];
  } else if (q.owner !== undefined) {
    ips = s.forwardable.rowsOf(q.owner);
  } else {
    ips = [];
    for (const ip of s.forwardable.ips()) {
      if (ips.length >= limit) break;
      const f = s.forwardable.get(ip);
      if (f !== undefined) ips.push(f);
    }
  }
  if (
    ips.length > limit ||
    (q.ip === undefined && q.owner === undefined && ips.length < s.forwardable.size)
  ) {
    truncated = true;
  }
  const desired: DesiredStatus[] = [];
  for (const d of objects(s.desired)) {
    if (q.ifindex !== undefined && d.ifindex !== q.ifindex) continue;
    if (desired.length >= limit) {
      truncated = true;
      break;
    }
    if (q.ip !== undefined && !d.refs.has(canonicalIp(q.ip))) continue;
    const row = desiredRow(s, d);
    if (q.state !== undefined && !inState(row, q.state)) continue;
    desired.push(row);
  }
  if (q.state !== undefined && q.ip === undefined) {
    // The IPs that lead to the next hops found (each once, in the order met).
    const seen = new Set<string>();
    const pick: ForwardableIP[] = [];
    for (const d of desired) {
      for (const ip of s.desired.get(neighKey(d.ifindex, d.nexthop))?.refs ?? []) {
        const f = s.forwardable.get(ip);
        if (seen.has(ip) || f === undefined) continue;
        if (q.owner !== undefined && !f.owners.includes(q.owner)) continue;
        seen.add(ip);
        pick.push(f);
      }
    }
    truncated ||= pick.length > limit;
    ips = pick;
  }
  const forwardable = ips.slice(0, limit).map((f) => forwardableRow(s, f, q));
  return {
    mode: s.mode,
    warnings: s.warnings,
    protocol: s.protocol,
    ready: s.ready,
    summary: {
      forwardableIps: s.forwardable.size,
      desiredEntries: s.desired.size,
      desiredByStatus: s.desired.statusCounts(),
      selectedDevices: s.devices.selected().length,
      kernelEntriesByState: Object.fromEntries(s.census.byState),
      foreignEntries: s.census.foreignWanted,
      pendingLookups: s.pendingLookups,
      failingLookups: s.calculator.failingLookups,
      scheduledRetries: s.scheduledRetries,
      backingOff: s.reactor.backingOff,
      sharedLookups: s.sharedLookups,
      sharedPairs: s.calculator.shared,
    },
    counters: s.counters,
    devices: s.devices.table.list().map((d) => {
      const o: DeviceStatus = { ifindex: d.ifindex, name: d.name, selected: d.selected };
      if (d.reason !== undefined) o.reason = d.reason;
      if (d.mac !== undefined) o.mac = d.mac;
      return o;
    }),
    forwardable,
    desired,
    unusable: s.unusable.slice(0, limit),
    truncated: truncated || s.unusable.length > limit,
  };
}

/** Whether a next hop is in `state`: a NUD state, `none` (no kernel entry) or a reconcile status. */
export function inState(row: DesiredStatus, state: string): boolean {
  if (state === 'none') return row.kernel === null;
  if (state === row.status) return true;
  return row.kernel?.state.includes(state.toUpperCase()) ?? false;
}

function* objects<T>(t: Table<T>): Iterable<T> {
  for (const r of t.rows()) yield r.object;
}
