// What `fibkeeper cluster status` and the API show of one member: its lease, the members it
// sees, and every cluster IP with its owner, placement and last move.
import { announcers } from './active.js';
import type { Conflict } from './claims.js';
import type { HoldMode } from './placement.js';
import type { HoldSet } from './hold.js';
import type { LeaseKeeper } from './lease.js';
import type { PeerStatus } from './peers.js';
import type { ClusterView } from './view.js';

export interface ClusterStatus {
  node: string;
  /** Registered with a live lease and the cluster keys read. */
  ready: boolean;
  lease: {
    id: string | undefined;
    ttlMs: number;
    /** ms since the lease was granted. */
    ageMs: number | undefined;
    /** ms this node may still hold IPs without another keep-alive answer (≤ 0: fenced). */
    holdForMs: number | undefined;
  };
  /**
   * How the current hold is proven: 'lease' (its own), 'grace' (etcd out of reach for every
   * member: their promises), or 'none' (holds nothing).
   */
  holding: 'lease' | 'grace' | 'none';
  /** ms until the current hold set's deadline (the kernel fence's), if it holds anything. */
  holdDeadlineInMs: number | undefined;
  /** This node can hold IPs (its external interface has a link). */
  able: boolean;
  /** The peers as the heartbeat hears them. */
  peers: PeerStatus[];
  members: {
    name: string;
    labels: Record<string, string>;
    ips: string[];
    seenForMs: number;
    /** Drained by an operator (fibkeeper cluster drain): holds nothing until uncordoned. */
    cordoned: boolean;
    /** Says it can hold IPs (false: its external interface has no link). */
    able: boolean;
    /** Announces the IPs it holds over BGP (it holds active-active IPs). */
    bgp: boolean;
  }[];
  ips: {
    ip: string;
    /** single: one owner; active-active: every member in `announcers` holds it. */
    mode: HoldMode;
    /** Active-active: the members that hold and announce it, as the view has them. */
    announcers: string[] | undefined;
    owner: string | undefined;
    placement: string | undefined;
    eligible: { nodes?: readonly string[]; labels?: Readonly<Record<string, string>> };
    /** ms since the owner last changed (as this node saw it). */
    lastMoveAgoMs: number | undefined;
    heldHere: boolean;
    /** Duplicate address detection found another host on it (not taken, not announced). */
    conflict: { mac: string; what: string; agoMs: number } | undefined;
    /** ms until it may be claimed (its previous holder was fenced; its kernel may answer). */
    coolingForMs: number | undefined;
  }[];
  /** Keys or values under the prefix that did not parse (ignored). */
  problems: { key: string; problem: string }[];
}

export function describeStatus(s: {
  node: string;
  now: number;
  lease: LeaseKeeper;
  registered: boolean;
  view: ClusterView;
  placement: Map<string, string>;
  hold: HoldSet;
  lastMove: ReadonlyMap<string, { node: string | undefined; at: number }>;
  able: boolean;
  peers: PeerStatus[];
  conflicts: ReadonlyMap<string, Conflict>;
  cooling: ReadonlyMap<string, number>;
}): ClusterStatus {
  const id = s.lease.id;
  const held = new Set(s.hold.ips);
  return {
    node: s.node,
    ready: s.registered,
    lease: {
      id,
      ttlMs: s.lease.ttlMs,
      ageMs: id === undefined ? undefined : Math.round(s.now - s.lease.grantedAt),
      holdForMs: id === undefined ? undefined : Math.round(s.lease.holdUntil - s.now),
    },
    holding: s.hold.ips.length === 0 ? 'none' : s.hold.reason === 'grace' ? 'grace' : 'lease',
    holdDeadlineInMs: s.hold.ips.length === 0 ? undefined : Math.round(s.hold.deadline - s.now),
    able: s.able,
    peers: s.peers,
    members: [...s.view.members.values()]
      .map((m) => ({
        name: m.name,
        labels: { ...m.labels },
        ips: [...m.ips],
        seenForMs: Math.round(s.now - m.seenAt),
        cordoned: s.view.cordoned.has(m.name),
        able: m.able !== false,
        bgp: m.bgp === true,
      }))
      .sort((a, b) => (a.name < b.name ? -1 : 1)),
    ips: [...s.view.desired.values()]
      .map((d) => {
        const move = s.lastMove.get(d.ip);
        const c = s.conflicts.get(d.ip);
        const cool = s.cooling.get(d.ip);
        return {
          ip: d.ip,
          mode: d.eligible.mode ?? 'single',
          announcers: d.eligible.mode === 'active-active' ? announcers(s.view, d.ip) : undefined,
          owner: s.view.owners.get(d.ip)?.node,
          placement: s.placement.get(d.ip),
          eligible: d.eligible,
          lastMoveAgoMs: move ? Math.round(s.now - move.at) : undefined,
          heldHere: held.has(d.ip),
          conflict: c ? { mac: c.mac, what: c.what, agoMs: Math.round(s.now - c.at) } : undefined,
          coolingForMs: cool !== undefined && cool > s.now ? Math.round(cool - s.now) : undefined,
        };
      })
      .sort((a, b) => (a.ip < b.ip ? -1 : 1)),
    problems: [...s.view.problems].map(([key, problem]) => ({ key, problem })),
  };
}
