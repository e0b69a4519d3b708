// From the config file's cluster.* options (validated by src/config) to what ClusterMember
// and EtcdStore take, when the agent wires cluster mode in. It lives in the agent, which
// reads both: src/cluster never imports the config (src/config checks cluster names with
// src/cluster's own rules, so the other direction would close a circle).
import { hostname } from 'node:os';
import type { FibkeeperConfig } from '../config/index.js';
import { canonicalIp } from '../ipaddr/index.js';
import { parseLabelList } from '../config/index.js';
import { resolveOptions, type ClusterOptions, type EtcdStoreOptions } from '../cluster/index.js';

export function clusterSettings(
  cfg: FibkeeperConfig['cluster'],
  fallback: { nodeIP?: string; hostname?: string; bgp?: boolean } = {},
): { options: ClusterOptions; store: EtcdStoreOptions } {
  const {
    enabled: _e,
    static: _s,
    holderName: _h,
    heartbeatPort: _p,
    etcd,
    labels,
    nodeIPs,
    nodeName,
    ...same
  } = cfg;
  const fromNode = fallback.nodeIP ? [fallback.nodeIP] : [];
  const options = resolveOptions({
    ...same,
    nodeName: nodeName || (fallback.hostname ?? hostname()),
    bgp: fallback.bgp === true,
    labels: parseLabelList(labels),
    nodeIPs: (nodeIPs.length > 0 ? nodeIPs : fromNode).map((ip) => canonicalIp(ip)),
  });
  const store: EtcdStoreOptions = {
    endpoints: etcd.endpoints,
    requestTimeoutMs: etcd.requestTimeout,
    // A keep-alive unanswered for 40% of the hold window moves to the next endpoint, and the
    // keep-alive sent at once there still lands before the fence (docs/cluster.md).
    keepAliveTimeoutMs: Math.min(
      etcd.requestTimeout,
      Math.round(0.4 * (cfg.leaseTTL - cfg.fenceMargin)),
    ),
    ...(etcd.caFile
      ? {
          tls: {
            ca: etcd.caFile,
            ...(etcd.certFile ? { cert: etcd.certFile, key: etcd.keyFile } : {}),
          },
        }
      : {}),
  };
  return { options, store };
}
