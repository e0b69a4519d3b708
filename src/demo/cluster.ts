// The demo's cluster act (when etcd is installed): three nodes and a client on one segment,
// a throwaway etcd, an agent per node in cluster mode, one cluster IP; the holder is killed
// with SIGKILL and another node takes the IP over while the client keeps pinging it. What is
// shown comes from the kernel (`ip addr`, the client's neighbor entry) and the client's wire.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../api/index.js';
import { LocalEtcd, findEtcd } from '../cluster/index.js';
import { decodeFrame } from '../extip/index.js';
import {
  clusterAgentConfig,
  clusterLabDown,
  clusterLabNamespaces,
  clusterLabUp,
  describeClusterLab,
  type ClusterLab,
  type Reaper,
  type ClusterLabNode,
} from '../lab/index.js';
import { PacketSocket } from '../native/index.js';

const BIN = fileURLToPath(new URL('../../bin/fibkeeper.js', import.meta.url));

export interface ClusterActIo {
  out(text: string): void;
}

interface Node extends ClusterLabNode {
  dir: string;
  api: ApiClient;
  proc: ChildProcess | undefined;
}

/** Whether the act can run: an etcd binary is installed. */
export function etcdAvailable(): boolean {
  try {
    findEtcd();
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  fn: () => T | undefined | Promise<T | undefined>,
  ms: number,
  what: string,
) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

function run(cmd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('exit', (code) => resolve({ code, out }));
  });
}

async function holderOf(nodes: readonly Node[], ip: string): Promise<Node | undefined> {
  for (const n of nodes) {
    const r = await run('ip', ['-n', n.netns, '-j', 'addr', 'show', 'dev', 'fkcluster0']);
    if (r.out.includes(`"${ip}"`)) return n;
  }
  return undefined;
}

async function clientEntry(lab: ClusterLab, ip: string): Promise<string | undefined> {
  const r = await run('ip', ['-n', lab.client.netns, '-j', 'neigh', 'show', ip]);
  const e = (JSON.parse(r.out || '[]') as { lladdr?: string }[])[0];
  return e?.lladdr;
}

/**
 * Runs the act; `onCleanup` receives the function that removes everything it made (so that
 * Ctrl-C can call it too). Throws when something does not happen.
 */
export async function clusterAct(
  io: ClusterActIo,
  o: { prefix: string; dir: string; reaper: Reaper; onCleanup(fn: () => Promise<void>): void },
): Promise<void> {
  const procs: ChildProcess[] = [];
  let etcd: LocalEtcd | undefined;
  let lab: ClusterLab | undefined;
  let pinger: ChildProcess | undefined;
  let sock: PacketSocket | undefined;
  // Set by the cleanup: a step still in flight (etcd starting) ends what it made and stops.
  let cancelled = false;
  const cleanup = async () => {
    cancelled = true;
    sock?.close();
    sock = undefined;
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await sleep(100);
    clusterLabDown(o.prefix);
    await etcd?.destroy();
  };
  o.onCleanup(cleanup);
  o.reaper.netns(...clusterLabNamespaces(describeClusterLab(o.prefix)));
  etcd = await LocalEtcd.start({
    onSpawn: (pid, dataDir) => (o.reaper.process(pid), o.reaper.dir(dataDir)),
  });
  if (cancelled) {
    await etcd.destroy();
    throw new Error('interrupted');
  }
  lab = clusterLabUp(o.prefix);
  const nodes: Node[] = lab.nodes.map((n) => {
    const dir = join(o.dir, n.name);
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    writeFileSync(
      join(dir, 'config.yaml'),
      clusterAgentConfig(n, { etcd: etcd!.endpoint, dir, neighbor: false }) + '\n',
    );
    return { ...n, dir, api: new ApiClient(join(dir, 'api.sock')), proc: undefined };
  });
  const start = (n: Node) => {
    const log = openSync(join(n.dir, 'agent.log'), 'a');
    n.proc = o.reaper.agent(
      spawn(process.execPath, [BIN, 'run', '--config', join(n.dir, 'config.yaml')], {
        stdio: ['ignore', log, log],
      }),
    );
    closeSync(log);
    procs.push(n.proc);
  };
  nodes.forEach(start);
  for (const n of nodes) {
    await until(
      async () => {
        if (n.proc?.exitCode !== null) {
          throw new Error(
            `agent ${n.name} exited: ${readFileSync(join(n.dir, 'agent.log'), 'utf8').slice(-600)}`,
          );
        }
        const st = await n.api.call<{ ready: boolean }>('GET', '/v1/status').catch(() => undefined);
        return st?.ready ? true : undefined;
      },
      20_000,
      `agent ${n.name} ready`,
    );
  }
  const ip = lab.ip4(0);
  io.out(
    `  ${etcd.describe()}; agents on ${nodes.map((n) => `${n.name} (${n.mac})`).join(', ')}\n`,
  );
  await nodes[0]!.api.call('POST', '/v1/cluster/extip', { ips: [ip] });
  const holder = await until(() => holderOf(nodes, ip), 10_000, 'a holder of the cluster IP');
  io.out(`  fibkeeper cluster extip add ${ip} -> on the holder of ${holder.name} (ip addr)\n`);

  // The client pings every 20 ms; its wire shows which MAC answers.
  const replies: { at: number; mac: string }[] = [];
  const garps: { at: number; mac: string }[] = [];
  const c = lab.client;
  const ifindex = Number(
    (
      JSON.parse((await run('ip', ['-n', c.netns, '-j', 'link', 'show', 'dev', c.dev])).out) as {
        ifindex: number;
      }[]
    )[0]?.ifindex,
  );
  sock = PacketSocket.open({ ifindex, netns: c.netns });
  sock.receive({
    onFrame(f) {
      const at = performance.now();
      const d = decodeFrame(f);
      if (d.kind === 'arp' && d.gratuitous && d.senderIp === ip)
        garps.push({ at, mac: d.senderMac });
      // IPv4 ICMP echo reply from the cluster IP
      if (f.readUInt16BE(12) === 0x0800 && f[23] === 1 && f[34] === 0) {
        if (`${f[26]}.${f[27]}.${f[28]}.${f[29]}` === ip) {
          replies.push({
            at,
            mac: [...f.subarray(6, 12)].map((b) => b.toString(16).padStart(2, '0')).join(':'),
          });
        }
      }
    },
    onError() {},
  });
  pinger = o.reaper.child(
    spawn('ip', ['netns', 'exec', c.netns, 'ping', '-q', '-i', '0.02', ip], { stdio: 'ignore' }),
  );
  procs.push(pinger);
  await until(() => (replies.length >= 5 ? true : undefined), 5000, 'ping replies');
  io.out(
    `  the client pings ${ip} every 20 ms; its neighbor entry: ${await clientEntry(lab, ip)} (${holder.name})\n`,
  );
  const t0 = performance.now();
  holder.proc?.kill('SIGKILL');
  io.out(`  SIGKILL to the agent of ${holder.name}\n`);
  const next = await until(
    async () => {
      const h = await holderOf(
        nodes.filter((n) => n !== holder),
        ip,
      );
      return h && garps.some((g) => g.mac === h.mac && g.at > t0) ? h : undefined;
    },
    10_000,
    'another node to take the IP over',
  );
  await until(
    async () => ((await clientEntry(lab!, ip)) === next.mac ? true : undefined),
    5000,
    "the client's neighbor entry to follow",
  );
  await until(
    () => (replies.some((r) => r.mac === next.mac && r.at > t0) ? true : undefined),
    5000,
    'a reply from the new holder',
  );
  // Watch the wire a little longer: replies from the killed node after the new holder's
  // first one would mean two answerers.
  await new Promise((r) => setTimeout(r, 500));
  const announced = (garps.find((g) => g.mac === next.mac && g.at > t0)?.at ?? t0) - t0;
  const firstNew = replies.find((r) => r.mac === next.mac && r.at > t0)?.at ?? t0;
  const answered = firstNew - t0;
  // The client's outage: from its last reply before the kill to the first one after it.
  const lastBefore = replies.filter((r) => r.at <= t0).at(-1)?.at ?? t0;
  const firstAfter = replies.find((r) => r.at > t0)?.at ?? firstNew;
  const outage = firstAfter - lastBefore;
  const stale = replies.filter((r) => r.mac === holder.mac && r.at > firstNew).length;
  const holderGone = !(await run('ip', ['-n', holder.netns, 'link', 'show', 'dev', 'fkcluster0']))
    .out;
  io.out(
    `  ${next.name} took the IP over: its gratuitous ARP ${announced.toFixed(0)} ms after the kill, the first echo reply from it ${answered.toFixed(0)} ms after the kill\n` +
      `  the client's neighbor entry now points to ${next.mac} (${next.name}); the client went ${outage.toFixed(0)} ms without a reply (pings every 20 ms), ` +
      `and ${stale === 0 ? 'no' : stale} echo repl${stale === 1 ? 'y' : 'ies'} came from ${holder.name} after ${next.name}'s first\n` +
      `  ${holder.name}'s cluster holder ${holderGone ? 'went with its process: fkcluster0 is gone from its namespace' : 'is still there (fkcluster0 exists)'}\n`,
  );
}
