// From the config file's cluster.* options (validated by src/config) to what ClusterMember
// and EtcdStore take (the agent calls this when it wires cluster mode in).
import { hostname } from 'node:os';
import type { FibkeeperConfig } from '../config/index.js';
import { canonicalIp } from '../ipaddr/index.js';
import type { EtcdStoreOptions } from './etcd-store.js';
import { parseLabelList } from './keys.js';
import { resolveOptions, type ClusterOptions } from './options.js';

export function clusterSettings(
  cfg: FibkeeperConfig['cluster'],
  fallback: { nodeIP?: string; hostname?: string } = {},
): { options: ClusterOptions; store: EtcdStoreOptions } {
  const { enabled: _e, static: _s, etcd, labels, nodeIPs, nodeName, ...same } = cfg;
  const fromNode = fallback.nodeIP ? [fallback.nodeIP] : [];
  const options = resolveOptions({
    ...same,
    nodeName: nodeName || (fallback.hostname ?? hostname()),
    labels: parseLabelList(labels),
    nodeIPs: (nodeIPs.length > 0 ? nodeIPs : fromNode).map((ip) => canonicalIp(ip)),
  });
  const store: EtcdStoreOptions = {
    endpoints: etcd.endpoints,
    requestTimeoutMs: etcd.requestTimeout,
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
