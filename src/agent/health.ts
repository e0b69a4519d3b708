// The reasons /readyz, /healthz and `fibkeeper status` give, each prefixed once with the
// subsystem it is about.
import type { NeighborHealth } from '../neighbor/index.js';

/** `reason` with `name: ` in front, unless it starts with that already. */
export function prefixed(name: string, reason: string): string {
  return reason.startsWith(`${name}: `) ? reason : `${name}: ${reason}`;
}

/** What a degraded neighbor subsystem's health says, as one line. */
export function neighborProblems(n: NeighborHealth): string {
  const parts: string[] = [];
  if (n.reconciler.errorCount > 0 || n.reconciler.level !== 'ok')
    parts.push(`${n.reconciler.errorCount} entries failing`);
  if (n.failingLookups) parts.push(`${n.failingLookups} next-hop lookups failing`);
  for (const [feed, why] of Object.entries(n.feeds)) parts.push(`${feed}: ${why}`);
  if (n.unusableCount > 0) {
    const named = n.unusable
      .map(
        (u) =>
          `${u.nexthop} on ${u.device} (${u.state} for ${u.forSeconds} s` +
          (u.forwardable.length > 0 ? `; forwardable ${u.forwardable.join(' ')}` : '') +
          ')',
      )
      .join(', ');
    const more =
      n.unusableCount > n.unusable.length ? ` and ${n.unusableCount - n.unusable.length} more` : '';
    parts.push(`${n.unusableCount} next hops unusable (no ARP/NDP answer): ${named}${more}`);
  }
  return parts.join(', ');
}
