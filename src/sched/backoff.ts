// The one exponential backoff: every retry delay of the agent (reconciler retries and
// prunes, lost neighbor entries, failed next-hop lookups, etcd calls, holder repair).

/**
 * Delay before the next attempt after `failures` consecutive failures (1 = after the first):
 * minMs·2^(failures-1), capped at maxMs; failures <= 1 gives minMs. The exponent stops at 52,
 * so the product stays finite whatever the count.
 */
export function backoff(minMs: number, maxMs: number, failures: number): number {
  const exp = Math.min(Math.max(failures - 1, 0), 52);
  return Math.min(maxMs, minMs * 2 ** exp);
}
