// `fibkeeper demo`: a throwaway namespace lab in which the agent forwards real traffic with
// XDP, keeps neighbor entries, repairs a deleted one, and announces an external IP. Every
// step prints what the kernel and the wire show; everything is removed at the end, also on
// Ctrl-C or failure.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../api/index.js';
import { describeError } from '../errors/index.js';
import { decodeFrame } from '../extip/index.js';
import { Reaper, describeLab, labDown, labUp, type Lab } from '../lab/index.js';
import { PacketSocket, unmount, isBpffs } from '../native/index.js';
import { NetlinkHandle } from '../netlink/index.js';
import { clusterAct, etcdAvailable } from './cluster.js';
import { countersByAction, countersByResult, scrape, type Scrape } from './scrape.js';
import { arrived, stopFlows, udpFlow, type FlowResult } from './traffic.js';
export { arrived, udpFlow, type FlowHooks, type FlowOptions, type FlowResult } from './traffic.js';

export interface DemoIo {
  out(text: string): void;
}

interface Ctx {
  io: DemoIo;
  lab: Lab;
  dir: string;
  socket: string;
  metricsUrl: string;
  agent: ChildProcess | undefined;
  api: ApiClient;
  /** Removes what the cluster act made (its own lab, agents and etcd). */
  clusterCleanup: (() => Promise<void>) | undefined;
  /** Ends what the demo started and deletes its namespaces should the demo die first. */
  reaper: Reaper;
}

const BIN = fileURLToPath(new URL('../../bin/fibkeeper.js', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

/** IpForwDatagrams (IPv4) of a namespace: packets the kernel stack forwarded. */
function stackForwarded(netns: string): number {
  const snmp = sh('ip', ['netns', 'exec', netns, 'cat', '/proc/net/snmp']).split('\n');
  const head = snmp.find((l) => l.startsWith('Ip: Forwarding'))?.split(/\s+/) ?? [];
  const vals = snmp.find((l) => /^Ip: \d/.test(l))?.split(/\s+/) ?? [];
  return Number(vals[head.indexOf('ForwDatagrams')] ?? NaN);
}

async function waitFor<T>(
  fn: () => Promise<T | undefined> | T | undefined,
  ms: number,
  what: string,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function startAgent(c: Ctx, port: number): Promise<void> {
  const { lab, dir } = c;
  const log = openSync(join(dir, 'agent.log'), 'a');
  const args = [
    BIN,
    'run',
    `--netns=${lab.hosts.router}`,
    `--devices=${lab.routerDevices.join(',')}`,
    '--extip-enabled=true',
    '--extip-holder-kind=bridge',
    `--extip-interface=${lab.routerExternal}`,
    `--xdp-pin-dir=${join(dir, 'bpf')}`,
    '--xdp-keep-on-stop=false',
    `--api-socket=${c.socket}`,
    `--state-file=${join(dir, 'state.json')}`,
    `--metrics-address=127.0.0.1:${port}`,
  ];
  const started = Date.now();
  c.agent = c.reaper.agent(spawn(process.execPath, args, { stdio: ['ignore', log, log] }));
  const exited = new Promise<number>((resolve) =>
    c.agent?.once('exit', (code) => resolve(code ?? 1)),
  );
  await Promise.race([
    waitFor(
      async () =>
        (await fetch(`${c.metricsUrl}/readyz`).catch(() => undefined))?.ok ? true : undefined,
      20_000,
      'the agent to be ready',
    ),
    exited.then((code) => {
      throw new Error(
        `the agent exited with ${code}: ${readFileSync(join(dir, 'agent.log'), 'utf8').slice(-800)}`,
      );
    }),
  ]);
  const st = await c.api.call<{
    xdp: { devices: { name: string; mode: string; attached: string }[] };
  }>('GET', '/v1/status');
  const modes = st.xdp.devices.map((d) => `${d.name} ${d.mode}`).join(', ');
  c.io.out(
    `  agent pid ${c.agent.pid} in ${lab.hosts.router}, ready in ${Date.now() - started} ms; XDP on ${modes}\n`,
  );
}

function showNeighbors(c: Ctx): void {
  const lines = sh('ip', ['-n', c.lab.hosts.router, 'neigh', 'show', 'nud', 'all'])
    .split('\n')
    .filter((l) => / proto 241\b/.test(l) || /extern_learn/.test(l));
  c.io.out(`  neighbor entries fibkeeper keeps in the router (ip neigh):\n`);
  for (const l of lines) c.io.out(`    ${l.trim()}\n`);
}

/**
 * A note when a server's socket dropped datagrams that did arrive: the receiving process was
 * held back (a busy machine), which is no loss on the way.
 */
function slowReceiver(flows: FlowResult[]): string {
  const dropped = flows.reduce((n, f) => n + f.droppedAtReceiver, 0);
  if (dropped === 0) return '';
  return `  (${dropped} of them arrived but found the receiving socket full: a receiver held back by a busy machine, counted in the server's UDP RcvbufErrors; not a forwarding loss)\n`;
}

function actionDelta(after: Scrape, before: Scrape, action: string): number {
  return (countersByAction(after)[action] ?? 0) - (countersByAction(before)[action] ?? 0);
}

function delta(after: Scrape, before: Scrape, result: string): number {
  return (countersByResult(after)[result] ?? 0) - (countersByResult(before)[result] ?? 0);
}

async function traffic(c: Ctx, label: string): Promise<void> {
  const { lab } = c;
  const before = await scrape(c.metricsUrl);
  const fwdBefore = stackForwarded(lab.hosts.router);
  const s1 = await udpFlow(lab.hosts.client, lab.hosts.server1, lab.addr.server1, 500);
  const s2 = await udpFlow(lab.hosts.client, lab.hosts.server2, lab.addr.server2, 500);
  const ping = sh('ip', [
    'netns',
    'exec',
    lab.hosts.client,
    'ping',
    '-q',
    '-c',
    '20',
    '-i',
    '0.01',
    lab.addr.server2,
  ]);
  const pingOk = /20 received/.test(ping);
  const after = await scrape(c.metricsUrl);
  const fwd = stackForwarded(lab.hosts.router) - fwdBefore;
  const results = countersByResult(after);
  const prev = countersByResult(before);
  const nonzero = Object.keys(results)
    .map((r) => [r, (results[r] ?? 0) - (prev[r] ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .map(([r, n]) => `${r} +${n}`)
    .join(', ');
  c.io.out(
    `  ${label}: UDP ${arrived(s1)}/${s1.sent} to server1, ${arrived(s2)}/${s2.sent} to server2 (via gw), ping ${pingOk ? '20/20' : 'FAILED'}\n` +
      slowReceiver([s1, s2]) +
      `  XDP fib_lookup results: ${nonzero || 'none'}\n` +
      `  XDP actions: forwarded in XDP (redirect) +${actionDelta(after, before, 'redirect')}, passed to the kernel stack +${actionDelta(after, before, 'pass')}\n` +
      `  kernel stack forwarded (IpForwDatagrams): +${fwd}` +
      (fwd === 0 ? ' -> every packet was forwarded by XDP\n' : '\n'),
  );
  if (arrived(s1) < s1.sent || arrived(s2) < s2.sent || !pingOk)
    throw new Error('traffic did not arrive');
}

async function repairDemo(c: Ctx): Promise<void> {
  const { lab } = c;
  const nl = NetlinkHandle.open({ netns: lab.hosts.router });
  try {
    const ifindex = await nl.ifindex('r-server1');
    const before = await scrape(c.metricsUrl);
    // Deleted through netlink (what `ip neigh del` does) so the time is the agent's alone.
    await nl.neighDel({ ifindex, dst: lab.addr.server1 });
    const t0 = process.hrtime.bigint();
    await waitFor(
      async () =>
        (await nl.neighGet({ ifindex, dst: lab.addr.server1 }).catch(() => undefined))
          ? true
          : undefined,
      5000,
      're-insertion',
    );
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const s1 = await udpFlow(lab.hosts.client, lab.hosts.server1, lab.addr.server1, 500);
    const after = await scrape(c.metricsUrl);
    c.io.out(
      `  deleted ${lab.addr.server1} dev r-server1 (as ip neigh del does) -> back in the kernel after ${ms.toFixed(1)} ms\n` +
        `  then UDP ${arrived(s1)}/${s1.sent}: SUCCESS +${delta(after, before, 'success')}, NO_NEIGH +${delta(after, before, 'no_neigh')}\n` +
        slowReceiver([s1]),
    );
  } finally {
    nl.close();
  }
}

async function extipDemo(c: Ctx): Promise<void> {
  const { lab } = c;
  const ifindex = Number(
    (
      JSON.parse(sh('ip', ['-n', lab.hosts.client, '-j', 'link', 'show', 'dev', 'eth0'])) as {
        ifindex: number;
      }[]
    )[0]?.ifindex,
  );
  const seen: string[] = [];
  const sock = PacketSocket.open({ ifindex, netns: lab.hosts.client });
  sock.receive({
    onFrame(frame) {
      const f = decodeFrame(frame);
      if (f.kind === 'arp' && f.gratuitous) {
        seen.push(`GARP ${f.op === 1 ? 'request' : 'reply  '} ${f.senderIp} is-at ${f.senderMac}`);
      } else if (f.kind === 'na' && f.targetMac && !f.solicited) {
        seen.push(
          `unsolicited NA ${f.target} is-at ${f.targetMac} (override ${f.override ? 'on' : 'off'}, hop limit ${f.hopLimit}, checksum ${f.checksumValid ? 'ok' : 'BAD'})`,
        );
      }
    },
    onError() {},
  });
  try {
    await c.api.call('POST', '/v1/extip', { ips: [lab.addr.extip, lab.addr.extip6] });
    await waitFor(() => (seen.length >= 3 ? true : undefined), 3000, 'announcements on the wire');
    const holder = sh('ip', [
      '-n',
      lab.hosts.router,
      '-br',
      'addr',
      'show',
      'dev',
      'fibkeeper0',
    ]).trim();
    c.io.out(`  extip add ${lab.addr.extip} ${lab.addr.extip6} -> on the holder: ${holder}\n`);
    c.io.out(`  seen on the client's wire:\n`);
    for (const s of [...new Set(seen)].slice(0, 4)) c.io.out(`    ${s}\n`);
    const ping = spawnSync('ip', [
      'netns',
      'exec',
      lab.hosts.client,
      'ping',
      '-c',
      '1',
      '-W',
      '2',
      lab.addr.extip,
    ]);
    c.io.out(`  the client reaches ${lab.addr.extip}: ${ping.status === 0 ? 'yes' : 'no'}\n`);
  } finally {
    sock.close();
  }
}

async function cleanup(c: Ctx): Promise<void> {
  await stopFlows();
  try {
    await c.clusterCleanup?.();
  } catch (err) {
    c.io.out(`  cleanup: ${describeError(err)}\n`);
  }
  if (c.agent && c.agent.exitCode === null) {
    const exited = new Promise((r) => c.agent?.once('exit', r));
    c.agent.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (c.agent.exitCode === null) c.agent.kill('SIGKILL');
  }
  // Anything still running inside the lab was started by this demo (traffic, ping): end it
  // by pid so the namespaces can go.
  for (const ns of Object.values(c.lab.hosts)) {
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
    for (const pid of pids.split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
  }
  await new Promise((r) => setTimeout(r, 50));
  try {
    labDown(c.lab.prefix);
  } catch (err) {
    c.io.out(`  cleanup: ${describeError(err)}\n`);
  }
  const bpf = join(c.dir, 'bpf');
  try {
    if (isBpffs(bpf)) unmount(bpf);
  } catch {
    /* not mounted */
  }
  rmSync(c.dir, { recursive: true, force: true });
}

export async function runDemo(rawIo: DemoIo): Promise<number> {
  // After Ctrl-C the steps still in flight are cut short by the cleanup; their output is dropped.
  let interrupted = false;
  const io: DemoIo = { out: (t) => (interrupted ? undefined : rawIo.out(t)) };
  const prefix = `fkd${randomBytes(2).toString('hex')}`;
  const dir = join(tmpdir(), `fibkeeper-demo-${prefix}`);
  mkdirSync(join(dir, 'run'), { recursive: true, mode: 0o750 });
  const port = await freePort();
  const cluster = etcdAvailable();
  const of = cluster ? 6 : 5;
  io.out(
    `fibkeeper demo (lab "${prefix}": network namespaces ${prefix}-client, -router, -server1, -gw, -server2${cluster ? `; ${prefix}c-n1..n3, -client, -br for the cluster act` : ''})\n`,
  );
  io.out(
    `[1/${of}] lab: client -- router -- server1, and router -- gw -- server2; fibkeeper runs in the router\n`,
  );
  // Should the demo die before its cleanup (SIGKILL, a signal during a synchronous step),
  // the reaper removes the labs and ends the agents and etcd it started.
  const reaper = Reaper.start();
  reaper.netns(...Object.values(describeLab(prefix).hosts));
  reaper.dir(dir);
  const lab = labUp(prefix);
  const c: Ctx = {
    reaper,
    io,
    lab,
    dir,
    socket: join(dir, 'run', 'api.sock'),
    metricsUrl: `http://127.0.0.1:${port}`,
    agent: undefined,
    api: new ApiClient(join(dir, 'run', 'api.sock')),
    clusterCleanup: undefined,
  };
  const onSignal = () => {
    interrupted = true;
    rawIo.out('\ninterrupted: cleaning up\n');
    void cleanup({ ...c, io: rawIo }).then(() => {
      reaper.close();
      rawIo.out('cleanup: agent stopped, XDP detached, namespaces removed\n');
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await startAgent(c, port);
    io.out(
      `[2/${of}] forwardable: server1 ${lab.addr.server1} / ${lab.addr.server1v6} (on-link), server2 ${lab.addr.server2} / ${lab.addr.server2v6} (via gw)\n`,
    );
    await c.api.call('POST', '/v1/forwardable', {
      owner: 'demo',
      ips: [lab.addr.server1, lab.addr.server1v6, lab.addr.server2, lab.addr.server2v6],
    });
    await waitFor(
      async () => {
        const st = await c.api.call<{
          neighbor: { summary: { desiredByStatus: { done: number } } };
        }>('GET', '/v1/status');
        return st.neighbor.summary.desiredByStatus.done >= 4 ? true : undefined;
      },
      5000,
      'neighbor entries',
    );
    showNeighbors(c);
    io.out(`[3/${of}] traffic from the client\n`);
    await traffic(c, 'sent');
    io.out(`[4/${of}] repair: delete the router's neighbor entry for server1\n`);
    await repairDemo(c);
    io.out(`[5/${of}] external IP on the holder device, announced from r-client\n`);
    await extipDemo(c);
    if (cluster) {
      io.out(
        `[6/6] cluster mode: three nodes and a client on one segment, one cluster IP, the holder killed\n`,
      );
      await clusterAct(io, {
        prefix: `${prefix}c`,
        dir: join(dir, 'cluster'),
        reaper,
        onCleanup: (fn) => (c.clusterCleanup = fn),
      });
    } else {
      io.out(`(the cluster act needs etcd: apt-get install etcd-server)\n`);
    }
    const m = await scrape(c.metricsUrl);
    const pick = (prefix: string) =>
      [...m].filter(([k, v]) => k.startsWith(prefix) && v > 0).map(([k, v]) => `${k} ${v}`);
    io.out(`some of the agent's metrics (${c.metricsUrl}/metrics):\n`);
    const lines = [
      ...pick('fibkeeper_neighbor_inserts_total'),
      ...pick('fibkeeper_neighbor_reinserts_total'),
      ...pick('fibkeeper_extip_announcements_sent_total'),
      ...pick('fibkeeper_xdp_attached'),
    ];
    for (const line of lines.slice(0, 10)) io.out(`  ${line}\n`);
    return 0;
  } catch (err) {
    io.out(
      `demo failed: ${describeError(err)}\n  agent log: ${join(dir, 'agent.log')} (removed at cleanup; last lines below)\n`,
    );
    try {
      io.out(readFileSync(join(dir, 'agent.log'), 'utf8').split('\n').slice(-8).join('\n') + '\n');
    } catch {
      /* no log */
    }
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!interrupted) {
      await cleanup(c);
      reaper.close();
      io.out(`cleanup: agent stopped, XDP detached, namespaces removed\n`);
    }
  }
}
