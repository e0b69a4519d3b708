// What a member may hold now, computed from its lease, its peers' promises and its view: the
// pure part of ClusterMember's hold sets, and the owner-key moves of a handover.
import { sameIps, type HoldReason, type HoldSet } from './hold.js';
import { encodeOwner, type KeyLayout } from './keys.js';
import { holdable } from './member-util.js';
import { place } from './placement.js';
import { isActiveActive, singleHolderIps } from './active.js';
import type { Move } from './takeover.js';
import type { ClusterView } from './view.js';

/** Reasons that stand when the IPs can no longer be held (the others become fence). */
const FINAL_REASONS: ReadonlySet<HoldReason> = new Set(['start', 'stop', 'fence', 'lost']);

export interface HoldInput {
  now: number;
  reason: HoldReason;
  /** The lease, while the node believes it exists. */
  lease: string | undefined;
  /** The lease is provably valid now, and until when it lets the node hold. */
  byLease: boolean;
  holdUntil: number;
  /** Until when every other member promised not to claim (undefined: not all of them). */
  grace: number | undefined;
  /** How long a promise lasts (the deadline moves on grace in quarters of it). */
  graceMs: number;
  /** Registered, read, able, not stopping: it may hold at all. */
  mayHoldAny: boolean;
  /** The IPs it owns under `lease` (desired, not being released). */
  owned: (lease: string) => string[];
  prev: HoldSet;
}

export interface HoldOutput {
  set: HoldSet;
  /** Holding past the lease's proof (on the promises alone). */
  onGrace: boolean;
  /** The set differs from `prev` (publish it). */
  changed: boolean;
}

export function computeHold(i: HoldInput): HoldOutput {
  const { now, lease, byLease, grace } = i;
  let reason = i.reason;
  // Past its lease's proof, a member holds on only while every peer has promised not to
  // claim (an etcd outage that all of them share), and never once etcd said it is gone.
  // The promises count as soon as they come (not only once the lease's proof ran out), so
  // that the kernel fence's deadline moves past the lease's before it is reached.
  const byGrace = lease !== undefined && grace !== undefined && now < grace;
  const graceAhead = byGrace && grace > i.holdUntil;
  const valid = byLease || byGrace;
  // Past holdUntil before the fence timer ran (a hung process woken by the watch's data or
  // a claim's answer first): the drop is the fence's, whatever woke us.
  if (lease !== undefined && !valid && !FINAL_REASONS.has(reason)) reason = 'fence';
  else if (valid && reason === 'fence') reason = byLease ? 'renew' : 'grace';
  else if (!byLease && byGrace && !FINAL_REASONS.has(reason)) reason = 'grace';
  const ips = valid && i.mayHoldAny && lease !== undefined ? i.owned(lease).sort() : [];
  let deadline = ips.length > 0 ? Math.max(i.holdUntil, graceAhead ? grace : -Infinity) : -Infinity;
  const prev = i.prev;
  // On grace the deadline moves with every heartbeat: it is published (and the kernel fence
  // moved) in steps of a quarter of a promise, not 100 times a second. A deadline once
  // proven stays proven (a promise is not taken back).
  if (
    graceAhead &&
    sameIps(prev.ips, ips) &&
    prev.deadline > now &&
    deadline >= prev.deadline &&
    deadline - prev.deadline < i.graceMs / 4
  ) {
    deadline = prev.deadline;
  }
  const changed = reason === 'start' || !sameIps(prev.ips, ips) || prev.deadline !== deadline;
  const set: HoldSet = {
    ips,
    deadline,
    reason: sameIps(prev.ips, ips) && reason === 'sync' ? 'renew' : reason,
    at: now,
  };
  return { set, onGrace: ips.length > 0 && !byLease, changed };
}

/**
 * The owner-key moves that hand `ips` to the members placement names without `without` (a
 * member leaving, or dead): one per IP that has such a member with a lease.
 */
export function handoverMoves(
  view: ClusterView,
  layout: KeyLayout,
  ips: readonly string[],
  without: string,
): Move[] {
  const members = holdable(view).filter((m) => m.name !== without);
  // The whole set is placed (bounded loads depend on it); the moves are for `ips` only.
  const placement = place(singleHolderIps(view), members);
  const out: Move[] = [];
  for (const ip of ips) {
    if (!view.desired.has(ip) || isActiveActive(view, ip)) continue;
    const target = placement.get(ip);
    const m = target === undefined ? undefined : view.members.get(target);
    if (m === undefined) continue;
    out.push({ key: layout.owner(ip), value: encodeOwner(m.name), toLease: m.lease });
  }
  return out;
}
