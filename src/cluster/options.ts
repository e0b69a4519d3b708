// Options of a cluster member: the config's `cluster.*` options under their own names
// (durations in ms), validated by src/config before they get here; the defaults, each with
// its reason, are the config table's (src/config/schema.ts). This file fills in what a
// caller (a test, a benchmark) leaves out.
import { defaultConfig, type FibkeeperConfig } from '../config/index.js';

type ClusterSection = FibkeeperConfig['cluster'];

/**
 * nodeName (unique in the cluster), nodeIPs (published for the other members' neighbor
 * entries), prefix (of the keys in etcd), leaseTTL (whole seconds, in ms), renewInterval,
 * fenceMargin (how long before its lease could expire a node stops holding its IPs),
 * rebalanceDelay (how long a new member must have been seen before IPs are handed over to
 * it), handoverOnStop (revoke the lease on stop so the next owners claim at once),
 * heartbeatInterval and peerTimeout (the peer heartbeat, peers.ts; peerTimeout is also how
 * long a promise not to claim lasts); labels as a map (the config's key=value list, parsed).
 */
export type ClusterOptions = Pick<
  ClusterSection,
  | 'nodeName'
  | 'nodeIPs'
  | 'prefix'
  | 'leaseTTL'
  | 'renewInterval'
  | 'fenceMargin'
  | 'rebalanceDelay'
  | 'handoverOnStop'
  | 'heartbeatInterval'
  | 'peerTimeout'
  | 'withdrawLinger'
> & {
  /** It announces the IPs it holds over BGP (bgp.enabled): it holds active-active IPs. */
  bgp: boolean;
  /** Labels IPs can select eligible nodes by. */
  labels: Record<string, string>;
  /** First and longest retry delay of failed etcd requests (doubling), ms. */
  retryMinMs: number;
  retryMaxMs: number;
};

/** The config table's defaults, and the retry delays (not options). */
export function defaultOptions(): Omit<ClusterOptions, 'nodeName'> {
  const c = defaultConfig().cluster;
  return {
    labels: {},
    nodeIPs: c.nodeIPs,
    prefix: c.prefix,
    leaseTTL: c.leaseTTL,
    renewInterval: c.renewInterval,
    fenceMargin: c.fenceMargin,
    rebalanceDelay: c.rebalanceDelay,
    handoverOnStop: c.handoverOnStop,
    heartbeatInterval: c.heartbeatInterval,
    peerTimeout: c.peerTimeout,
    withdrawLinger: c.withdrawLinger,
    bgp: false,
    retryMinMs: 50,
    retryMaxMs: 1000,
  };
}

/** `given` with the defaults filled in. */
export function resolveOptions(
  given: Partial<ClusterOptions> & { nodeName: string },
): ClusterOptions {
  return { ...defaultOptions(), ...given };
}
