// `fibkeeper lab up|down`: build or remove the namespace topology of topology.ts.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { FibkeeperError } from '../errors/index.js';
import { BpfProgram, xdpAttachLegacy } from '../native/index.js';
import { checkPrefix, describeLab, labBatch, labSysctls, type Lab } from './topology.js';

function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input });
  if (r.error)
    throw new FibkeeperError(`${cmd}: ${r.error.message}`, { code: 'FIBKEEPER_ERR_SYSTEM' });
  if (r.status !== 0) {
    throw new FibkeeperError(`${cmd} ${args.join(' ')}: ${(r.stderr || r.stdout).trim()}`, {
      code: 'FIBKEEPER_ERR_SYSTEM',
    });
  }
  return r.stdout;
}

export function labExists(lab: Lab): boolean {
  return Object.values(lab.hosts).some((ns) => existsSync(`/run/netns/${ns}`));
}

/**
 * Creates the lab's namespaces, links, addresses, routes and forwarding sysctls (inside the
 * lab's namespaces only). Fails, removing what it made, if any part of it exists already.
 */
export function labUp(prefix: string): Lab {
  checkPrefix(prefix);
  const lab = describeLab(prefix);
  if (labExists(lab)) {
    throw new FibkeeperError(
      `a lab with prefix "${prefix}" exists already: \`fibkeeper lab down --prefix ${prefix}\` removes it`,
      { code: 'FIBKEEPER_ERR_CONFLICT' },
    );
  }
  try {
    for (const ns of Object.values(lab.hosts)) run('ip', ['netns', 'add', ns]);
    for (const s of labSysctls(lab)) {
      run('ip', ['netns', 'exec', s.netns, 'sysctl', '-q', '-w', `${s.key}=${s.value}`]);
    }
    const batches = labBatch(lab);
    // Side-a namespaces create the veth pairs, so they go first.
    const order = [
      lab.hosts.router,
      lab.hosts.gw,
      lab.hosts.client,
      lab.hosts.server1,
      lab.hosts.server2,
    ];
    for (const ns of order) {
      const b = batches.find((x) => x.netns === ns);
      if (b) run('ip', ['-n', ns, '-batch', '-'], b.lines.join('\n') + '\n');
    }
    attachPeerXdp(lab);
    txChecksumOff(lab);
  } catch (err) {
    labDown(prefix);
    throw err;
  }
  return lab;
}

/**
 * The hosts' senders fill in their UDP/TCP checksums themselves (`ethtool -K eth0 tx off`):
 * a veth hands the router's XDP local frames whose L4 checksum is still to be computed
 * (CHECKSUM_PARTIAL), an XDP redirect loses that state, and the frame would arrive with a
 * bad checksum. Frames from real NICs always carry complete checksums.
 */
function txChecksumOff(lab: Lab): void {
  for (const l of lab.links) {
    for (const end of [l.a, l.b]) {
      if (end.role === 'router') continue;
      run('ip', ['netns', 'exec', lab.hosts[end.role], 'ethtool', '-K', end.dev, 'tx', 'off']);
    }
  }
}

/**
 * A veth only takes frames that XDP redirects into it when its peer runs an XDP program (or
 * has GRO on). The lab's hosts next to the router therefore get a program that passes
 * everything (attached the netlink way, so it stays after this process exits and goes
 * away with the namespace).
 */
function attachPeerXdp(lab: Lab): void {
  const prog = BpfProgram.loadXdpPass();
  try {
    for (const l of lab.links) {
      if (l.a.role !== 'router') continue;
      const ns = lab.hosts[l.b.role];
      const links = JSON.parse(run('ip', ['-n', ns, '-j', 'link', 'show', 'dev', l.b.dev])) as {
        ifindex: number;
      }[];
      const ifindex = links[0]?.ifindex;
      if (ifindex === undefined) throw new FibkeeperError(`no ${l.b.dev} in ${ns}`);
      xdpAttachLegacy(ifindex, prog, { mode: 'native', netns: ns });
    }
  } finally {
    prog.close();
  }
}

/** Deletes the lab's namespaces (and with them every link in them). Idempotent. */
export function labDown(prefix: string): string[] {
  checkPrefix(prefix);
  const lab = describeLab(prefix);
  const removed: string[] = [];
  for (const ns of Object.values(lab.hosts)) {
    if (!existsSync(`/run/netns/${ns}`)) continue;
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
    if (pids.trim() !== '') {
      throw new FibkeeperError(
        `processes still run in ${ns} (pids ${pids.trim().split(/\s+/).join(', ')}); stop them first`,
        { code: 'FIBKEEPER_ERR_CONFLICT' },
      );
    }
    run('ip', ['netns', 'del', ns]);
    removed.push(ns);
  }
  return removed;
}
