// Checks of a whole configuration. `crossValidate` holds the rules between options that
// every command applies when it reads a config; `checkRunnable` adds what `fibkeeper run`
// (and SIGHUP, and `fibkeeper config check`) needs before the agent may start — so that
// `config check` refuses exactly what `run` refuses.
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../errors/index.js';
import { formatHostPort, parseHostPort, parseIp } from '../ipaddr/index.js';
import type { FibkeeperConfig } from './schema.js';
import { checkBgpOptions } from './bgp.js';
import { checkClusterOptions } from './cluster.js';
import { checkIp, checkIps, conflictError } from './rules.js';

/** The longest path a unix socket may have (sun_path is 108 bytes with its NUL). */
export const MAX_SOCKET_PATH = 107;
/** The shortest API token accepted. */
export const MIN_TOKEN_LENGTH = 16;

/** The metrics endpoint's port when metrics.address is a bare IP (status.hostIP in Kubernetes). */
const METRICS_PORT = 9470;

/** Whether the host of "host:port" is a loopback address (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHostPort(address: string): boolean {
  let a;
  try {
    a = parseHostPort(address);
  } catch {
    return false;
  }
  if (a.family === 0) return true; // localhost
  const ip = parseIp(a.host);
  return ip.family === 4 ? ip.bytes[0] === 127 : ip.address === '::1';
}

/** An explicit host:port (or, with a default port, a bare IP), in canonical form; "" stays off. */
function listenAddress(option: string, text: string, defaultPort?: number): string {
  if (text === '') return text;
  try {
    return formatHostPort(parseHostPort(text, defaultPort === undefined ? {} : { defaultPort }));
  } catch (err) {
    throw new ConfigError(option, (err as Error).message, { cause: err });
  }
}

function formatDurationShort(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** The rules between options; every command that reads a config applies them. */
export function crossValidate(cfg: FibkeeperConfig): void {
  if (cfg.neighbor.retryMin > cfg.neighbor.retryMax) {
    throw new ConfigError(
      'neighbor.retryMin',
      `${formatDurationShort(cfg.neighbor.retryMin)} is longer than neighbor.retryMax (${formatDurationShort(cfg.neighbor.retryMax)})`,
    );
  }
  for (const d of cfg.devices) {
    if (!/^[A-Za-z0-9_.:@*?-]{1,15}$/.test(d)) {
      throw new ConfigError('devices', `"${d}" is not a device name or glob (1-15 characters)`);
    }
  }
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(cfg.extip.holderName)) {
    throw new ConfigError('extip.holderName', `"${cfg.extip.holderName}" is not a device name`);
  }
  if (cfg.extip.interface !== '' && !/^[A-Za-z0-9_.:@-]{1,15}$/.test(cfg.extip.interface)) {
    throw new ConfigError('extip.interface', `"${cfg.extip.interface}" is not a device name`);
  }
  if (cfg.extip.interface === cfg.extip.holderName) {
    throw new ConfigError(
      'extip.interface',
      `the external interface cannot be the holder device ${cfg.extip.holderName}`,
    );
  }
  if (cfg.extip.refreshInterval !== 0 && cfg.extip.refreshInterval < 1000) {
    throw new ConfigError('extip.refreshInterval', 'must be 0 (off) or at least 1s');
  }
  if (cfg.xdp.pinDir === '') {
    throw new ConfigError(
      'xdp.pinDir',
      'must be a directory path (in a bpffs, or where one is mounted)',
    );
  }
  if (cfg.extip.nodeIP !== '') {
    try {
      checkIp(cfg.extip.nodeIP);
    } catch (err) {
      throw new ConfigError('extip.nodeIP', (err as Error).message, { cause: err });
    }
  }
  const lists = { forwardable: [] as string[], extip: [] as string[], cluster: [] as string[] };
  for (const [option, key] of [
    ['forwardable.static', 'forwardable'],
    ['extip.static', 'extip'],
    ['cluster.static', 'cluster'],
  ] as const) {
    try {
      lists[key] = checkIps(cfg[key].static, option);
    } catch (err) {
      throw new ConfigError(option, (err as Error).message.replace(`${option}: `, ''), {
        cause: err,
      });
    }
  }
  const forwardable = new Set(lists.forwardable);
  const both = lists.extip.find((ip) => forwardable.has(ip));
  if (both !== undefined) {
    throw new ConfigError(
      'extip.static',
      conflictError(
        both,
        'in forwardable.static',
        'external',
        'remove it from one of the two lists',
      ).message,
    );
  }
  checkClusterLists(lists.cluster, forwardable, new Set(lists.extip));
  if (cfg.cluster.enabled) checkClusterMode(cfg);
  if (Buffer.byteLength(cfg.api.socket) > MAX_SOCKET_PATH) {
    throw new ConfigError(
      'api.socket',
      `the path is ${Buffer.byteLength(cfg.api.socket)} bytes; a unix socket path has at most ${MAX_SOCKET_PATH}`,
    );
  }
  cfg.api.tcp = listenAddress('api.tcp', cfg.api.tcp);
  if (cfg.api.tcp !== '') {
    if (!isLoopbackHostPort(cfg.api.tcp) && cfg.api.tokenFile === '') {
      throw new ConfigError(
        'api.tcp',
        `"${cfg.api.tcp}" is not a loopback address: control from other hosts needs a token; set api.tokenFile to a file holding a secret (e.g. head -c 32 /dev/urandom | base64 > /etc/fibkeeper/token; chmod 600 /etc/fibkeeper/token), or listen on 127.0.0.1`,
      );
    }
  }
  cfg.metrics.address = listenAddress('metrics.address', cfg.metrics.address, METRICS_PORT);
}

/** A cluster IP is held by whichever node owns it: never also forwardable or node-local. */
function checkClusterLists(
  cluster: readonly string[],
  forwardable: ReadonlySet<string>,
  extip: ReadonlySet<string>,
): void {
  for (const ip of cluster) {
    if (forwardable.has(ip)) {
      throw new ConfigError(
        'cluster.static',
        conflictError(
          ip,
          'in forwardable.static',
          'external',
          'remove it from one of the two lists',
        ).message,
      );
    }
    if (extip.has(ip)) {
      throw new ConfigError(
        'cluster.static',
        `${ip} is in extip.static (a node-local external IP, held by this node alone), so it cannot also be a cluster external IP (held by one node of the cluster at a time); remove it from one of the two lists`,
      );
    }
  }
}

/** What cluster mode needs of the other options. */
function checkClusterMode(cfg: FibkeeperConfig): void {
  if (!cfg.extip.enabled) {
    throw new ConfigError(
      'cluster.enabled',
      'cluster mode puts the cluster external IPs on the external-IP holder and announces them from the external interface: set extip.enabled: true (with extip.interface or extip.nodeIP)',
    );
  }
  if (cfg.extip.arpResponder === 'never') {
    throw new ConfigError(
      'extip.arpResponder',
      'cluster mode keeps the kernel from answering ARP for the holder addresses (arp_ignore=1), so fibkeeper must answer for the IPs it holds: set extip.arpResponder to auto or always',
    );
  }
  if (cfg.cluster.etcd.endpoints.length === 0) {
    throw new ConfigError(
      'cluster.etcd.endpoints',
      'cluster mode needs etcd: give at least one endpoint (host:port or https://host:port)',
    );
  }
}

/** A PEM file of cluster.etcd.* must be a readable file. */
function checkPemFile(option: string, path: string): void {
  if (path === '') return;
  try {
    if (!statSync(path).isFile()) throw new Error('not a regular file');
    readFileSync(path);
  } catch (err) {
    throw new ConfigError(option, `${path}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Reads the API token: a regular file, not accessible to others, holding at least
 * MIN_TOKEN_LENGTH characters (surrounding whitespace is not part of it).
 */
export function readTokenFile(path: string): Buffer {
  let text: string;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a regular file');
    if ((st.mode & 0o007) !== 0) {
      throw new Error(
        `readable by others (mode ${(st.mode & 0o777).toString(8)}); chmod o-rwx ${path}`,
      );
    }
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new ConfigError('api.tokenFile', `${path}: ${(err as Error).message}`, { cause: err });
  }
  if (text.length < MIN_TOKEN_LENGTH) {
    throw new ConfigError(
      'api.tokenFile',
      `${path} holds ${text.length} characters; a token has at least ${MIN_TOKEN_LENGTH}`,
    );
  }
  return Buffer.from(text, 'utf8');
}

/**
 * What the agent needs of a configuration beyond the rules every command applies; `run`,
 * SIGHUP and `config check` apply it. Reads the token file (returned, when there is one).
 */
export function checkRunnable(cfg: FibkeeperConfig): { token: Buffer | undefined } {
  if (cfg.extip.enabled && cfg.extip.interface === '' && cfg.extip.nodeIP === '') {
    throw new ConfigError(
      'extip.enabled',
      'external IPs need the interface to announce them from: set extip.interface (a device name) or extip.nodeIP (the node IP that device carries), or set extip.enabled: false',
    );
  }
  if (cfg.cluster.enabled) {
    checkClusterOptions(cfg);
    checkPemFile('cluster.etcd.caFile', cfg.cluster.etcd.caFile);
    checkPemFile('cluster.etcd.certFile', cfg.cluster.etcd.certFile);
    checkPemFile('cluster.etcd.keyFile', cfg.cluster.etcd.keyFile);
  }
  if (cfg.bgp.enabled) checkBgpOptions(cfg);
  const token = cfg.api.tokenFile === '' ? undefined : readTokenFile(cfg.api.tokenFile);
  return { token };
}
