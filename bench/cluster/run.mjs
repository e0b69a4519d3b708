// Failover of cluster mode end to end: three agents (`fibkeeper run`, the default cluster
// settings) in three node namespaces and a client on one segment (src/lab/cluster.ts), a
// local etcd (loopback, random ports, in-memory data dir, killed by PID at the end). The
// client pings one cluster IP every 10 ms. Each round the holder's agent gets SIGKILL (or
// SIGTERM: graceful handover), and from that moment the bench measures
//   (a) the new holder's first gratuitous ARP on the client's wire,
//   (b) the client's neighbor entry pointing at the new holder (its kernel's notification),
//   (c) the client's first echo reply from the new holder (source MAC on the client's wire),
// against a reference from the same round: etcd deleting the old holder's ownership key
// (a watcher on the key), the floor that etcd itself sets. The killed agent is started again
// between rounds. Dual holders: every ARP reply, gratuitous ARP and NA on the segment
// (tcpdump on the bridge) must lie inside a hold interval of the node that sent it (its own
// hold sets, debug log), and no two nodes' hold intervals of the IP may overlap.
// Run: flock /work/wt/bench.lock node bench/cluster/run.mjs [--rounds 20] [--json FILE]
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ApiClient } from '../../dist/api/index.js';
import {
  EtcdStore,
  LocalEtcd,
  defaultOptions,
  findOverlaps,
  holdIntervals,
} from '../../dist/cluster/index.js';
import { monotonicClock } from '../../dist/sched/index.js';
import { decodeFrame } from '../../dist/extip/index.js';
import {
  Reaper,
  clusterAgentConfig,
  clusterLabDown,
  clusterLabNamespaces,
  clusterLabUp,
  describeClusterLab,
} from '../../dist/lab/index.js';
import { PacketSocket } from '../../dist/native/index.js';
import { NetlinkHandle } from '../../dist/netlink/index.js';

const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '20' }, json: { type: 'string' } },
});
const ROUNDS = Number(args.rounds);
const here = fileURLToPath(new URL('.', import.meta.url));
const BIN = join(here, '..', '..', 'bin', 'fibkeeper.js');
const OUT = args.json ?? join(here, '..', 'results', 'cluster.json');
const now = () => monotonicClock.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const REAL_MINUS_MONO = performance.timeOrigin + performance.now() - now();

let stopSignal;
async function until(pred, ms, what) {
  const end = now() + ms;
  for (;;) {
    if (stopSignal) throw new Error(`interrupted (${stopSignal})`);
    const v = await pred();
    if (v) return v;
    if (now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(5);
  }
}

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  const r = (x) => Math.round(x * 10) / 10;
  return { n: s.length, min: r(s[0]), p50: r(q(0.5)), p99: r(q(0.99)), max: r(s.at(-1)) };
}

function holderOf(nodes, ip) {
  for (const n of nodes) {
    const r = spawnSync('ip', ['-n', n.netns, '-j', 'addr', 'show', 'dev', 'fibkeeper0'], {
      encoding: 'utf8',
    });
    if ((r.stdout ?? '').includes(`"${ip}"`)) return n;
  }
  return undefined;
}

const prefix = `fkb${Math.random().toString(16).slice(2, 7)}`;
const dir = mkdtempSync(join(tmpdir(), 'fk-bench-cluster-'));
const KEYS = '/fk-bench/';
// Should this process die before its finally (SIGKILL, a crash), the reaper ends the agents,
// etcd, tcpdump and ping by PID and deletes the lab's namespaces.
const reaper = Reaper.start();
reaper.netns(...clusterLabNamespaces(describeClusterLab(prefix)));
reaper.dir(dir);
const etcd = await LocalEtcd.start({
  onSpawn: (pid, dataDir) => (reaper.process(pid), reaper.dir(dataDir)),
});
const lab = clusterLabUp(prefix);
const IP = lab.ip4(0);
const procs = [];
let dump;
let sock;
let nl;
let watcher;
const store = new EtcdStore({ endpoints: [etcd.endpoint], requestTimeoutMs: 2000 });
// Ctrl-C or a timeout's SIGTERM: the next wait throws, and the finally below removes
// everything. Should that not come within 20 s, leave anyway (the reaper sweeps).
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    stopSignal = sig;
    setTimeout(() => process.exit(130), 20_000).unref();
  });
}
try {
  const nodes = lab.nodes.map((n) => {
    const d = join(dir, n.name);
    mkdirSync(d, { mode: 0o750 });
    writeFileSync(
      join(d, 'config.yaml'),
      clusterAgentConfig(n, {
        etcd: etcd.endpoint,
        dir: d,
        keyPrefix: KEYS,
        logLevel: 'debug',
        neighbor: false,
      }) + '\n',
    );
    return { ...n, dir: d, log: join(d, 'agent.log'), api: new ApiClient(join(d, 'api.sock')) };
  });
  const start = async (n) => {
    const fd = openSync(n.log, 'a');
    n.proc = reaper.agent(
      spawn(process.execPath, [BIN, 'run', '--config', join(n.dir, 'config.yaml')], {
        stdio: ['ignore', fd, fd],
      }),
    );
    closeSync(fd);
    procs.push(n.proc);
    await until(
      async () => {
        if (n.proc.exitCode !== null) throw new Error(readFileSync(n.log, 'utf8').slice(-800));
        const st = await n.api.call('GET', '/v1/status').catch(() => undefined);
        return st?.ready === true;
      },
      30_000,
      `${n.name} ready`,
    );
  };
  await Promise.all(nodes.map(start));

  // The segment: who speaks for the IP (tcpdump on the bridge, realtime stamps).
  const speakers = [];
  dump = spawn(
    'ip',
    [
      'netns',
      'exec',
      lab.bridge,
      'tcpdump',
      '-i',
      'br0',
      '-l',
      '-n',
      '-e',
      '-tt',
      '--immediate-mode',
      'arp',
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  reaper.child(dump);
  let buf = '';
  dump.stdout.setEncoding('utf8');
  dump.stdout.on('data', (s) => {
    buf += s;
    const lines = buf.split('\n');
    buf = lines.pop() ?? '';
    for (const l of lines) {
      const m =
        /^(\d+\.\d+) ([0-9a-f:]{17}) > .*(?:Reply (\S+) is-at|Request who-has (\S+) tell \4,)/.exec(
          l,
        );
      if (m && (m[3] ?? m[4]) === IP)
        speakers.push({ at: Number(m[1]) * 1000 - REAL_MINUS_MONO, mac: m[2], line: l });
    }
  });

  // The client's wire: gratuitous ARPs for the IP, echo replies from it (with the MAC).
  const garps = [];
  const replies = [];
  const c = lab.client;
  const ifindex = JSON.parse(
    spawnSync('ip', ['-n', c.netns, '-j', 'link', 'show', 'dev', c.dev], { encoding: 'utf8' })
      .stdout,
  )[0].ifindex;
  sock = PacketSocket.open({ ifindex, netns: c.netns });
  const macOf = (f, off) =>
    [...f.subarray(off, off + 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
  sock.receive({
    onFrame(f) {
      const at = now();
      const d = decodeFrame(f);
      if (d.kind === 'arp' && d.gratuitous && d.senderIp === IP)
        garps.push({ at, mac: d.senderMac });
      else if (f.readUInt16BE(12) === 0x0800 && f[23] === 1 && f[34] === 0) {
        if (`${f[26]}.${f[27]}.${f[28]}.${f[29]}` === IP) replies.push({ at, mac: macOf(f, 6) });
      }
    },
    onError() {},
  });
  // The client's kernel: its neighbor entry for the IP.
  const entries = [];
  nl = NetlinkHandle.open({ netns: c.netns });
  nl.subscribe(['neigh'], {
    onEvent(ev) {
      if (ev.kind === 'new' && ev.object === 'neigh' && ev.msg.dst === IP && ev.msg.lladdr) {
        entries.push({ at: now(), mac: ev.msg.lladdr });
      }
    },
    onError() {},
  });
  // etcd: when the old holder's ownership key goes (lease expired or revoked).
  const ownerDeletes = [];
  const { revision } = await store.getPrefix(KEYS);
  watcher = store.watchPrefix(`${KEYS}owners/`, revision + 1, {
    onEvents(evs) {
      for (const e of evs) if (e.type === 'delete') ownerDeletes.push(now());
    },
    onEnd() {},
  });

  await nodes[0].api.call('POST', '/v1/cluster/extip', { ips: [IP] });
  const pinger = reaper.child(
    spawn('ip', ['netns', 'exec', c.netns, 'ping', '-q', '-i', '0.01', IP], { stdio: 'ignore' }),
  );
  procs.push(pinger);

  const results = {
    sigkill: { a: [], b: [], c: [], ref: [] },
    sigterm: { a: [], b: [], c: [], ref: [] },
  };
  for (const kind of ['sigkill', 'sigterm']) {
    for (let round = 0; round < ROUNDS; round++) {
      // One holder, and the client's entry and replies on it.
      const holder = await until(
        () => {
          const h = holderOf(nodes, IP);
          const e = entries.at(-1);
          const r = replies.at(-1);
          return h && e?.mac === h.mac && r?.mac === h.mac && now() - r.at < 100 ? h : undefined;
        },
        20_000,
        'a settled holder',
      );
      await sleep(300 + Math.random() * 200); // a random phase of the renew cycle
      const t0 = now();
      holder.proc.kill(kind === 'sigkill' ? 'SIGKILL' : 'SIGTERM');
      const next = await until(
        () =>
          holderOf(
            nodes.filter((n) => n !== holder),
            IP,
          ),
        10_000,
        'a new holder',
      );
      const after = (list) => list.find((x) => x.mac === next.mac && x.at > t0)?.at;
      await until(
        () => after(garps) && after(entries) && after(replies),
        10_000,
        'announcement, entry and reply',
      );
      const r = results[kind];
      r.a.push(after(garps) - t0);
      r.b.push(after(entries) - t0);
      r.c.push(after(replies) - t0);
      r.ref.push((ownerDeletes.find((t) => t > t0) ?? NaN) - t0);
      process.stdout.write(
        `${kind} ${round + 1}/${ROUNDS}: ${holder.name} -> ${next.name}: announced ${r.a.at(-1).toFixed(0)} ms, entry ${r.b.at(-1).toFixed(0)} ms, reply ${r.c.at(-1).toFixed(0)} ms (etcd deleted the key at ${r.ref.at(-1).toFixed(0)} ms)\n`,
      );
      await new Promise((res) =>
        holder.proc.exitCode !== null || holder.proc.signalCode !== null
          ? res()
          : holder.proc.once('exit', res),
      );
      await start(holder);
      await sleep(2500); // the restarted node registers; a rebalance back takes rebalanceDelay
    }
  }

  // Dual holders, from the agents' histories and from the segment.
  await sleep(500);
  const records = [];
  for (const n of nodes) {
    for (const line of readFileSync(n.log, 'utf8').split('\n')) {
      if (!line.includes('"cluster hold set"')) continue;
      const l = JSON.parse(line);
      records.push({ node: n.name, at: l.at, ips: l.ips, deadline: l.deadline ?? -Infinity });
    }
  }
  const overlaps = findOverlaps(records);
  const intervals = holdIntervals(records).filter((i) => i.ip === IP);
  const outside = speakers.filter((s) => {
    const n = nodes.find((x) => x.mac === s.mac);
    if (!n) return false;
    return !intervals.some((i) => i.node === n.name && s.at >= i.from - 20 && s.at <= i.to + 20);
  });
  const o = defaultOptions();
  const settings = {
    etcd: etcd.describe(),
    leaseTtlSeconds: o.leaseTTL / 1000,
    renewIntervalMs: o.renewInterval,
    fenceMarginMs: o.fenceMargin,
    rebalanceDelayMs: o.rebalanceDelay,
    requestTimeoutMs: 500,
    pingIntervalMs: 10,
  };
  console.log(
    `settings: lease TTL ${o.leaseTTL / 1000} s, keep-alive every ${o.renewInterval} ms, fence margin ${o.fenceMargin} ms, rebalance delay ${o.rebalanceDelay} ms; ${etcd.describe()}`,
  );
  const s = (kind, k) => stats(results[kind][k]);
  const fig = (name, description, st, ref, target, targetMeaning) => ({
    name,
    description,
    value: st.p99,
    unit: 'ms',
    reference: ref.p99,
    referenceName:
      "etcd deleting the old holder's ownership key, seen by a watcher (p99, same rounds)",
    ratio: Math.round((st.p99 / ref.p99) * 100) / 100,
    target,
    targetMeaning,
    pass: target === undefined ? undefined : st.p99 <= target,
    stats: st,
  });
  const figures = [];
  for (const kind of ['sigkill', 'sigterm']) {
    const ref = s(kind, 'ref');
    const label = kind === 'sigkill' ? 'SIGKILL' : 'graceful stop (SIGTERM)';
    const target = kind === 'sigkill' ? 2000 : 200;
    figures.push(
      fig(
        `${kind}_to_announcement_p99`,
        `${label} of the holder → the new holder's first gratuitous ARP on the client's wire`,
        s(kind, 'a'),
        ref,
      ),
      fig(
        `${kind}_to_client_entry_p99`,
        `${label} → the client's neighbor entry points at the new holder`,
        s(kind, 'b'),
        ref,
      ),
      fig(
        `${kind}_to_first_reply_p99`,
        `${label} → the client's first echo reply from the new holder`,
        s(kind, 'c'),
        ref,
        target,
        'value at most (ms)',
      ),
    );
  }
  figures.push({
    name: 'dual_holder_intervals',
    description: `overlapping hold intervals of two nodes (${records.length} hold sets) plus frames on the segment outside the sender's hold intervals (${speakers.length} frames), all ${2 * ROUNDS} rounds`,
    value: overlaps.length + outside.length,
    unit: '',
    target: 0,
    targetMeaning: 'value at most',
    pass: overlaps.length + outside.length === 0,
  });
  const report = {
    benchmark: 'cluster',
    kernel: release(),
    date: new Date().toISOString(),
    rounds: ROUNDS,
    settings,
    figures,
    raw: results,
    outside: outside.map((x) => x.line),
    overlaps,
  };
  for (const f of figures) {
    const st = f.stats
      ? ` (n ${f.stats.n}, min ${f.stats.min}, p50 ${f.stats.p50}, max ${f.stats.max})`
      : '';
    console.log(
      `${f.name}: ${f.value}${f.unit ? ` ${f.unit}` : ''}${st}${f.reference !== undefined ? `; reference ${f.reference} ms, ratio ${f.ratio}` : ''}${f.target !== undefined ? `; target ≤ ${f.target}: ${f.pass ? 'met' : 'NOT met'}` : ''}`,
    );
  }
  writeFileSync(OUT, JSON.stringify(report, null, 2) + '\n');
  console.log(`wrote ${OUT}`);
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  watcher?.cancel();
  sock?.close();
  nl?.close();
  if (dump && dump.exitCode === null) dump.kill('SIGTERM');
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  store.close();
  await sleep(200);
  clusterLabDown(prefix);
  await etcd.destroy();
  rmSync(dir, { recursive: true, force: true });
  reaper.close();
  const open = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'Timeout');
  if (process.env.FK_DEBUG_HANDLES) console.error('open at exit:', open);
}
// The etcd client's channel may keep the event loop alive after close(): leave explicitly.
process.exit(process.exitCode ?? 0);
