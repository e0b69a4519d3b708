// `fibkeeper cluster ...`: the cluster external IPs (the desired set in etcd, through the
// local agent's control API), the member's view, and `cluster prepare` (the sysctls cluster
// mode needs, for an init container that may write /proc/sys when the agent may not).
import type { ClusterIpEntry } from '../api/index.js';
import { OPTIONS, flagName, loadConfig } from '../config/index.js';
import { enforceClusterSysctls, findExternal, readClusterSysctls } from '../extip/index.js';
import { NetlinkHandle } from '../netlink/index.js';
import { sleep, systemClock } from '../sched/index.js';
import { checkedIps, clientFor, documentCommand } from './client-commands.js';
import {
  EXIT_OK,
  flag,
  UsageError,
  str,
  type Command,
  type OptionsSpec,
  type ParsedArgs,
} from './command.js';
import { columns, formatClusterStatus } from './status-format.js';
import { OUTPUT_HELP, OUTPUT_OPTIONS, outputOf, printData } from './output.js';

const COMMON: OptionsSpec = { socket: { type: 'string' }, config: { type: 'string' } };
const COMMON_HELP = [
  '  --socket PATH   control socket of the agent (default: api.socket of --config, else',
  '                  $FIBKEEPER_SOCKET)',
  '  --config FILE   read api.socket from this config file',
];

const needIps = (args: ParsedArgs): string[] => checkedIps(args);

/** --label k=v (repeated) as an object; a malformed one is a usage error. */
function labelsOf(args: ParsedArgs): Record<string, string> {
  const out: Record<string, string> = {};
  const given = args.values.label;
  for (const item of Array.isArray(given) ? given : []) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`--label ${item}: write it as KEY=VALUE`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

const addCommand: Command = {
  name: 'cluster extip add',
  summary:
    'Add cluster external IPs to the desired set in etcd (one node of the cluster holds each)',
  usage: 'IP... [--node NAME]... [--label KEY=VALUE]...',
  help: [
    'Options:',
    '  --node NAME         only these nodes may hold the IPs (repeat; default: any node)',
    '  --label KEY=VALUE   only nodes with all these labels (cluster.labels) may hold them',
    '  --active-active     every eligible node that announces over BGP (bgp.enabled) holds',
    '                      them at once and the router spreads the flows (ECMP); no node',
    '                      answers ARP/NDP for them. A drained node withdraws its route',
    '                      first and drops the address cluster.withdrawLinger later',
    ...COMMON_HELP,
    '',
    'Adding an IP that is there already replaces its eligibility and mode. The owner is',
    'chosen by placement over the live eligible members: `fibkeeper cluster status` shows it.',
  ].join('\n'),
  options: {
    ...COMMON,
    node: { type: 'string', multiple: true },
    label: { type: 'string', multiple: true },
    'active-active': { type: 'boolean' },
  },
  positionals: true,
  async run(args, io) {
    const ips = needIps(args);
    const nodes = Array.isArray(args.values.node) ? args.values.node : [];
    const aa = flag(args, 'active-active');
    const r = await clientFor(args).call<{ ips: string[] }>('POST', '/v1/cluster/extip', {
      ips,
      nodes,
      labels: labelsOf(args),
      ...(aa ? { mode: 'active-active' } : {}),
    });
    io.out(`added to the cluster${aa ? ' (active-active)' : ''}: ${r.ips.join(' ')}\n`);
    return EXIT_OK;
  },
};

const delCommand: Command = {
  name: 'cluster extip del',
  summary: 'Remove cluster external IPs from the desired set (their owner drops them)',
  usage: 'IP...',
  help: ['Options:', ...COMMON_HELP].join('\n'),
  options: { ...COMMON },
  positionals: true,
  async run(args, io) {
    const ips = needIps(args);
    const r = await clientFor(args).call<{ deleted: string[] }>('DELETE', '/v1/cluster/extip', {
      ips,
    });
    const absent = ips.length - r.deleted.length;
    io.out(
      `removed from the cluster: ${r.deleted.join(' ') || '(none)'}${absent > 0 ? ` (${absent} not in the desired set)` : ''}\n`,
    );
    return EXIT_OK;
  },
};

const listCommand: Command = {
  name: 'cluster extip list',
  summary: 'List the cluster external IPs as etcd has them, with eligibility and owner',
  usage: '[-o text|json|yaml]',
  help: ['Options:', ...OUTPUT_HELP, ...COMMON_HELP].join('\n'),
  options: { ...COMMON, ...OUTPUT_OPTIONS },
  async run(args, io) {
    const o = outputOf(args, ['text', 'json', 'yaml']);
    const r = await clientFor(args).call<{ extip: ClusterIpEntry[] }>('GET', '/v1/cluster/extip');
    if (printData(io, o, r.extip)) return EXIT_OK;
    const rows = r.extip.map((e) => [
      e.ip,
      e.mode,
      e.mode === 'active-active' ? '(all)' : (e.owner ?? '-'),
      e.nodes.join(',') || '*',
      Object.entries(e.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',') || '*',
    ]);
    io.out(columns(['IP', 'MODE', 'OWNER', 'NODES', 'LABELS'], rows));
    return EXIT_OK;
  },
};

interface DrainView {
  node?: string;
  ips?: { ip: string; owner?: string | null }[];
}

const drainCommand: Command = {
  name: 'cluster drain',
  summary: 'Move every cluster IP off a node with graceful handovers; it takes none until uncordon',
  usage: 'NODE [--wait] [--timeout SECONDS]',
  help: [
    'Options:',
    '  --wait            wait until the node holds no cluster IP (as this agent sees it)',
    '  --timeout S       give up waiting after S seconds (default 30)',
    ...COMMON_HELP,
    '',
    'Writes cordon/NODE in etcd: every member places the IPs without NODE, so NODE hands',
    'each of its IPs over (it drops the address, then deletes its owner key; the next owner',
    'claims at once), and it takes none until `fibkeeper cluster uncordon NODE`. `cluster',
    'status` shows the node as cordoned. Any agent of the cluster can drain any node.',
  ].join('\n'),
  options: { ...COMMON, wait: { type: 'boolean' }, timeout: { type: 'string' } },
  positionals: true,
  async run(args, io) {
    const node = args.positionals[0];
    if (node === undefined || args.positionals.length > 1) throw new UsageError('give one NODE');
    const client = clientFor(args);
    const r = await client.call<{ new: boolean }>('POST', '/v1/cluster/drain', { node });
    io.out(
      `${node} drained${r.new ? '' : ' (it was already)'}; it takes no cluster IP until uncordon\n`,
    );
    if (!flag(args, 'wait')) return EXIT_OK;
    const timeoutS = Number(str(args, 'timeout') ?? '30');
    if (!(timeoutS > 0)) throw new UsageError('--timeout must be a positive number of seconds');
    const end = Date.now() + timeoutS * 1000;
    for (;;) {
      const st = await client.call<DrainView>('GET', '/v1/cluster/status');
      const left = (st.ips ?? []).filter((i) => i.owner === node).map((i) => i.ip);
      if (left.length === 0) {
        io.out(`${node} holds no cluster IP\n`);
        return EXIT_OK;
      }
      if (Date.now() > end) {
        io.err(
          `${node} still holds ${left.length} cluster IP(s) after ${timeoutS} s: ${left.slice(0, 5).join(' ')}\n`,
        );
        return 1;
      }
      await sleep(systemClock, 200);
    }
  },
};

const uncordonCommand: Command = {
  name: 'cluster uncordon',
  summary: 'Let a drained node hold cluster IPs again (placement gives it its share back)',
  usage: 'NODE',
  help: ['Options:', ...COMMON_HELP].join('\n'),
  options: { ...COMMON },
  positionals: true,
  async run(args, io) {
    const node = args.positionals[0];
    if (node === undefined || args.positionals.length > 1) throw new UsageError('give one NODE');
    const r = await clientFor(args).call<{ was: boolean }>('POST', '/v1/cluster/uncordon', {
      node,
    });
    io.out(r.was ? `${node} may hold cluster IPs again\n` : `${node} was not drained\n`);
    return EXIT_OK;
  },
};

const statusCommand = documentCommand(
  'cluster status',
  "This member's view: members and their lease age, every cluster IP with its owner",
  '/v1/cluster/status',
  formatClusterStatus,
);

const optionFlags: OptionsSpec = Object.fromEntries(
  OPTIONS.map((o) => [flagName(o.path), { type: 'string' as const }]),
);

const prepareCommand: Command = {
  name: 'cluster prepare',
  summary: 'Set the sysctls cluster mode needs on the external interface (for init containers)',
  usage: '[--config FILE] [--<option>=VALUE ...]',
  help: [
    'Options:',
    '  --config FILE   the agent config; option flags as for `fibkeeper run`',
    '',
    'With cluster.enabled, sets net.ipv4.conf.IFACE.arp_ignore=1 and arp_announce=2 on the',
    'external interface (extip.interface, or the device that carries extip.nodeIP) in the',
    'managed namespace, so that the kernel never answers for the holder addresses, and prints',
    'the values. The agent sets them itself where it may write /proc/sys; in a container it',
    'may not (the DaemonSet runs this in its privileged init container). Does nothing when',
    'cluster mode is off.',
  ].join('\n'),
  options: { config: { type: 'string' }, ...optionFlags },
  async run(args, io) {
    const flags: Record<string, string> = {};
    for (const o of OPTIONS) {
      const v = str(args, flagName(o.path));
      if (v !== undefined) flags[flagName(o.path)] = v;
    }
    const cfg = loadConfig(str(args, 'config'), flags);
    if (!cfg.cluster.enabled) {
      io.out('cluster mode is off (cluster.enabled: false): nothing to set\n');
      return EXIT_OK;
    }
    const netns = cfg.netns || undefined;
    const nl = NetlinkHandle.open(netns ? { netns } : {});
    try {
      const x = cfg.extip;
      const ext = await findExternal(nl, x.interface, x.nodeIP, x.holderName);
      const set = enforceClusterSysctls(netns, ext.name);
      for (const s of readClusterSysctls(netns, ext.name)) {
        io.out(`${s.key} = ${s.effective}${set.includes(s.key) ? ' (set)' : ''}\n`);
      }
    } finally {
      nl.close();
    }
    return EXIT_OK;
  },
};

export const clusterCommands: Command[] = [
  addCommand,
  delCommand,
  listCommand,
  statusCommand,
  drainCommand,
  uncordonCommand,
  prepareCommand,
];
