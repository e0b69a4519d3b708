// From the config file's cluster.* options to what ClusterMember and EtcdStore take,
// checked, with errors that name the option (the agent calls this when it wires cluster
// mode in).
import { hostname } from 'node:os';
import { ConfigError } from '../errors/index.js';
import type { FibkeeperConfig } from '../config/index.js';
import type { EtcdStoreOptions } from './etcd-store.js';
import { parseLabelList, validateClusterIp } from './keys.js';
import { resolveOptions, type ClusterOptions } from './options.js';

export function clusterSettings(
  cfg: FibkeeperConfig['cluster'],
  fallback: { nodeIP?: string; hostname?: string } = {},
): { options: ClusterOptions; store: EtcdStoreOptions } {
  const wrap = <T>(option: string, fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      throw new ConfigError(option, (err as Error).message, { cause: err });
    }
  };
  if (cfg.etcd.endpoints.length === 0) {
    throw new ConfigError('cluster.etcd.endpoints', 'give at least one etcd endpoint (host:port)');
  }
  if (cfg.leaseTTL % 1000 !== 0) {
    throw new ConfigError('cluster.leaseTTL', `${cfg.leaseTTL} ms: etcd leases have whole seconds`);
  }
  if ((cfg.etcd.certFile === '') !== (cfg.etcd.keyFile === '')) {
    throw new ConfigError(
      'cluster.etcd.certFile',
      'give cluster.etcd.certFile and cluster.etcd.keyFile together',
    );
  }
  if (cfg.etcd.certFile !== '' && cfg.etcd.caFile === '') {
    throw new ConfigError(
      'cluster.etcd.caFile',
      'a client certificate needs TLS: give the CA file too',
    );
  }
  const fromNode = fallback.nodeIP ? [fallback.nodeIP] : [];
  const nodeIps = wrap('cluster.nodeIPs', () =>
    (cfg.nodeIPs.length > 0 ? cfg.nodeIPs : fromNode).map(validateClusterIp),
  );
  const options = resolveOptions({
    nodeName: cfg.nodeName || (fallback.hostname ?? hostname()),
    labels: wrap('cluster.labels', () => parseLabelList(cfg.labels)),
    nodeIps,
    prefix: cfg.prefix,
    leaseTtlSeconds: cfg.leaseTTL / 1000,
    renewIntervalMs: cfg.renewInterval,
    fenceMarginMs: cfg.fenceMargin,
    rebalanceDelayMs: cfg.rebalanceDelay,
    handoverOnStop: cfg.handoverOnStop,
  });
  const store: EtcdStoreOptions = {
    endpoints: cfg.etcd.endpoints,
    requestTimeoutMs: cfg.etcd.requestTimeout,
    ...(cfg.etcd.caFile
      ? {
          tls: {
            ca: cfg.etcd.caFile,
            ...(cfg.etcd.certFile ? { cert: cfg.etcd.certFile, key: cfg.etcd.keyFile } : {}),
          },
        }
      : {}),
  };
  return { options, store };
}
