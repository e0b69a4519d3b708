// The cluster lab: node namespaces and a client on one L2 segment, a bridge in a namespace
// of its own — what cluster mode's demo act, tests and benchmark run on.
//
//   n1 ext0 10.78.0.11 ─┐
//   n2 ext0 10.78.0.12 ─┼─ br0 (namespace PREFIX-br) ── client eth0 10.78.0.100
//   n3 ext0 10.78.0.13 ─┘
//
// IPv6 mirrors it with fd78::/64. Cluster external IPs come from the same subnets
// (10.78.0.200 and up, fd78::200 and up), so the client reaches them on-link.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { FibkeeperError } from '../errors/index.js';
import { checkPrefix } from './topology.js';

export interface ClusterLabNode {
  /** Node name in the cluster (n1, n2, …). */
  name: string;
  netns: string;
  /** The external interface in the node's namespace. */
  dev: 'ext0';
  /** Its port on the bridge (in the bridge's namespace). */
  port: string;
  mac: string;
  v4: string;
  v6: string;
}

export interface ClusterLab {
  prefix: string;
  /** The bridge's namespace (bridge br0). */
  bridge: string;
  client: { netns: string; dev: 'eth0'; port: string; mac: string; v4: string; v6: string };
  nodes: ClusterLabNode[];
  /** The i-th cluster external IP (0-based) of each family. */
  ip4(i: number): string;
  ip6(i: number): string;
}

const mac = (n: number) => `02:fc:00:00:00:${n.toString(16).padStart(2, '0')}`;

export function describeClusterLab(prefix: string, nodes = 3): ClusterLab {
  checkPrefix(prefix);
  return {
    prefix,
    bridge: `${prefix}-br`,
    client: {
      netns: `${prefix}-client`,
      dev: 'eth0',
      port: 'pc',
      mac: mac(100),
      v4: '10.78.0.100',
      v6: 'fd78::100',
    },
    nodes: Array.from({ length: nodes }, (_, i) => ({
      name: `n${i + 1}`,
      netns: `${prefix}-n${i + 1}`,
      dev: 'ext0' as const,
      port: `p${i + 1}`,
      mac: mac(i + 11),
      v4: `10.78.0.${i + 11}`,
      v6: `fd78::${i + 11}`,
    })),
    ip4: (i) => `10.78.0.${200 + i}`, // up to 55 of them

    ip6: (i) => `fd78::${(0x200 + i).toString(16)}`,
  };
}

function run(cmd: string, args: string[], input?: string): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input });
  if (r.status !== 0) {
    throw new FibkeeperError(`${cmd} ${args.join(' ')}: ${(r.stderr || r.stdout || '').trim()}`, {
      code: 'FIBKEEPER_ERR_SYSTEM',
    });
  }
}

/** The lab's namespace names (for a Reaper to delete should cleanup never run). */
export function clusterLabNamespaces(lab: ClusterLab): string[] {
  return [lab.bridge, lab.client.netns, ...lab.nodes.map((n) => n.netns)];
}

/**
 * Creates the lab (namespaces, bridge, links, addresses; no duplicate address detection,
 * no multicast snooping on the bridge). Fails, removing what it made, if it exists.
 */
export function clusterLabUp(prefix: string, nodes = 3): ClusterLab {
  const lab = describeClusterLab(prefix, nodes);
  if (clusterLabNamespaces(lab).some((ns) => existsSync(`/run/netns/${ns}`))) {
    throw new FibkeeperError(`a cluster lab with prefix "${prefix}" exists already`, {
      code: 'FIBKEEPER_ERR_CONFLICT',
    });
  }
  try {
    for (const ns of clusterLabNamespaces(lab)) {
      run('ip', ['netns', 'add', ns]);
      for (const key of ['all', 'default']) {
        run('ip', ['netns', 'exec', ns, 'sysctl', '-q', '-w', `net.ipv6.conf.${key}.accept_dad=0`]);
      }
    }
    const br = ['link set lo up', 'link add br0 type bridge mcast_snooping 0', 'link set br0 up'];
    const ends = [
      { ...lab.client, name: 'client' },
      ...lab.nodes.map((n) => ({ ...n, dev: n.dev as string })),
    ];
    for (const e of ends) {
      br.push(
        `link add name ${e.port} type veth peer name ${e.dev} address ${e.mac} netns ${e.netns}`,
        `link set ${e.port} master br0 up`,
      );
    }
    run('ip', ['-n', lab.bridge, '-batch', '-'], br.join('\n') + '\n');
    for (const e of ends) {
      const lines = [
        'link set lo up',
        `addr add ${e.v4}/24 dev ${e.dev}`,
        `addr add ${e.v6}/64 dev ${e.dev} nodad`,
        `link set ${e.dev} up`,
      ];
      run('ip', ['-n', e.netns, '-batch', '-'], lines.join('\n') + '\n');
    }
  } catch (err) {
    clusterLabDown(prefix, nodes);
    throw err;
  }
  return lab;
}

/** Deletes the lab's namespaces, ending what runs inside them (by PID). Idempotent. */
export function clusterLabDown(prefix: string, nodes = 3): string[] {
  const lab = describeClusterLab(prefix, nodes);
  const removed: string[] = [];
  for (const ns of clusterLabNamespaces(lab)) {
    if (!existsSync(`/run/netns/${ns}`)) continue;
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
    for (const pid of pids.split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
    spawnSync('ip', ['netns', 'del', ns]);
    removed.push(ns);
  }
  return removed;
}

export interface ClusterAgentOptions {
  /** etcd client endpoint(s) (host:port, or https://host:port) this node's agent uses. */
  etcd: string | readonly string[];
  /** The agent's own directory: control socket, state file. */
  dir: string;
  /** etcd key prefix (default /fibkeeper/). */
  keyPrefix?: string;
  logLevel?: 'info' | 'debug';
  /** Keep neighbor entries for the other nodes (owner cluster). Default true. */
  neighbor?: boolean;
  /** Prometheus endpoint; default off. */
  metrics?: string;
  /** More lines under `cluster:`. */
  cluster?: string[];
}

/** The config file of the agent of `node` in the lab (XDP off: it is not what this is about). */
export function clusterAgentConfig(node: ClusterLabNode, o: ClusterAgentOptions): string {
  return [
    `netns: ${node.netns}`,
    `devices: ["${node.dev}"]`,
    `stateFile: ${o.dir}/state.json`,
    'xdp:',
    '  enabled: false',
    'neighbor:',
    `  enabled: ${o.neighbor ?? true}`,
    'extip:',
    '  enabled: true',
    '  holderKind: bridge',
    `  interface: ${node.dev}`,
    `  nodeIP: ${node.v4}`,
    'cluster:',
    '  enabled: true',
    `  nodeName: ${node.name}`,
    `  nodeIPs: ["${node.v4}", "${node.v6}"]`,
    `  prefix: ${o.keyPrefix ?? '/fibkeeper/'}`,
    '  etcd:',
    `    endpoints: [${(typeof o.etcd === 'string' ? [o.etcd] : o.etcd).map((e) => `"${e}"`).join(', ')}]`,
    ...(o.cluster ?? []).map((l) => `  ${l}`),
    'api:',
    `  socket: ${o.dir}/api.sock`,
    'metrics:',
    `  address: "${o.metrics ?? ''}"`,
    'log:',
    `  level: ${o.logLevel ?? 'info'}`,
  ].join('\n');
}
