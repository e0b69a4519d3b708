// Options of a cluster member: defaults in one place with the reason for each, validated
// at construction with errors that name the option.
import { ConfigError } from '../errors/index.js';
import { normalizePrefix, validateLabels, validateNodeName } from './keys.js';

export interface ClusterOptions {
  /** This node's name in the cluster (unique; cluster.nodeName). */
  nodeName: string;
  /** Labels IPs can select eligible nodes by. */
  labels: Record<string, string>;
  /** This node's own IPs, published for the other members' neighbor entries. */
  nodeIps: string[];
  /** Key prefix in etcd. */
  prefix: string;
  /** Lease TTL in seconds (etcd grants at least ceil(1.5 × its election timeout)). */
  leaseTtlSeconds: number;
  /** Gap between keep-alives, ms. */
  renewIntervalMs: number;
  /** How long before its lease could expire a node stops holding its IPs, ms. */
  fenceMarginMs: number;
  /** How long a new member must have been seen before IPs are handed over to it, ms. */
  rebalanceDelayMs: number;
  /** On stop, revoke the lease so the next owners claim at once. */
  handoverOnStop: boolean;
  /** First and longest retry delay of failed etcd requests (doubling), ms. */
  retryMinMs: number;
  retryMaxMs: number;
}

/**
 * The defaults, measured on a loaded 2-core machine against a local etcd with heartbeat
 * 50 ms / election timeout 500 ms (bench/cluster/lease.mjs; docs/cluster.md has the
 * figures): keep-alive round trips p99 9-32 ms idle, 43-73 ms with a busy event loop; a
 * timer fires up to 163 ms late under that load; etcd deletes an expired lease's keys
 * 0-500 ms after its expiry (its revoke loop runs every 500 ms).
 */
export function defaultOptions(): Omit<ClusterOptions, 'nodeName'> {
  return {
    labels: {},
    nodeIps: [],
    // Keys of every fibkeeper in one etcd; one etcd can host several clusters by prefix.
    prefix: '/fibkeeper/',
    // 1 s: a SIGKILLed owner's IPs move 1.0-1.5 s after its last keep-alive (TTL plus
    // etcd's revoke loop), inside the 2 s target; 2 s would miss it.
    leaseTtlSeconds: 1,
    // 150 ms: four keep-alives per hold window (TTL − margin = 750 ms), so three lost
    // or late ones in a row are survived; 7 requests/s per node is nothing for etcd.
    renewIntervalMs: 150,
    // 250 ms: covers a timer firing late on a busy event loop (≤ 163 ms measured), the
    // holder address removal (≈ 1 ms) and clock-rate drift between nodes (≤ 1 ms per s).
    fenceMarginMs: 250,
    // 1 s: a member that crashes within a second of joining never receives IPs.
    rebalanceDelayMs: 1000,
    handoverOnStop: true,
    retryMinMs: 50,
    retryMaxMs: 1000,
  };
}

/** Fills in defaults and validates; throws ConfigError naming the cluster.* option. */
export function resolveOptions(
  given: Partial<ClusterOptions> & { nodeName: string },
): ClusterOptions {
  const o: ClusterOptions = { ...defaultOptions(), ...given };
  const check = (ok: boolean, option: string, msg: string): void => {
    if (!ok) throw new ConfigError(`cluster.${option}`, msg);
  };
  try {
    validateNodeName(o.nodeName);
  } catch (err) {
    throw new ConfigError('cluster.nodeName', (err as Error).message, { cause: err });
  }
  try {
    o.labels = validateLabels(o.labels);
  } catch (err) {
    throw new ConfigError('cluster.labels', (err as Error).message, { cause: err });
  }
  try {
    o.prefix = normalizePrefix(o.prefix);
  } catch (err) {
    throw new ConfigError('cluster.prefix', (err as Error).message, { cause: err });
  }
  check(
    Number.isInteger(o.leaseTtlSeconds) && o.leaseTtlSeconds >= 1 && o.leaseTtlSeconds <= 3600,
    'leaseTTL',
    `${o.leaseTtlSeconds} s: etcd leases have whole seconds; give 1-3600`,
  );
  const ttlMs = o.leaseTtlSeconds * 1000;
  check(
    o.fenceMarginMs >= 50 && o.fenceMarginMs <= ttlMs / 2,
    'fenceMargin',
    `${o.fenceMarginMs} ms: give 50 ms to half the lease TTL (${ttlMs / 2} ms)`,
  );
  check(
    o.renewIntervalMs >= 10 && o.renewIntervalMs * 2 <= ttlMs - o.fenceMarginMs,
    'renewInterval',
    `${o.renewIntervalMs} ms: at least two keep-alives must fit in the hold window (lease TTL − fence margin = ${ttlMs - o.fenceMarginMs} ms)`,
  );
  check(o.rebalanceDelayMs >= 0, 'rebalanceDelay', 'must not be negative');
  check(
    o.retryMinMs >= 1 && o.retryMaxMs >= o.retryMinMs,
    'retryMax',
    'give 1 ≤ retryMin ≤ retryMax',
  );
  return o;
}
