// Metric group of cluster mode (src/cluster): ownership of cluster external IPs, the lease
// that fences them, and the etcd requests behind both. Label values come from fixed sets
// and start at zero; IPs and node names never become labels.
import { Counter, Gauge, Histogram, type Registry } from '../metrics/index.js';

export const CLUSTER_OPS = ['grant', 'keepalive', 'revoke', 'get', 'txn', 'put', 'delete'] as const;
/** One kind of etcd request. */
export type ClusterOp = (typeof CLUSTER_OPS)[number];

export const OWNERSHIP_CHANGES = ['acquired', 'released', 'fenced', 'restored', 'lost'] as const;
/**
 * acquired: this node claimed an IP · released: it gave one up (handover, IP deleted, stop)
 * · fenced: it stopped holding its IPs because its lease could no longer be proven valid
 * · restored: it holds them again after a late keep-alive answer · lost: its lease expired
 * in etcd and the ownership went with it.
 */
export type OwnershipChange = (typeof OWNERSHIP_CHANGES)[number];

export const RENEW_FAILURES = ['timeout', 'error', 'expired'] as const;
export type RenewFailure = (typeof RENEW_FAILURES)[number];

export const CLUSTER_RESYNC_REASONS = ['compacted', 'error'] as const;
export type ClusterResyncReason = (typeof CLUSTER_RESYNC_REASONS)[number];

export const PEER_EVENTS = ['dead', 'silent'] as const;
/** dead: a peer's process is gone (heartbeat refused, or a new incarnation) · silent: no heartbeat for cluster.peerTimeout. */
export type PeerEvent = (typeof PEER_EVENTS)[number];

export const TAKEOVERS = ['dead', 'silent'] as const;
export type TakeoverKind = (typeof TAKEOVERS)[number];

export interface ClusterMetrics {
  /** One etcd request took `ms` and succeeded or failed. */
  request(op: ClusterOp, ms: number, ok: boolean): void;
  renewFailure(reason: RenewFailure): void;
  ownership(change: OwnershipChange, n?: number): void;
  /** From seeing an IP without an owner to holding it, ms. */
  failover(ms: number): void;
  /** The watch ended and was restarted (compacted: after reading everything again). */
  resync(reason: ClusterResyncReason): void;
  setMembers(n: number): void;
  setHeld(n: number): void;
  setLeaseValid(valid: boolean): void;
  /** The heartbeat told of a peer. */
  peer(event: PeerEvent): void;
  /** This node revoked a peer's lease (dead: at once; silent: with a cool-down). */
  takeover(kind: TakeoverKind): void;
  /** Duplicate address detection before a claim found another host on the IP. */
  conflict(): void;
  /** Holding on the peers' promises (etcd out of reach for every member). */
  setGrace(holding: boolean): void;
  /** A placement round ran (registered, with a lease): what to claim and hand over. */
  reconciled(): void;
}

/** Registers the `fibkeeper_cluster_*` metrics on `registry` and returns their updater. */
export function registerClusterMetrics(registry: Registry): ClusterMetrics {
  const registers = [registry];
  const latency = new Histogram({
    name: 'fibkeeper_cluster_etcd_request_duration_seconds',
    help: 'Time from sending an etcd request to its answer (or failure), by operation.',
    labelNames: ['op'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers,
  });
  const errors = new Counter({
    name: 'fibkeeper_cluster_etcd_request_errors_total',
    help: 'etcd requests that failed or timed out, by operation.',
    labelNames: ['op'],
    registers,
  });
  const renew = new Counter({
    name: 'fibkeeper_cluster_lease_renew_failures_total',
    help: 'Lease keep-alives that failed, by reason (timeout, error, expired: etcd said the lease is gone).',
    labelNames: ['reason'],
    registers,
  });
  const changes = new Counter({
    name: 'fibkeeper_cluster_ownership_changes_total',
    help: "Changes of this node's hold on cluster external IPs, by change (acquired, released, fenced, restored, lost), counted per IP.",
    labelNames: ['change'],
    registers,
  });
  const failover = new Histogram({
    name: 'fibkeeper_cluster_failover_duration_seconds',
    help: "Time from this node seeing a cluster external IP without an owner (its owner's lease expired, was revoked, or it released the IP) to this node holding it.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
    registers,
  });
  const resyncs = new Counter({
    name: 'fibkeeper_cluster_resyncs_total',
    help: 'Restarts of the cluster watch after it ended, by reason (compacted: its revision was compacted away, so every key was read again; error: the connection failed, resumed from the last revision seen).',
    labelNames: ['reason'],
    registers,
  });
  const peers = new Counter({
    name: 'fibkeeper_cluster_peer_events_total',
    help: 'What the heartbeat told of peers: dead (its process is gone: a heartbeat refused, or a new incarnation), silent (no heartbeat for cluster.peerTimeout).',
    labelNames: ['event'],
    registers,
  });
  const takeovers = new Counter({
    name: 'fibkeeper_cluster_takeovers_total',
    help: 'Peer leases this node revoked: dead (at once) or silent (fenced: its IPs cool down for the lease TTL minus the fence margin before a claim).',
    labelNames: ['kind'],
    registers,
  });
  const conflicts = new Counter({
    name: 'fibkeeper_cluster_dad_conflicts_total',
    help: 'Cluster IPs not claimed because duplicate address detection found another host using them.',
    registers,
  });
  const rounds = new Counter({
    name: 'fibkeeper_cluster_reconciles_total',
    help: 'Placement rounds of this member (registered, with a lease): each decides which cluster IPs to claim and which to hand over. An IP that did not move, after a round that saw the change, will not move for it.',
    registers,
  });
  const state = { members: 0, held: 0, valid: 0, grace: 0 };
  new Gauge({
    name: 'fibkeeper_cluster_grace_holding',
    help: '1 while this node holds its cluster IPs beyond its lease on the promises of every other member (etcd out of reach for all of them), else 0.',
    registers,
    collect() {
      this.set(state.grace);
    },
  });
  new Gauge({
    name: 'fibkeeper_cluster_members',
    help: 'Live members (nodes with a lease-bound member key) this node sees.',
    registers,
    collect() {
      this.set(state.members);
    },
  });
  new Gauge({
    name: 'fibkeeper_cluster_ips_held',
    help: 'Cluster external IPs this node may hold now.',
    registers,
    collect() {
      this.set(state.held);
    },
  });
  new Gauge({
    name: 'fibkeeper_cluster_lease_valid',
    help: '1 while this node can prove its lease valid (it may hold IPs), else 0.',
    registers,
    collect() {
      this.set(state.valid);
    },
  });
  for (const op of CLUSTER_OPS) {
    latency.zero({ op });
    errors.inc({ op }, 0);
  }
  for (const reason of RENEW_FAILURES) renew.inc({ reason }, 0);
  for (const change of OWNERSHIP_CHANGES) changes.inc({ change }, 0);
  for (const reason of CLUSTER_RESYNC_REASONS) resyncs.inc({ reason }, 0);
  for (const event of PEER_EVENTS) peers.inc({ event }, 0);
  for (const kind of TAKEOVERS) takeovers.inc({ kind }, 0);
  return {
    request: (op, ms, ok) => {
      latency.observe({ op }, ms / 1000);
      if (!ok) errors.inc({ op });
    },
    renewFailure: (reason) => renew.inc({ reason }),
    ownership: (change, n = 1) => changes.inc({ change }, n),
    failover: (ms) => failover.observe(ms / 1000),
    resync: (reason) => resyncs.inc({ reason }),
    setMembers: (n) => void (state.members = n),
    setHeld: (n) => void (state.held = n),
    setLeaseValid: (v) => void (state.valid = v ? 1 : 0),
    peer: (event) => peers.inc({ event }),
    takeover: (kind) => takeovers.inc({ kind }),
    conflict: () => conflicts.inc(),
    setGrace: (v) => void (state.grace = v ? 1 : 0),
    reconciled: () => rounds.inc(),
  };
}

/** An updater that records nothing (no registry given). */
export function noopClusterMetrics(): ClusterMetrics {
  const nop = (): void => undefined;
  return {
    request: nop,
    renewFailure: nop,
    ownership: nop,
    failover: nop,
    resync: nop,
    setMembers: nop,
    setHeld: nop,
    setLeaseValid: nop,
    peer: nop,
    takeover: nop,
    conflict: nop,
    setGrace: nop,
    reconciled: nop,
  };
}
