// What cluster mode needs of the cluster.* options beyond their types and ranges: names,
// labels and the key prefix in the formats etcd keys take, timers that fit in the lease,
// TLS files given in pairs. `checkRunnable` applies it when cluster.enabled; the cluster
// subsystem takes the options as they are.
import { hostname } from 'node:os';
import { ConfigError } from '../errors/index.js';
import { normalizePrefix, parseLabelList, validateNodeName } from './names.js';
import { checkIp } from './rules.js';
import type { FibkeeperConfig } from './schema.js';

/** Runs `fn`; an error from it becomes a ConfigError naming `option`. */
function as<T>(option: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new ConfigError(option, (err as Error).message, { cause: err });
  }
}

export function checkClusterOptions(cfg: FibkeeperConfig, host: () => string = hostname): void {
  const c = cfg.cluster;
  as('cluster.nodeName', () => validateNodeName(c.nodeName || host()));
  as('cluster.labels', () => parseLabelList(c.labels));
  as('cluster.prefix', () => normalizePrefix(c.prefix));
  as('cluster.nodeIPs', () => c.nodeIPs.forEach((ip) => checkIp(ip)));
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(c.holderName)) {
    throw new ConfigError('cluster.holderName', `"${c.holderName}" is not a device name`);
  }
  if ([cfg.extip.holderName, cfg.extip.interface, ...cfg.devices].includes(c.holderName)) {
    throw new ConfigError(
      'cluster.holderName',
      `${c.holderName} is another device of the configuration (extip.holderName, extip.interface or devices): the cluster holder is a TUN device of its own`,
    );
  }
  if (c.leaseTTL % 1000 !== 0) {
    throw new ConfigError('cluster.leaseTTL', `${c.leaseTTL} ms: etcd leases have whole seconds`);
  }
  if (c.fenceMargin > c.leaseTTL / 2) {
    throw new ConfigError(
      'cluster.fenceMargin',
      `${c.fenceMargin} ms: give 50 ms to half the lease TTL (${c.leaseTTL / 2} ms)`,
    );
  }
  const hold = c.leaseTTL - c.fenceMargin;
  if (c.renewInterval * 2 > hold) {
    throw new ConfigError(
      'cluster.renewInterval',
      `${c.renewInterval} ms: at least two keep-alives must fit in the hold window (lease TTL − fence margin = ${hold} ms)`,
    );
  }
  if (c.peerTimeout < 5 * c.heartbeatInterval) {
    throw new ConfigError(
      'cluster.peerTimeout',
      `${c.peerTimeout} ms: give at least 5 heartbeat intervals (cluster.heartbeatInterval ${c.heartbeatInterval} ms), or a few late heartbeats make a live peer silent`,
    );
  }
  if ((c.etcd.certFile === '') !== (c.etcd.keyFile === '')) {
    throw new ConfigError(
      'cluster.etcd.certFile',
      'give cluster.etcd.certFile and cluster.etcd.keyFile together',
    );
  }
  if (c.etcd.certFile !== '' && c.etcd.caFile === '') {
    throw new ConfigError(
      'cluster.etcd.caFile',
      'a client certificate needs TLS: give the CA file too',
    );
  }
}
