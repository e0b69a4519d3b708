// Every shipped alert seen firing end to end: a live agent in the namespace lab, a real
// Prometheus scraping it with the shipped rules (made quick: test/deploy/prometheus.ts), and
// each alert's condition caused for real — a next hop that never answers, traffic without a
// neighbor entry, frames lost after a redirect, an external IP another host uses or claims,
// a state file that cannot be written, a foreign XDP program, a missing external interface,
// a killed agent, a removed target, forced managed entries over the rate limit. The label values the rules match on are checked against
// the agent's own exposition.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { labDown, labUp, type Lab } from '../../src/lab/index.js';
import { BpfLink, BpfProgram } from '../../src/native/index.js';
import { call } from '../agent/harness.js';
import { cleanupLater, privateBpffs } from '../helpers/cleanup.js';
import { ifindexOf, ip, nsExec, privileged, waitFor } from '../helpers/netns.js';
import { Prometheus, RULES, freePort } from './prometheus.js';

const { skip } = privileged();
const BIN = resolve('bin/fibkeeper.js');

/** UDP to argv[1], 20 datagrams every 10 ms, until killed. */
const UDP_FLOOD = `
const s = require('node:dgram').createSocket('udp4');
const b = Buffer.alloc(32);
setInterval(() => { for (let i = 0; i < 20; i++) s.send(b, 9, process.argv[1]); }, 10);
`;

const alertNames = (
  parse(readFileSync(RULES, 'utf8')) as { groups: { rules: { alert?: string }[] }[] }
).groups
  .flatMap((g) => g.rules)
  .flatMap((r) => (r.alert ? [r.alert] : []));

/** Every `metric{label="value"}` matcher of the rules. */
function ruleMatchers(): { metric: string; label: string; value: string }[] {
  const text = readFileSync(RULES, 'utf8');
  const out: { metric: string; label: string; value: string }[] = [];
  for (const sel of text.matchAll(/(fibkeeper_[a-z0-9_]+)\{([^}]*)\}/g)) {
    for (const m of sel[2]!.matchAll(/([a-z_]+)="([^"]*)"/g))
      out.push({ metric: sel[1]!, label: m[1]!, value: m[2]! });
  }
  return out;
}

/** A lab, the agent in its router (from the host: metrics on loopback), a Prometheus on it. */
interface World {
  lab: Lab;
  dir: string;
  agent: ChildProcess;
  metricsAddr: string;
  prom: Prometheus;
  sock: string;
}

async function startWorld(
  env: Record<string, string> = {},
  args: readonly string[] = [],
): Promise<World> {
  const prefix = `al${randomBytes(3).toString('hex')}`;
  const lab = labUp(prefix);
  cleanupLater(() => labDown(prefix));
  const dir = mkdtempSync(join(tmpdir(), 'fkt-alerts-'));
  cleanupLater(() => {
    spawnSync('chattr', ['-i', join(dir, 'state')]);
    rmSync(dir, { recursive: true, force: true });
  });
  mkdirSync(join(dir, 'state'));
  const sock = join(dir, 'api.sock');
  const metricsAddr = `127.0.0.1:${await freePort()}`;
  const log = openSync(join(dir, 'agent.log'), 'a');
  const agent = spawn(
    process.execPath,
    [
      BIN,
      'run',
      `--netns=${lab.hosts.router}`,
      '--devices=r-*',
      '--extip-enabled=true',
      '--extip-holder-kind=bridge',
      `--extip-interface=${lab.routerExternal}`,
      '--extip-announce-count=1',
      '--neighbor-unusable-after=1s',
      `--xdp-pin-dir=${privateBpffs()}`,
      '--xdp-keep-on-stop=false',
      `--api-socket=${sock}`,
      `--state-file=${join(dir, 'state', 'state.json')}`,
      `--metrics-address=${metricsAddr}`,
      ...args,
    ],
    { stdio: ['ignore', log, log], env: { ...process.env, ...env } },
  );
  cleanupLater(() => {
    if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
  });
  await waitFor(
    async () => (await fetch(`http://${metricsAddr}/readyz`).catch(() => undefined))?.ok,
    {
      what: () => `agent ready: ${readFileSync(join(dir, 'agent.log'), 'utf8').slice(-1500)}`,
      timeoutMs: 30_000,
    },
  );
  const prom = await Prometheus.start([metricsAddr]);
  await waitFor(async () => (await prom.query('up == 1')).length === 1, {
    what: 'the first scrape',
    timeoutMs: 20_000,
  });
  return { lab, dir, agent, metricsAddr, prom, sock };
}

/** Alerts seen firing, by either world of this file. */
const fired = new Set<string>();

describe.skipIf(skip)('alerts, end to end', () => {
  let lab: Lab;
  let dir: string;
  let agent: ChildProcess;
  let metricsAddr: string;
  let prom: Prometheus;
  const sock = () => join(dir, 'api.sock');

  beforeAll(async () => {
    ({ lab, dir, agent, metricsAddr, prom } = await startWorld());
  }, 90_000);

  async function firing(name: string, labels: Record<string, string> = {}) {
    const a = await prom.firing(name, labels);
    fired.add(name);
    return a;
  }

  const api = (method: string, path: string, body?: unknown) => call(sock(), method, path, body);

  it('the rules match on label values the agent exports', async () => {
    const text = await (await fetch(`http://${metricsAddr}/metrics`)).text();
    for (const m of ruleMatchers()) {
      const series = new RegExp(`^${m.metric}\\{[^}]*\\b${m.label}="${m.value}"`, 'm');
      expect(series.test(text), `${m.metric}{${m.label}="${m.value}"}`).toBe(true);
    }
  });

  it('NO_NEIGH traffic: FibkeeperNoNeighStorm', async () => {
    // A route via a gateway nobody has: every lookup answers NO_NEIGH; ~2,000 datagrams a
    // second from the client (ping slows down when the router answers it with errors).
    ip(lab.hosts.router, 'route', 'add', '10.98.0.0/24', 'via', '10.77.3.9');
    const flood = spawn('ip', [
      ...['netns', 'exec', lab.hosts.client, process.execPath, '-e', UDP_FLOOD, '10.98.0.5'],
    ]);
    cleanupLater(() => flood.kill('SIGKILL'));
    const a = await firing('FibkeeperNoNeighStorm', { device: 'r-client' });
    flood.kill('SIGKILL');
    expect(a.annotations.summary).toMatch(/packets\/s from r-client .* find no neighbor entry/);
  });

  it('a next hop that never answers ARP: FibkeeperNextHopsUnusable, then FibkeeperNeedsAttention', async () => {
    ip(lab.hosts.router, 'route', 'add', '10.99.0.0/24', 'via', '10.77.2.9');
    expect(
      (await api('POST', '/v1/forwardable', { owner: 'alerts', ips: ['10.99.0.5'] })).status,
    ).toBe(200);
    const a = await firing('FibkeeperNextHopsUnusable', { device: 'r-server1' });
    expect(a.annotations.summary).toBe(
      '1 next hops on r-server1 (' + metricsAddr + ') do not answer ARP/NDP',
    );
    await firing('FibkeeperNeedsAttention');
    // `fibkeeper status` exits 1 (degraded) and names it.
    const st = spawnSync(process.execPath, [BIN, 'status', '--socket', sock()], {
      encoding: 'utf8',
    });
    expect(st.status).toBe(1);
    expect(st.stdout).toMatch(
      /10\.77\.2\.9 on r-server1 \((failed|incomplete) for \d+ s; forwardable 10\.99\.0\.5\)/,
    );
  });

  it('frames lost after a redirect: FibkeeperXdpRedirectErrors', async () => {
    // An operator's permanent entry for server1, and server1's link down: the route stays
    // (linkdown), the lookup succeeds, and the veth drops what XDP redirects into it — as
    // the kernel's own forwarding would.
    ip(
      lab.hosts.router,
      'neigh',
      'replace',
      '10.77.2.2',
      'lladdr',
      '02:fb:00:00:02:02',
      'nud',
      'permanent',
      'dev',
      'r-server1',
    );
    ip(lab.hosts.server1, 'link', 'set', 'eth0', 'down');
    const ping = spawn('ip', [
      ...['netns', 'exec', lab.hosts.client, 'ping', '-q', '-i', '0.01', '-c', '3000'],
      '10.77.2.2',
    ]);
    cleanupLater(() => ping.kill('SIGKILL'));
    await firing('FibkeeperXdpRedirectErrors', { device: 'r-client', reason: 'xmit_drop' });
    ping.kill('SIGKILL');
    ip(lab.hosts.server1, 'link', 'set', 'eth0', 'up');
    ip(lab.hosts.router, 'neigh', 'del', '10.77.2.2', 'dev', 'r-server1');
  });

  it('an external IP another host uses: FibkeeperExternalIpFailed; one it claims later: FibkeeperExternalIpConflict', async () => {
    const dup = await api('POST', '/v1/extip', { ips: [lab.addr.client] });
    expect(dup.status).toBe(409);
    await firing('FibkeeperExternalIpFailed', { family: 'ipv4' });
    expect((await api('DELETE', '/v1/extip', { ips: [lab.addr.client] })).status).toBe(200);
    // Assigned; then the client takes the same address and asks for the router's MAC from it.
    expect((await api('POST', '/v1/extip', { ips: ['10.77.1.50'] })).status).toBe(200);
    ip(lab.hosts.client, 'addr', 'add', '10.77.1.50/32', 'dev', 'eth0');
    ip(lab.hosts.client, 'neigh', 'flush', 'dev', 'eth0');
    spawnSync('ip', [
      'netns',
      'exec',
      lab.hosts.client,
      'ping',
      '-c',
      '1',
      '-W',
      '1',
      '-I',
      '10.77.1.50',
      '10.77.1.1',
    ]);
    await firing('FibkeeperExternalIpConflict', { family: 'ipv4' });
  });

  it('a state file that cannot be written: FibkeeperStateSaveFailing', async () => {
    const state = join(dir, 'state');
    const r = spawnSync('chattr', ['+i', state], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    try {
      expect(
        (await api('POST', '/v1/forwardable', { owner: 'alerts', ips: ['10.77.2.2'] })).status,
      ).toBe(507);
      await firing('FibkeeperStateSaveFailing');
    } finally {
      spawnSync('chattr', ['-i', state]);
    }
  });

  it('a foreign XDP program on a selected device: FibkeeperForeignXdpProgram', async () => {
    ip(lab.hosts.router, 'link', 'add', 'r-extra', 'type', 'veth', 'peer', 'name', 'x-extra');
    const prog = BpfProgram.loadXdpPass();
    const link = BpfLink.attachXdp(prog, ifindexOf(lab.hosts.router, 'r-extra'), {
      netns: lab.hosts.router,
    });
    cleanupLater(() => {
      link.close();
      prog.close();
    });
    ip(lab.hosts.router, 'link', 'set', 'x-extra', 'up');
    ip(lab.hosts.router, 'link', 'set', 'r-extra', 'up');
    await firing('FibkeeperForeignXdpProgram', { device: 'r-extra' });
  });

  it('a neighbor entry the kernel refuses to write: FibkeeperNeighborEntriesFailing', async () => {
    // An IPv4 route through an IPv6 gateway (RFC 5549) on a device whose IPv6 is then turned
    // off: the next hop is still fe80::1 there, and the kernel refuses every write of its
    // entry ("IPv6 is disabled on this device").
    const r = lab.hosts.router;
    ip(r, 'link', 'add', 'r-v6off', 'type', 'veth', 'peer', 'name', 'x-v6off');
    ip(r, 'link', 'set', 'x-v6off', 'up');
    ip(r, 'link', 'set', 'r-v6off', 'up');
    ip(r, 'route', 'add', '10.96.0.0/24', 'via', 'inet6', 'fe80::1', 'dev', 'r-v6off');
    nsExec(r, 'sysctl', '-qw', 'net.ipv6.conf.r-v6off.disable_ipv6=1');
    expect(
      (await api('POST', '/v1/forwardable', { owner: 'alerts', ips: ['10.96.0.5'] })).status,
    ).toBe(200);
    const a = await firing('FibkeeperNeighborEntriesFailing');
    expect(a.annotations.summary).toMatch(/^1 neighbor entries on .* have failed/);
    const st = JSON.parse(
      spawnSync(process.execPath, [BIN, 'status', '--json', '--socket', sock()], {
        encoding: 'utf8',
      }).stdout,
    ) as { neighbor: { desired: { nexthop: string; status: string; error?: string }[] } };
    const row = st.neighbor.desired.find((d) => d.nexthop === 'fe80::1');
    expect(row).toMatchObject({ status: 'error' });
    expect(row?.error).toMatch(/IPv6 is disabled on this device/);
  });

  it('the external interface gone: FibkeeperNotReady', async () => {
    ip(lab.hosts.router, 'link', 'del', 'r-client');
    await firing('FibkeeperNotReady');
  });

  it('the agent killed: FibkeeperDown; its target removed: FibkeeperAbsent', async () => {
    agent.kill('SIGKILL');
    const down = await firing('FibkeeperDown');
    expect(down.labels.instance).toBe(metricsAddr);
    await prom.setTargets([]);
    await firing('FibkeeperAbsent');
  });
});

describe.skipIf(skip)('alerts, end to end: an agent of its own per alert', () => {
  it('sockets that keep failing are reopened again and again: FibkeeperSocketReopens', async () => {
    // Half of the netlink sends and receives fail with EBUSY once the agent is ready (fault
    // injection at the native boundary): each receive error reopens its socket.
    const w = await startWorld({
      FIBKEEPER_TEST_FAULTS: 'classes=EBUSY,rate=0.5,sockets=netlink,phase=ready,seed=3',
    });
    const a = await w.prom.firing('FibkeeperSocketReopens');
    fired.add('FibkeeperSocketReopens');
    expect(a.annotations.summary).toMatch(/reopened its \S+ socket/);
  });

  it('forced managed entries over neighbor.rateLimit: FibkeeperManagedNeighborsOverLimit', async () => {
    const w = await startWorld({}, ['--neighbor-refresh=managed', '--neighbor-rate-limit=2']);
    // Three on-link next hops on r-server1 (nobody answers: it does not matter here).
    const ips = ['10.77.2.20', '10.77.2.21', '10.77.2.22'];
    expect((await call(w.sock, 'POST', '/v1/forwardable', { owner: 'alerts', ips })).status).toBe(
      200,
    );
    const a = await w.prom.firing('FibkeeperManagedNeighborsOverLimit');
    fired.add('FibkeeperManagedNeighborsOverLimit');
    expect(a.annotations.summary).toMatch(/forced managed neighbor entries over/);
    const st = spawnSync(process.execPath, [BIN, 'status', '--socket', w.sock], {
      encoding: 'utf8',
    });
    expect(st.stdout).toContain(
      'warning: neighbor.refresh is managed with 3 desired entries, more than neighbor.rateLimit (2)',
    );
  });

  it('every shipped alert fired', () => {
    expect(alertNames.filter((a) => !fired.has(a))).toEqual([]);
  });
});
