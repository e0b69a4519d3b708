// The lab of the XDP loader tests: three namespaces, client — router — server, joined by
// veth pairs, with IPv4 and IPv6 addresses, default routes through the router and forwarding
// on in the router. The client's and server's veth ends get an XDP_PASS program (in their own
// namespaces) because XDP_REDIRECT into a veth only delivers when the peer runs XDP.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BpfLink, BpfProgram } from '../../src/native/index.js';
import { cleanupLater, privateBpffs } from '../helpers/cleanup.js';
import { ifindexOf, ip, makeNetns, nsExec, sysctl, vethPair } from '../helpers/netns.js';

export { cleanupLater, privateBpffs };

export const MAC = {
  client: '02:00:00:0f:01:02',
  r1: '02:00:00:0f:01:01',
  r2: '02:00:00:0f:02:01',
  server: '02:00:00:0f:02:02',
} as const;

export const V4 = {
  client: '10.61.1.2',
  r1: '10.61.1.1',
  r2: '10.61.2.1',
  server: '10.61.2.2',
} as const;

export const V6 = {
  client: 'fd61:1::2',
  r1: 'fd61:1::1',
  r2: 'fd61:2::1',
  server: 'fd61:2::2',
} as const;

export interface Lab {
  client: string;
  router: string;
  server: string;
  /** Router ifindexes: r1 towards the client, r2 towards the server. */
  r1: number;
  r2: number;
}

/**
 * client/c0 — r1/router/r2 — s0/server. IPv6 DAD off; forwarding on in the router only.
 * With `peerXdp` (default) c0 and s0 run XDP_PASS so redirects into r1/r2 are delivered.
 * c0 and s0 compute TCP/UDP checksums in software unless `txChecksumOffload` (see below).
 */
export function makeLab(
  tag: string,
  opts: { peerXdp?: boolean; txChecksumOffload?: boolean } = {},
): Lab {
  const client = makeNetns(`${tag}c`);
  const router = makeNetns(`${tag}r`);
  const server = makeNetns(`${tag}s`);
  for (const ns of [client, router, server]) {
    sysctl(ns, 'net.ipv6.conf.all.accept_dad', 0);
    sysctl(ns, 'net.ipv6.conf.default.accept_dad', 0);
  }
  sysctl(router, 'net.ipv4.ip_forward', 1);
  sysctl(router, 'net.ipv6.conf.all.forwarding', 1);
  vethPair(client, 'c0', router, 'r1', { macA: MAC.client, macB: MAC.r1 });
  vethPair(server, 's0', router, 'r2', { macA: MAC.server, macB: MAC.r2 });
  ip(client, 'addr', 'add', `${V4.client}/24`, 'dev', 'c0');
  ip(client, 'addr', 'add', `${V6.client}/64`, 'dev', 'c0', 'nodad');
  ip(router, 'addr', 'add', `${V4.r1}/24`, 'dev', 'r1');
  ip(router, 'addr', 'add', `${V6.r1}/64`, 'dev', 'r1', 'nodad');
  ip(router, 'addr', 'add', `${V4.r2}/24`, 'dev', 'r2');
  ip(router, 'addr', 'add', `${V6.r2}/64`, 'dev', 'r2', 'nodad');
  ip(server, 'addr', 'add', `${V4.server}/24`, 'dev', 's0');
  ip(server, 'addr', 'add', `${V6.server}/64`, 'dev', 's0', 'nodad');
  ip(client, 'route', 'add', 'default', 'via', V4.r1);
  ip(client, 'route', 'add', 'default', 'via', V6.r1);
  ip(server, 'route', 'add', 'default', 'via', V4.r2);
  ip(server, 'route', 'add', 'default', 'via', V6.r2);
  const lab = { client, router, server, r1: ifindexOf(router, 'r1'), r2: ifindexOf(router, 'r2') };
  if (opts.peerXdp ?? true) {
    peerPass(client, 'c0');
    peerPass(server, 's0');
  }
  if (opts.txChecksumOffload !== true) {
    txChecksumOff(client, 'c0');
    txChecksumOff(server, 's0');
  }
  return lab;
}

/**
 * `ethtool -K DEV tx off`: the device's senders compute TCP/UDP checksums themselves. A veth
 * hands its peer's XDP the frames of local senders with the L4 checksum still to be filled in
 * (CHECKSUM_PARTIAL); a native-mode XDP_REDIRECT drops that state, so the frame arrives with
 * a bad checksum. Real NICs deliver complete checksums (see src/fib/index.ts).
 */
export function txChecksumOff(ns: string, dev: string): void {
  nsExec(ns, 'ethtool', '-K', dev, 'tx', 'off');
}

/** XDP_PASS on `dev` in `ns` until the test ends (what veth needs to take redirects). */
export function peerPass(ns: string, dev: string): void {
  const prog = BpfProgram.loadXdpPass();
  const link = BpfLink.attachXdp(prog, ifindexOf(ns, dev), { netns: ns });
  cleanupLater(() => {
    link.close();
    prog.close();
  });
}

/** Permanent neighbor entries router → client and router → server (both families). */
export function staticNeighbors(lab: Lab): void {
  for (const [addr, mac, dev] of [
    [V4.server, MAC.server, 'r2'],
    [V6.server, MAC.server, 'r2'],
    [V4.client, MAC.client, 'r1'],
    [V6.client, MAC.client, 'r1'],
  ] as const) {
    ip(lab.router, 'neigh', 'replace', addr, 'lladdr', mac, 'dev', dev, 'nud', 'permanent');
  }
}

/** A counter of /proc/net/snmp ("Ip", "ForwDatagrams") or /proc/net/snmp6 in `ns`. */
export function snmp(ns: string, name: 'IpForwDatagrams' | 'Ip6OutForwDatagrams'): number {
  if (name === 'Ip6OutForwDatagrams') {
    const line = nsExec(ns, 'cat', '/proc/net/snmp6')
      .split('\n')
      .find((l) => l.startsWith('Ip6OutForwDatagrams'));
    return Number(line?.trim().split(/\s+/)[1]);
  }
  const lines = nsExec(ns, 'cat', '/proc/net/snmp')
    .split('\n')
    .filter((l) => l.startsWith('Ip:'));
  const keys = lines[0]?.split(/\s+/) ?? [];
  const vals = lines[1]?.split(/\s+/) ?? [];
  return Number(vals[keys.indexOf('ForwDatagrams')]);
}

/** `ping -c N` from `ns`; returns the replies received. */
export function ping(ns: string, dst: string, count: number, intervalS = 0.01): number {
  const r = spawnSync(
    'ip',
    [
      'netns',
      'exec',
      ns,
      'ping',
      '-n',
      '-q',
      '-c',
      String(count),
      '-i',
      String(intervalS),
      '-W',
      '1',
      dst,
    ],
    { encoding: 'utf8' },
  );
  const m = /(\d+) received/.exec(r.stdout);
  return m ? Number(m[1]) : 0;
}

const UDP = fileURLToPath(new URL('./fixtures/udp.mjs', import.meta.url));

export interface UdpCount {
  received: number;
  distinct: number;
  maxSeq: number;
}

/** A UDP receiver in `ns` (a child process); stop() ends it and returns what it counted. */
export async function udpReceiver(
  ns: string,
  port: number,
  family: 4 | 6 = 4,
): Promise<{ stop(): Promise<UdpCount> }> {
  const child = spawn(
    'ip',
    ['netns', 'exec', ns, process.execPath, UDP, 'recv', String(port), String(family)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.setEncoding('utf8');
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: string) => {
      out += d;
      if (out.includes('ready\n')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`udp receiver exited (${code}) before ready`)));
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  cleanupLater(() => child.kill('SIGKILL'));
  await ready;
  return {
    async stop() {
      child.kill('SIGTERM');
      await exited;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line === undefined) throw new Error(`udp receiver printed no count: ${out}`);
      return JSON.parse(line) as UdpCount;
    },
  };
}

/** Sends `count` UDP datagrams from `ns` to dst:port at `pps`; resolves with the number sent. */
export function udpSend(
  ns: string,
  dst: string,
  port: number,
  count: number,
  pps: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns,
        process.execPath,
        UDP,
        'send',
        dst,
        String(port),
        String(count),
        String(pps),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (out += d));
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || line === undefined)
        reject(new Error(`udp sender failed (${code}): ${out}`));
      else resolve((JSON.parse(line) as { sent: number }).sent);
    });
  });
}
