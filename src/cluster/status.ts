// What `fibkeeper cluster status` and the API show of one member: its lease, the members it
// sees, and every cluster IP with its owner, placement and last move.
import type { HoldSet } from './hold.js';
import type { LeaseKeeper } from './lease.js';
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
  members: { name: string; labels: Record<string, string>; ips: string[]; seenForMs: number }[];
  ips: {
    ip: string;
    owner: string | undefined;
    placement: string | undefined;
    eligible: { nodes?: readonly string[]; labels?: Readonly<Record<string, string>> };
    /** ms since the owner last changed (as this node saw it). */
    lastMoveAgoMs: number | undefined;
    heldHere: boolean;
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
    members: [...s.view.members.values()]
      .map((m) => ({
        name: m.name,
        labels: { ...m.labels },
        ips: [...m.ips],
        seenForMs: Math.round(s.now - m.seenAt),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : 1)),
    ips: [...s.view.desired.values()]
      .map((d) => {
        const move = s.lastMove.get(d.ip);
        return {
          ip: d.ip,
          owner: s.view.owners.get(d.ip)?.node,
          placement: s.placement.get(d.ip),
          eligible: d.eligible,
          lastMoveAgoMs: move ? Math.round(s.now - move.at) : undefined,
          heldHere: held.has(d.ip),
        };
      })
      .sort((a, b) => (a.ip < b.ip ? -1 : 1)),
    problems: [...s.view.problems].map(([key, problem]) => ({ key, problem })),
  };
}
