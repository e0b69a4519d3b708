// Commands that talk to a running agent over the control API.
import { readFileSync } from 'node:fs';
import type { StatusDocument } from '../agent/index.js';
import {
  ApiClient,
  STATUS_STATES,
  type ExternalIpEntry,
  type ForwardableEntry,
} from '../api/index.js';
import { defaultConfig, loadConfig } from '../config/index.js';
import {
  EXIT_FAILED,
  EXIT_OK,
  UsageError,
  flag,
  str,
  type Command,
  type OptionsSpec,
  type ParsedArgs,
} from './command.js';
import { describeError } from '../errors/index.js';
import { formatStatus } from './status-format.js';
import { formatExplain } from './explain-format.js';
import { OUTPUT_HELP, OUTPUT_OPTIONS, outputOf, printData } from './output.js';
import { watchChanges } from './watch.js';
import { stringify as stringifyYaml } from 'yaml';
import { canonicalIp } from '../ipaddr/index.js';

export const COMMON: OptionsSpec = {
  socket: { type: 'string' },
  config: { type: 'string' },
};
export const COMMON_HELP = [
  '  --socket PATH   control socket of the agent (default: api.socket of --config, else',
  `                  $FIBKEEPER_SOCKET, else ${defaultConfig().api.socket})`,
  '  --config FILE   read api.socket from this config file',
];

/** The variable that names the control socket, as KUBECONFIG names kubectl's config. */
export const SOCKET_ENV = 'FIBKEEPER_SOCKET';

/** The agent's client: --socket, else api.socket of --config, else $FIBKEEPER_SOCKET, else the default config's. */
export function clientFor(args: ParsedArgs): ApiClient {
  const config = str(args, 'config');
  const env = process.env[SOCKET_ENV];
  const socket =
    str(args, 'socket') ??
    (config === undefined && env ? env : undefined) ??
    loadConfig(config).api.socket;
  return new ApiClient(socket);
}

/**
 * The IPs given as arguments, each checked to be an IP address at all (a malformed one is a
 * usage error, exit 2, and nothing is sent); whether the agent takes it is the agent's call.
 */
export function checkedIps(args: ParsedArgs, atLeastOne = true): string[] {
  if (atLeastOne && args.positionals.length === 0) {
    throw new UsageError('give at least one IP address');
  }
  for (const ip of args.positionals) {
    try {
      canonicalIp(ip);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  return args.positionals;
}

const needIps = (args: ParsedArgs): string[] => checkedIps(args);

function needOwner(args: ParsedArgs): string {
  const owner = str(args, 'owner');
  if (!owner) throw new UsageError('--owner NAME is required');
  return owner;
}

/**
 * What a forwardable command changed, from the agent's answer: the IPs the owner took (add)
 * or gave up (del) among those given; an agent that does not count gets the old line.
 */
function changeLine(
  verb: 'add' | 'del' | 'set',
  owner: string,
  given: number,
  res: unknown,
): string {
  const r = (res ?? {}) as { added?: unknown; removed?: unknown };
  const added = typeof r.added === 'number' ? r.added : undefined;
  const removed = typeof r.removed === 'number' ? r.removed : undefined;
  if (verb === 'set') {
    const what = added === undefined || removed === undefined ? '' : ` (+${added}, -${removed})`;
    return `replaced: owner ${owner} now holds ${given} IP(s)${what}\n`;
  }
  const n = verb === 'add' ? added : removed;
  const word = verb === 'add' ? 'added' : 'removed';
  if (n === undefined || n === given) return `${word}: ${given} IP(s) for owner ${owner}\n`;
  const why = verb === 'add' ? 'already held' : 'not held by it';
  return `${word}: ${n} of ${given} IP(s) for owner ${owner} (${given - n} ${why})\n`;
}

/** IPs in a bulk body: its lines that are neither empty nor comments. */
function countLines(data: Buffer): number {
  let n = 0;
  for (const line of data.toString('latin1').split('\n')) {
    const t = line.trim();
    if (t !== '' && !t.startsWith('#')) n++;
  }
  return n;
}

/** `--file PATH` (`-`: standard input): one IP a line, sent as one bulk request. */
async function fromFile(
  verb: 'add' | 'del' | 'set',
  args: ParsedArgs,
  owner: string,
  file: string,
): Promise<{ given: number; res: unknown }> {
  if (args.positionals.length > 0)
    throw new UsageError('give IPs as arguments or --file, not both');
  let data: Buffer;
  try {
    data = readFileSync(file === '-' ? 0 : file);
  } catch (err) {
    throw new UsageError(`--file ${file}: ${(err as Error).message}`);
  }
  const c = clientFor(args);
  const o = encodeURIComponent(owner);
  const res =
    verb === 'set'
      ? await c.callLines('PUT', `/v1/owners/${o}/forwardable`, data)
      : await c.callLines(verb === 'add' ? 'POST' : 'DELETE', `/v1/forwardable?owner=${o}`, data);
  return { given: countLines(data), res };
}

function forwardable(verb: 'add' | 'del' | 'set', summary: string, method: string): Command {
  return {
    name: `forwardable ${verb}`,
    summary,
    usage:
      verb === 'set'
        ? '--owner NAME [IP... | --file PATH]'
        : 'IP... --owner NAME | --file PATH --owner NAME',
    help: [
      'Options:',
      '  --owner NAME    who wants these IPs forwardable (an IP stays while it has an owner)',
      '  --file PATH     read the IPs from PATH (- for standard input), one IP a line (empty',
      '                  lines and lines starting with # are skipped): one bulk request of up',
      '                  to 64 MiB (a million IPs take about 13 MiB), all applied or none',
      ...COMMON_HELP,
    ].join('\n'),
    options: { ...COMMON, owner: { type: 'string' }, file: { type: 'string' } },
    positionals: true,
    async run(args, io) {
      const owner = needOwner(args);
      const file = str(args, 'file');
      if (file !== undefined) {
        const { given, res } = await fromFile(verb, args, owner, file);
        io.out(changeLine(verb, owner, given, res));
        return EXIT_OK;
      }
      const ips = checkedIps(args, verb !== 'set');
      const c = clientFor(args);
      const res =
        verb === 'set'
          ? await c.call('PUT', `/v1/owners/${encodeURIComponent(owner)}/forwardable`, { ips })
          : await c.call(method, '/v1/forwardable', { owner, ips });
      io.out(changeLine(verb, owner, ips.length, res));
      return EXIT_OK;
    },
  };
}

export const forwardableCommands: Command[] = [
  forwardable(
    'add',
    'Make IPs forwardable for an owner (their next hops get fresh neighbor entries)',
    'POST',
  ),
  forwardable(
    'del',
    "Remove an owner's claim on IPs (an IP with no owner left stops being kept)",
    'DELETE',
  ),
  forwardable(
    'set',
    "Replace an owner's whole set of forwardable IPs (none given: remove them all)",
    'PUT',
  ),
  {
    name: 'forwardable list',
    summary: 'List the forwardable IPs and their owners',
    usage: '[-o text|wide|json|yaml]',
    help: [
      'Options:',
      ...OUTPUT_HELP,
      '  -o wide         also where each IP leads: per device its next hop and the kernel',
      "                  entry's state (as `ip neigh` shows it), or why it leads nowhere",
      ...COMMON_HELP,
    ].join('\n'),
    options: { ...COMMON, ...OUTPUT_OPTIONS },
    async run(args, io) {
      const o = outputOf(args, ['text', 'wide', 'json', 'yaml']);
      const client = clientFor(args);
      const r = await client.call<{ forwardable: ForwardableEntry[] }>('GET', '/v1/forwardable');
      if (printData(io, o, r.forwardable)) return EXIT_OK;
      if (o === 'wide') {
        const limit = Math.max(1, r.forwardable.length);
        const st = await client.call<{ neighbor?: { forwardable?: WideRow[] } }>(
          'GET',
          `/v1/status?limit=${limit}`,
        );
        io.out(wideForwardable(r.forwardable, st.neighbor?.forwardable ?? []));
        return EXIT_OK;
      }
      const w = Math.max(2, ...r.forwardable.map((e) => e.ip.length));
      io.out(`${'IP'.padEnd(w)}  OWNERS\n`);
      for (const e of r.forwardable) io.out(`${e.ip.padEnd(w)}  ${e.owners.join(',')}\n`);
      return EXIT_OK;
    },
  },
];

function extip(verb: 'add' | 'del', summary: string, method: string): Command {
  return {
    name: `extip ${verb}`,
    summary,
    usage: 'IP...',
    help: ['Options:', ...COMMON_HELP].join('\n'),
    options: { ...COMMON },
    positionals: true,
    async run(args, io) {
      const ips = needIps(args);
      const r = await clientFor(args).call<{ absent?: string[] }>(method, '/v1/extip', { ips });
      // The agent names the IPs it did not have (a typo, another node's IP): an error here.
      const absent = new Set(verb === 'del' && Array.isArray(r?.absent) ? r.absent : []);
      const done = ips.filter((ip) => !absent.has(canonicalIp(ip)));
      if (done.length > 0) {
        io.out(`${verb === 'add' ? 'assigned and announced' : 'unassigned'}: ${done.join(' ')}\n`);
      }
      if (absent.size === 0) return EXIT_OK;
      io.err(
        `fibkeeper extip del: not an external IP of this agent, nothing to remove: ${[...absent].join(' ')} (fibkeeper extip list shows them)\n`,
      );
      return EXIT_FAILED;
    },
  };
}

export const extipCommands: Command[] = [
  extip('add', 'Assign external IPs to the holder device and announce them', 'POST'),
  extip('del', 'Remove external IPs from the holder device', 'DELETE'),
  {
    name: 'extip list',
    summary: 'List the external IPs with their state and last announcement',
    usage: '[-o text|wide|json|yaml]',
    help: [
      'Options:',
      ...OUTPUT_HELP,
      '  -o wide         also the host that duplicate address detection found holding an IP',
      ...COMMON_HELP,
    ].join('\n'),
    options: { ...COMMON, ...OUTPUT_OPTIONS },
    async run(args, io) {
      const o = outputOf(args, ['text', 'wide', 'json', 'yaml']);
      const r = await clientFor(args).call<{ extip: ExternalIpEntry[] }>('GET', '/v1/extip');
      if (printData(io, o, r.extip)) return EXIT_OK;
      const wide = o === 'wide';
      const w = Math.max(2, ...r.extip.map((e) => e.ip.length));
      const conflict = (e: ExternalIpEntry) =>
        e.conflict ? `${e.conflict.mac} (${e.conflict.what})` : '-';
      const cw = Math.max(8, ...r.extip.map((e) => conflict(e).length));
      io.out(
        `${'IP'.padEnd(w)}  ${'STATE'.padEnd(10)}  ${'ANNOUNCED'.padEnd(24)}  ${wide ? `${'CONFLICT'.padEnd(cw)}  ` : ''}ERROR\n`,
      );
      for (const e of r.extip) {
        io.out(
          `${e.ip.padEnd(w)}  ${e.state.padEnd(10)}  ${(e.announcedAt ?? '-').padEnd(24)}  ${wide ? `${conflict(e).padEnd(cw)}  ` : ''}${e.lastError ?? ''}\n`,
        );
      }
      return EXIT_OK;
    },
  },
];

/** A command that shows one status document of the API: as text, or whole with --json. */
export function documentCommand<T extends object>(
  name: string,
  summary: string,
  path: string,
  format: (doc: T) => string,
): Command {
  return {
    name,
    summary,
    usage: '[-o text|json|yaml]',
    help: ['Options:', ...OUTPUT_HELP, ...COMMON_HELP].join('\n'),
    options: { ...COMMON, ...OUTPUT_OPTIONS },
    async run(args, io) {
      const o = outputOf(args, ['text', 'json', 'yaml']);
      const s = await clientFor(args).call<T>('GET', path);
      if (!printData(io, o, s)) io.out(format(s));
      return EXIT_OK;
    },
  };
}

/** `status` exit codes, as `systemctl is-active` and monitoring plugins use them. */
export const STATUS_EXIT = {
  /** Ready and healthy. */
  ok: 0,
  /** Ready, but something needs an operator (`unhealthy` names it). */
  degraded: 1,
  /** Not ready (starting, initial dumps, first reconciliation), or no answer at all. */
  notReady: 2,
} as const;

/** The query of `status [IP] [--owner NAME] [--device DEV]`, checked here (a bad IP is a usage error). */
function statusQuery(args: ParsedArgs): { ip?: string; qs: string } {
  if (args.positionals.length > 1) throw new UsageError('give at most one IP to explain');
  const q = new URLSearchParams();
  let ip: string | undefined;
  if (args.positionals.length === 1) {
    try {
      ip = canonicalIp(args.positionals[0]!);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    q.set('ip', ip);
  }
  for (const k of ['owner', 'device', 'state'] as const) {
    const v = str(args, k);
    if (v !== undefined) q.set(k, v);
  }
  const state = q.get('state');
  if (
    state !== null &&
    ![state.toUpperCase(), state.toLowerCase()].some((x) =>
      (STATUS_STATES as readonly string[]).includes(x),
    )
  ) {
    throw new UsageError(
      `--state ${state}: give a kernel state (failed, stale, reachable, incomplete, delay, probe, noarp, permanent), none, or pending, done, error`,
    );
  }
  const qs = q.toString();
  return { ...(ip !== undefined ? { ip } : {}), qs: qs ? `?${qs}` : '' };
}

export const statusCommand: Command = {
  name: 'status',
  summary: 'Show what the agent does: XDP, neighbor entries, external IPs, health, counters',
  usage: '[IP] [--owner NAME] [--device DEV] [--state S] [-o text|json|yaml] [--watch] [--quiet]',
  help: [
    'With IP: that IP explained — its owners, whether it is an external IP here, the',
    "kernel's route for it (as `ip route get IP fibmatch`), the next hop per device with its",
    "kernel entry (as `ip neigh` shows it), XDP on the route's devices, its XDP misses.",
    '',
    'Options:',
    '  --owner NAME    only the forwardable IPs of this owner',
    '  --device DEV    only next hops on this device',
    '  --state S       only next hops in this state and the IPs that lead to them: a kernel',
    '                  state as ip neigh names it (failed, stale, reachable, incomplete, ...),',
    '                  none (no kernel entry), or pending, done, error (reconcile status)',
    '  -o, --output F  text (default), json (the full document, docs/status.md) or yaml',
    '  --json          the same as -o json',
    '  --quiet, -q     print nothing: only the exit status tells',
    '  --watch, -w     print again on each change the agent reports (its event stream, not',
    '                  polling) until interrupted: redrawn in place on a terminal; -o json:',
    '                  one document a line; -o yaml: documents separated by ---',
    ...COMMON_HELP,
    '',
    'Exit status: 0 ready and healthy; 1 ready but degraded (the unhealthy reasons are',
    'printed); 2 not ready, or the agent did not answer (not running, starting, stuck), or',
    'a usage error (a malformed IP).',
  ].join('\n'),
  options: {
    ...COMMON,
    json: { type: 'boolean' },
    output: { type: 'string', short: 'o' },
    owner: { type: 'string' },
    device: { type: 'string' },
    state: { type: 'string' },
    quiet: { type: 'boolean', short: 'q' },
    watch: { type: 'boolean', short: 'w' },
  },
  positionals: true,
  async run(args, io) {
    const quiet = flag(args, 'quiet');
    const watch = flag(args, 'watch');
    if (quiet && watch) throw new UsageError('--watch prints: it cannot be --quiet');
    const output = outputOf(args, ['text', 'json', 'yaml']);
    const { ip, qs } = statusQuery(args);
    const client = clientFor(args);
    let s: Partial<StatusDocument>;
    let frames = 0;
    const draw = async () => {
      s = await client.call<Partial<StatusDocument>>('GET', `/v1/status${qs}`);
      if (quiet) return;
      const text = ip !== undefined ? formatExplain(s) : formatStatus(s);
      if (!watch) {
        if (!printData(io, output, s)) io.out(text);
      } else if (output === 'json')
        io.out(JSON.stringify(s) + '\n'); // one document a line
      else if (output === 'yaml') io.out('---\n' + stringifyYaml(s));
      else if (process.stdout.isTTY)
        io.out('\x1b[H\x1b[2J' + text); // redrawn in place
      else io.out(`${frames > 0 ? '\n' : ''}--- ${new Date().toISOString()}\n${text}`);
      frames++;
    };
    try {
      const since = new Date();
      await draw();
      if (watch && !(await watchChanges(client, since, draw))) {
        io.err('fibkeeper status: the agent ended the event stream (it stopped)\n');
        return STATUS_EXIT.notReady;
      }
    } catch (err) {
      if (!quiet) io.err(`fibkeeper status: ${describeError(err)}\n`);
      return STATUS_EXIT.notReady;
    }
    if (s!.ready !== true) return STATUS_EXIT.notReady;
    return s!.healthy === true ? STATUS_EXIT.ok : STATUS_EXIT.degraded;
  },
};

/** A forwardable IP of the status document (neighbor.forwardable[]), the fields -o wide shows. */
interface WideRow {
  ip: string;
  reason?: string;
  nodeAddress?: string;
  devices: {
    device: string;
    nexthops: { nexthop: string; status: string; kernel: { state: string[] } | null }[];
  }[];
}

/**
 * `forwardable list -o wide`: one line per IP and next hop (IP, owners, device, next hop, the
 * kernel entry's state, the reconcile status), or the reason it leads nowhere.
 */
export function wideForwardable(
  list: readonly ForwardableEntry[],
  rows: readonly WideRow[],
): string {
  const byIp = new Map(rows.map((r) => [r.ip, r]));
  const out: string[][] = [['IP', 'OWNERS', 'DEVICE', 'NEXTHOP', 'KERNEL', 'STATUS']];
  for (const e of list) {
    const owners = e.owners.join(',');
    const row = byIp.get(e.ip);
    const legs = (row?.devices ?? []).flatMap((d) =>
      d.nexthops.map((n) => [d.device, n.nexthop, n.kernel?.state.join(',') ?? '-', n.status]),
    );
    if (legs.length === 0) {
      const why =
        row === undefined
          ? '(not in the status document)'
          : row.nodeAddress !== undefined
            ? '(an address of this node)'
            : `(${row.reason ?? 'no next hop yet'})`;
      out.push([e.ip, owners, '-', '-', '-', why]);
    }
    for (const l of legs) out.push([e.ip, owners, ...l]);
  }
  const widths = out[0]!.map((_, i) => Math.max(...out.map((r) => r[i]!.length)));
  return (
    out
      .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '))
      .join('\n') + '\n'
  );
}
