// Small pure helpers of ClusterMember over its view.
import type { Clock } from '../sched/index.js';
import type { ClusterMetrics } from './metrics.js';
import type { HoldReason } from './hold.js';
import type { PlacementMember } from './placement.js';
import type { ClusterView } from './view.js';

/** The members placement may give IPs to: not drained (cordon/), and able (a link). */
export function holdable(view: ClusterView): PlacementMember[] {
  return [...view.members.values()].filter((m) => m.able !== false && !view.cordoned.has(m.name));
}

/** The other members' node IPs, sorted (forwardable with owner `cluster`). */
export function peerIps(view: ClusterView, me: string): string[] {
  const ips = new Set<string>();
  for (const m of view.members.values()) if (m.name !== me) for (const ip of m.ips) ips.add(ip);
  return [...ips].sort();
}

/** Remembers when each desired IP's owner last changed (status: last move). */
export function trackMoves(
  view: ClusterView,
  lastMove: Map<string, { node: string | undefined; at: number }>,
  now: number,
): void {
  for (const ip of view.desired.keys()) {
    const node = view.owners.get(ip)?.node;
    const last = lastMove.get(ip);
    if (!last || last.node !== node) lastMove.set(ip, { node, at: now });
  }
  for (const ip of lastMove.keys()) if (!view.desired.has(ip)) lastMove.delete(ip);
}

/** Counts what a new hold set changed, per IP, by why. */
export function countChanges(
  metrics: ClusterMetrics,
  before: readonly string[],
  after: readonly string[],
  reason: HoldReason,
): void {
  const had = new Set(before);
  const gained = after.filter((ip) => !had.delete(ip)).length;
  const lostN = had.size;
  if (gained > 0) metrics.ownership(reason === 'restore' ? 'restored' : 'acquired', gained);
  if (lostN > 0) {
    const change = reason === 'fence' ? 'fenced' : reason === 'lost' ? 'lost' : 'released';
    metrics.ownership(change, lostN);
  }
}

/** Runs an etcd request and records its duration and outcome. */
export async function timedRequest<T>(
  clock: Clock,
  metrics: ClusterMetrics,
  op: 'get' | 'txn',
  fn: () => Promise<T>,
): Promise<T> {
  const sent = clock.now();
  try {
    const r = await fn();
    metrics.request(op, clock.now() - sent, true);
    return r;
  } catch (err) {
    metrics.request(op, clock.now() - sent, false);
    throw err;
  }
}
