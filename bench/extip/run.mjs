#!/usr/bin/env node
// Benchmark of the external-IP subsystem (src/extip), three figures, each against a
// reference measured in the same run:
//
//  1. assign-ipv4: ExternalIpSubsystem.assign() of N IPv4 external IPs, duplicate address
//     detection off — validated, added to the holder (a bridge: this kernel has no dummy)
//     and the first announcement of each (gratuitous ARP request + reply) sent; it returns
//     then, the rest of each burst is scheduled. Reference: `ip -n NS -batch FILE` adding
//     the same N addresses (`addr add IP/32 dev HOLDER noprefixroute`) to another bridge, no
//     announcements. Target: at most 1.2x the reference.
//  1b. assign-ipv4-dad: the same with duplicate address detection at its defaults (3 ARP
//     probes per IP, 250 ms apart, 1 s wait: 1.5 s). Reference: that wait plus assign-ipv4
//     of the same round. Target: at most 1.1x — detection costs its wait and nothing more,
//     however many IPs (they are probed in parallel).
//  2. announce-send: the raw send time of N prebuilt announcement frames (gratuitous ARP,
//     42 bytes) through PacketSocket.send on the external interface. Reference: the same
//     frames sent by a C loop of send(2) on an AF_PACKET socket (bench/extip/ref). Target:
//     at most 10 ms for 1,000.
//
// Everything happens in two namespaces of its own (node and peer joined by a veth), always
// deleted. Sides alternate per round; medians are reported, and for assign-ipv4 the ratio
// is the median of the per-round ratios. Needs root, `make build` (or
// `npx tsc -p tsconfig.build.json` plus the native addon) and a C compiler.
//
// --baseline ROOT adds another build of the project (ROOT/dist, e.g. a worktree of an earlier
// commit after `make build`) as a second subsystem in the same process and namespace, on a
// holder of its own, timed in the same rounds (the order rotates): an A/B of a change,
// reported as ab-assign-ipv4 (the median of the per-round ratios ours / baseline). The
// results file is then left as it is.
//
// Usage: node bench/extip/run.mjs [--rounds R] [--n N] [--baseline ROOT]
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { flagValue } from '../args.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const ASSIGN_TARGET_RATIO = 1.2;
const DAD_TARGET_RATIO = 1.1;
const SEND_TARGET_MS_PER_1000 = 10;

function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => flagValue(a, name, def);
  return {
    rounds: Number(get('--rounds', '15')),
    n: Number(get('--n', '1000')),
    baseline: get('--baseline', undefined),
  };
}

function ip(ns, ...argv) {
  const r = spawnSync('ip', ['-n', ns, ...argv], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`ip -n ${ns} ${argv.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

const extIp = (i) => {
  const v = 0x0ac90001 + i; // 10.201.0.1 onwards
  return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const round2 = (x) => Math.round(x * 100) / 100;
const sleep = (t) => new Promise((r) => setTimeout(r, t));

function countAddrs(ns, dev) {
  const links = JSON.parse(ip(ns, '-j', 'addr', 'show', 'dev', dev));
  return (links[0]?.addr_info ?? []).filter((a) => a.family === 'inet').length;
}

async function load(from = root) {
  const load1 = (m) =>
    import(join(from, 'dist', m, 'index.js')).catch((err) => {
      throw new Error(`cannot load ${from}/dist/${m} (run make build there): ${err.message}`);
    });
  const [extip, native, log] = await Promise.all([load1('extip'), load1('native'), load1('log')]);
  return { extip, native, log };
}

function setUp(node, peer) {
  for (const ns of [node, peer]) {
    execFileSync('ip', ['netns', 'add', ns]);
    ip(ns, 'link', 'set', 'lo', 'up');
  }
  ip(node, 'link', 'add', 'ext0', 'type', 'veth', 'peer', 'name', 'peer0', 'netns', peer);
  ip(node, 'link', 'set', 'ext0', 'up');
  ip(peer, 'link', 'set', 'peer0', 'up');
  ip(node, 'addr', 'add', '10.200.0.1/16', 'dev', 'ext0');
  ip(peer, 'addr', 'add', '10.200.0.2/16', 'dev', 'peer0');
  ip(node, 'link', 'add', 'fkr0', 'type', 'bridge');
  ip(node, 'link', 'set', 'fkr0', 'up');
}

/** One round of the subsystem: assign N (timed), check, unassign (not timed). */
async function roundOurs(extip, node, ips, holder = 'fkb0') {
  const t0 = process.hrtime.bigint();
  await extip.assign(ips);
  const took = ms(t0);
  const assigned = extip.list().filter((s) => s.state === 'assigned').length;
  if (assigned !== ips.length || countAddrs(node, holder) !== ips.length) {
    throw new Error(`assign: ${assigned} assigned, expected ${ips.length}`);
  }
  await extip.unassign(ips);
  if (countAddrs(node, holder) !== 0) throw new Error('unassign left addresses behind');
  return took;
}

/** One round of ip -batch: add N (timed), check, flush (not timed). */
async function roundIp(node, ips, dir) {
  const file = join(dir, 'add.batch');
  writeFileSync(file, ips.map((a) => `addr add ${a}/32 dev fkr0 noprefixroute`).join('\n') + '\n');
  const t0 = process.hrtime.bigint();
  ip(node, '-batch', file);
  const took = ms(t0);
  if (countAddrs(node, 'fkr0') !== ips.length) throw new Error('ip -batch: addresses missing');
  ip(node, 'addr', 'flush', 'dev', 'fkr0');
  await sleep(100); // the subsystem hears the deletions before the next validation
  return took;
}

function sendRaw(native, node, ifindex, frames) {
  const sock = native.PacketSocket.open({ ifindex, netns: node, protocol: 0 });
  try {
    const t0 = process.hrtime.bigint();
    for (const f of frames) sock.send(f);
    return ms(t0);
  } finally {
    sock.close();
  }
}

function sendC(bin, node, ifindex, file) {
  const out = execFileSync(bin, [node, String(ifindex), '42', file], { encoding: 'utf8' });
  return Number(out.trim()) / 1e6;
}

async function measure(mods, node, dir, rounds, n, baseMods) {
  const { ExternalIpSubsystem, buildGratuitousArp } = mods.extip;
  const base = { holderKind: 'bridge', interface: 'ext0', checkInterval: 0 };
  const extip = new ExternalIpSubsystem({
    netns: node,
    config: { ...base, holderName: 'fkb0', dad: false },
    registry: new Registry(), // metrics on, as in the agent
    log: mods.log.silentLogger(),
  });
  // duplicate address detection at its defaults, on a holder of its own
  const withDad = new ExternalIpSubsystem({
    netns: node,
    config: { ...base, holderName: 'fkd0' },
    registry: new Registry(),
    log: mods.log.silentLogger(),
  });
  const dadWait =
    (withDad.config.dadProbes - 1) * withDad.config.dadInterval + withDad.config.dadWait;
  const ips = Array.from({ length: n }, (_, i) => extIp(i));
  const bin = join(dir, 'send_frames');
  execFileSync('cc', ['-O2', '-Wall', '-o', bin, join(here, 'ref', 'send_frames.c')]);
  const ifindex = JSON.parse(ip(node, '-j', 'link', 'show', 'dev', 'ext0'))[0].ifindex;
  const mac = JSON.parse(ip(node, '-j', 'link', 'show', 'dev', 'ext0'))[0].address;
  const frames = ips.map((a) => buildGratuitousArp({ ip: a, mac, form: 'request' }));
  const framesFile = join(dir, 'frames.bin');
  writeFileSync(framesFile, Buffer.concat(frames));
  const r = {
    ours: [],
    ip: [],
    raw: [],
    c: [],
    dad: [],
    dadRef: [],
    dadWait,
    base: [],
    abOurs: [],
  };
  // the baseline build (--baseline), on a holder of its own
  const other = baseMods
    ? new baseMods.extip.ExternalIpSubsystem({
        netns: node,
        config: { ...base, holderName: 'fko0', dad: false },
        registry: new Registry(),
        log: baseMods.log.silentLogger(),
      })
    : undefined;
  try {
    await extip.start();
    await extip.setDesired([]);
    if (other) {
      await other.start();
      await other.setDesired([]);
      for (let k = 0; k < 6; k++) {
        await roundOurs(extip, node, ips);
        await roundOurs(other, node, ips, 'fko0');
      }
      for (let k = 0; k < rounds; k++) {
        // A/B in the same rounds, the order alternating
        const first = k % 2 === 0;
        const a = first ? await roundOurs(extip, node, ips) : undefined;
        r.base.push(await roundOurs(other, node, ips, 'fko0'));
        r.abOurs.push(a ?? (await roundOurs(extip, node, ips)));
        await sleep(50);
      }
      return r;
    }
    for (let k = 0; k < 6; k++) {
      // warm-up (JIT, first socket use, kernel allocations), not counted
      await roundOurs(extip, node, ips);
      await roundIp(node, ips, dir);
      sendRaw(mods.native, node, ifindex, frames);
    }
    for (let k = 0; k < rounds; k++) {
      if (k % 2 === 0) {
        r.ours.push(await roundOurs(extip, node, ips));
        r.ip.push(await roundIp(node, ips, dir));
        r.raw.push(sendRaw(mods.native, node, ifindex, frames));
        r.c.push(sendC(bin, node, ifindex, framesFile));
      } else {
        r.ip.push(await roundIp(node, ips, dir));
        r.ours.push(await roundOurs(extip, node, ips));
        r.c.push(sendC(bin, node, ifindex, framesFile));
        r.raw.push(sendRaw(mods.native, node, ifindex, frames));
      }
      await sleep(50);
    }
    // started only now, so that its listeners do not load the rounds above
    await withDad.start();
    await withDad.setDesired([]);
    // fewer rounds: each takes the detection's wait
    for (let k = 0; k < Math.ceil(rounds / 2); k++) {
      r.dad.push(await roundOurs(withDad, node, ips, 'fkd0'));
      r.dadRef.push(dadWait + (await roundOurs(extip, node, ips)));
      await sleep(50);
    }
  } finally {
    await withDad.stop();
    await extip.stop();
    await other?.stop();
  }
  return r;
}

async function main() {
  const { rounds, n, baseline } = args();
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mods = await load();
  const baseMods = baseline === undefined ? undefined : await load(baseline);
  const tag = randomBytes(4).toString('hex');
  const node = `fkt-bx-${tag}`;
  const peer = `fkt-bxp-${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fk-bench-extip-'));
  const cleanUp = () => {
    spawnSync('ip', ['netns', 'del', node]);
    spawnSync('ip', ['netns', 'del', peer]);
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (sig) => {
    cleanUp();
    process.kill(process.pid, sig);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let r;
  try {
    setUp(node, peer);
    r = await measure(mods, node, dir, rounds, n, baseMods);
  } finally {
    cleanUp();
  }
  if (baseMods) reportAb(r, baseline);
  else report(r, rounds, n);
}

function reportAb(r, baseline) {
  const perRound = r.abOurs.map((x, i) => x / r.base[i]);
  console.log(
    `ab-assign-ipv4: ours ${round2(median(r.abOurs))} ms, baseline (${baseline}) ${round2(median(r.base))} ms; ` +
      `ours / baseline per round: median ${median(perRound).toFixed(3)}, ` +
      `range ${round2(Math.min(...perRound))}-${round2(Math.max(...perRound))} (${perRound.length} rounds)`,
  );
}

function report(r, rounds, n) {
  const ours = median(r.ours);
  const ref = median(r.ip);
  // Each round measures both sides back to back: the median of the per-round ratios is
  // robust to load that drifts between rounds (other work on the machine).
  const paired = median(r.ours.map((x, i) => x / r.ip[i]));
  const raw = median(r.raw);
  const c = median(r.c);
  const sendTarget = (SEND_TARGET_MS_PER_1000 * n) / 1000;
  const figures = [
    {
      name: 'assign-ipv4',
      description: `assign ${n} IPv4 external IPs: on the holder and first announcement (GARP request + reply) sent`,
      value: round2(ours),
      unit: 'ms',
      reference: round2(ref),
      referenceName: `ip -batch: ${n} x addr add IP/32 dev BRIDGE noprefixroute (no announcements)`,
      ratio: round2(paired),
      ratioMeaning: 'median of the per-round ratios (each round: both sides back to back)',
      ratioOfMedians: round2(ours / ref),
      target: ASSIGN_TARGET_RATIO,
      targetMeaning: 'ratio at most',
      pass: paired <= ASSIGN_TARGET_RATIO,
      rounds: r.ours.map(round2),
      referenceRounds: r.ip.map(round2),
    },
    {
      name: 'assign-ipv4-dad',
      description: `assign ${n} IPv4 external IPs with duplicate address detection at its defaults (3 ARP probes per IP 250 ms apart, then 1 s)`,
      value: round2(median(r.dad)),
      unit: 'ms',
      reference: round2(median(r.dadRef)),
      referenceName: `the detection's wait (${r.dadWait} ms) + assign-ipv4 in the same round`,
      ratio: round2(median(r.dad.map((x, i) => x / r.dadRef[i]))),
      ratioMeaning: 'median of the per-round ratios',
      target: DAD_TARGET_RATIO,
      targetMeaning: 'ratio at most',
      pass: median(r.dad.map((x, i) => x / r.dadRef[i])) <= DAD_TARGET_RATIO,
      rounds: r.dad.map(round2),
      referenceRounds: r.dadRef.map(round2),
    },
    {
      name: 'announce-send',
      description: `raw send of ${n} announcement frames (42-byte GARP) with PacketSocket.send`,
      value: round2(raw),
      unit: 'ms',
      reference: round2(c),
      referenceName: 'the same frames by a C send(2) loop on AF_PACKET (bench/extip/ref)',
      ratio: round2(raw / c),
      ratioMeaning: 'value / reference',
      target: sendTarget,
      targetMeaning: 'value at most (ms)',
      pass: raw <= sendTarget,
      rounds: r.raw.map(round2),
      referenceRounds: r.c.map(round2),
    },
  ];
  for (const f of figures) {
    console.log(
      `${f.name}: ${f.value} ${f.unit} (median of ${f.rounds.length}); reference ${f.reference} ${f.unit} ` +
        `[${f.referenceName}]; ratio ${f.ratio}; target ${f.targetMeaning} ${f.target} -> ${f.pass ? 'PASS' : 'MISS'}`,
    );
  }
  const out = {
    benchmark: 'extip',
    n,
    rounds,
    figures,
    kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
    node: process.version,
    date: new Date().toISOString(),
  };
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(join(root, 'bench', 'results', 'extip.json'), JSON.stringify(out, null, 2) + '\n');
}

main().catch((err) => {
  console.error(`extip bench: ${err.stack ?? err}`);
  process.exitCode = 1;
});
