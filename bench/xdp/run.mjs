#!/usr/bin/env node
// Benchmark of fk_xdp_fwd (bpf/xdp_fwd.c as loaded by src/fib), in namespaces of its own:
//
//  1. Per-packet cost with bpf_prog_test_run (repeat >= 1,000,000) of the IPv4 SUCCESS, IPv6
//     SUCCESS and IPv4 NO_NEIGH paths, against the bare reference forwarder
//     (bench/xdp/ref/xdp_ref_fwd.c) in the same run. fk_xdp_fwd runs with every check on, as
//     the loader configures it: destination MAC, header checksum, martians, the local-source
//     table holding the router's addresses, multipath policy 0. The rp_filter emulation (a
//     reverse bpf_fib_lookup when the device's rp_filter is 1 or 2) is measured on its own:
//     the same program with rp_filter 1 for its slot, against the program without. Every run goes through rs_restore
//     (bench/xdp/ref/xdp_restore.c), which writes the frame's first 32 bytes back before
//     tail-calling the program, or the TTL would reach 1 after 63 repeats; the wrapper's own
//     cost (rs_restore -> rs_pass) is measured too and subtracted.
//  2. Packets/s forwarded on one core with live frames (BPF_F_TEST_XDP_LIVE_FRAMES) through
//     client — router — server: frames enter the router's r1 and leave through r2 to the
//     server, whose s0 drops them in XDP. fk_xdp_fwd (redirect) against the kernel's own
//     forwarding of the same frames (rs_pass: XDP_PASS into the router's stack), same run,
//     same wrapper. Delivery is checked (fk's redirect counter, IpForwDatagrams).
//
// Rounds alternate the order of the sides; figures are medians. Writes
// bench/results/xdp.json. Needs root, `make bpf` and `npx tsc -p tsconfig.build.json`.
//
// Usage: node bench/xdp/run.mjs [--rounds 7] [--repeat 1000000] [--live-repeat 1000000]
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flagValue } from '../args.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const dist = join(root, 'dist');
const OBJ = process.env.FK_BENCH_OBJ ?? join(root, 'build', 'bpf', 'xdp_fwd.o');
for (const [what, path, fix] of [
  ['compiled TypeScript', join(dist, 'fib', 'index.js'), 'npx tsc -p tsconfig.build.json'],
  ['the XDP object', OBJ, 'make bpf'],
]) {
  if (!existsSync(path)) {
    console.error(`missing ${what} (${path}): run ${fix}`);
    process.exit(2);
  }
}
const fib = await import(join(dist, 'fib', 'index.js'));
const native = await import(join(dist, 'native', 'index.js'));
const { BpfObject, BpfProgram, BpfLink, XdpAction, runInNetns } = native;

// ---- options ----------------------------------------------------------------------------
function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => Number(flagValue(a, name, def));
  return {
    rounds: get('--rounds', 7),
    repeat: get('--repeat', 1_000_000),
    liveRepeat: get('--live-repeat', 1_000_000),
  };
}
const opt = args();
if (opt.repeat < 1_000_000) console.warn('note: --repeat below 1,000,000 is noisier');

// ---- targets (issue 9, for this kind of machine) -------------------------------------------
// test-run: at most 1.10 x the bare reference in the same run; live frames: at least 2.5 x
// (IPv4) and 1.6 x (IPv6) the kernel's own forwarding in the same run
const TARGET = { v4tr: 1.1, v6tr: 1.1, v4ratio: 2.5, v6ratio: 1.6 };

// ---- namespaces ---------------------------------------------------------------------------
const tag = randomBytes(3).toString('hex');
const NS = { client: `fkb-xdp-c-${tag}`, router: `fkb-xdp-r-${tag}`, server: `fkb-xdp-s-${tag}` };
const MAC = {
  client: '02:00:00:0b:01:02',
  r1: '02:00:00:0b:01:01',
  r2: '02:00:00:0b:02:01',
  server: '02:00:00:0b:02:02',
};
const tmp = mkdtempSync(join(tmpdir(), 'fkb-xdp-'));
const closers = [];

function cleanup() {
  for (const c of closers.splice(0).reverse()) {
    try {
      c();
    } catch {
      /* best effort */
    }
  }
  for (const ns of Object.values(NS)) spawnSync('ip', ['netns', 'del', ns]);
  rmSync(tmp, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}

function ip(ns, ...argv) {
  const r = spawnSync('ip', ['-n', ns, ...argv], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip -n ${ns} ${argv.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}
const sysctl = (ns, kv) => execFileSync('ip', ['netns', 'exec', ns, 'sysctl', '-qw', kv]);
const ifindex = (ns, dev) => JSON.parse(ip(ns, '-j', 'link', 'show', 'dev', dev))[0].ifindex;

function topology() {
  for (const ns of Object.values(NS)) {
    execFileSync('ip', ['netns', 'add', ns]);
    ip(ns, 'link', 'set', 'lo', 'up');
    sysctl(ns, 'net.ipv6.conf.all.accept_dad=0');
    sysctl(ns, 'net.ipv6.conf.default.accept_dad=0');
  }
  sysctl(NS.router, 'net.ipv4.ip_forward=1');
  sysctl(NS.router, 'net.ipv6.conf.all.forwarding=1');
  const pair = (a, da, ma, b, db, mb) => {
    ip(
      a,
      'link',
      'add',
      da,
      'address',
      ma,
      'type',
      'veth',
      'peer',
      'name',
      db,
      'address',
      mb,
      'netns',
      b,
    );
    ip(a, 'link', 'set', da, 'up');
    ip(b, 'link', 'set', db, 'up');
  };
  pair(NS.client, 'c0', MAC.client, NS.router, 'r1', MAC.r1);
  pair(NS.server, 's0', MAC.server, NS.router, 'r2', MAC.r2);
  const addrs = [
    [NS.client, 'c0', '10.61.1.2/24', 'fd61:1::2/64'],
    [NS.router, 'r1', '10.61.1.1/24', 'fd61:1::1/64'],
    [NS.router, 'r2', '10.61.2.1/24', 'fd61:2::1/64'],
    [NS.server, 's0', '10.61.2.2/24', 'fd61:2::2/64'],
  ];
  for (const [ns, dev, v4, v6] of addrs) {
    ip(ns, 'addr', 'add', v4, 'dev', dev);
    ip(ns, 'addr', 'add', v6, 'dev', dev, 'nodad');
  }
  for (const [dst, mac] of [
    ['10.61.2.2', MAC.server],
    ['fd61:2::2', MAC.server],
  ]) {
    ip(NS.router, 'neigh', 'replace', dst, 'lladdr', mac, 'dev', 'r2', 'nud', 'permanent');
  }
  ip(NS.router, 'route', 'add', '10.9.6.0/24', 'via', '10.61.2.3'); // no neighbor: NO_NEIGH
  // s0 drops in XDP: the receiving side costs the same for both ways of forwarding, and a
  // veth only takes redirected frames when its peer runs XDP
  const drop = BpfProgram.loadXdpAction(XdpAction.DROP, 'fkb_drop');
  const link = BpfLink.attachXdp(drop, ifindex(NS.server, 's0'), { netns: NS.server });
  closers.push(
    () => link.close(),
    () => drop.close(),
  );
  return { r1: ifindex(NS.router, 'r1'), r2: ifindex(NS.router, 'r2') };
}

// ---- frames -------------------------------------------------------------------------------
function mac(s) {
  return Buffer.from(s.split(':').map((x) => parseInt(x, 16)));
}
function csum(b) {
  let s = 0;
  for (let i = 0; i < b.length; i += 2) s += b.readUInt16BE(i);
  while (s > 0xffff) s = (s & 0xffff) + (s >>> 16);
  return ~s & 0xffff;
}
function v4frame(dst) {
  const f = Buffer.alloc(64); // 60 + FCS on the wire: the smallest Ethernet frame
  mac(MAC.r1).copy(f, 0);
  mac(MAC.client).copy(f, 6);
  f.writeUInt16BE(0x0800, 12);
  const ip4 = f.subarray(14, 34);
  ip4[0] = 0x45;
  ip4.writeUInt16BE(64 - 14, 2);
  ip4.writeUInt16BE(0x4000, 6);
  ip4[8] = 64;
  ip4[9] = 17;
  Buffer.from([10, 61, 1, 2]).copy(ip4, 12);
  Buffer.from(dst.split('.').map(Number)).copy(ip4, 16);
  ip4.writeUInt16BE(csum(ip4), 10);
  f.writeUInt16BE(4000, 34);
  f.writeUInt16BE(9, 36); // discard
  f.writeUInt16BE(64 - 34, 38);
  return f;
}
function v6frame() {
  const f = Buffer.alloc(78);
  mac(MAC.r1).copy(f, 0);
  mac(MAC.client).copy(f, 6);
  f.writeUInt16BE(0x86dd, 12);
  f.writeUInt32BE(0x60000000, 14);
  f.writeUInt16BE(78 - 54, 18);
  f[20] = 17;
  f[21] = 64;
  Buffer.from('fd610001000000000000000000000002', 'hex').copy(f, 22);
  Buffer.from('fd610002000000000000000000000002', 'hex').copy(f, 38);
  f.writeUInt16BE(4000, 54);
  f.writeUInt16BE(9, 56);
  f.writeUInt16BE(78 - 54, 58);
  return f;
}

// ---- programs -----------------------------------------------------------------------------
const ARCH = execFileSync('uname', ['-m']).toString().trim();
function compile(name) {
  const out = join(tmp, `${name}.o`);
  execFileSync('clang', [
    ...['-O2', '-g', '-Wall', '-Wextra', '-Werror', '-target', 'bpf', '-D__TARGET_ARCH_x86'],
    `-I/usr/include/${ARCH}-linux-gnu`,
    `-I${join(root, 'bpf')}`,
    '-c',
    join(here, 'ref', `${name}.c`),
    '-o',
    out,
  ]);
  return out;
}
const u32 = (n) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

/** rs_restore with `frame`'s head in rodata; run(target) tail-calls target. */
function wrapper(restoreObj, frame, ingress) {
  const obj = BpfObject.open(restoreObj);
  obj.setRodata('rs_hdr', Buffer.from(frame.subarray(0, 32)));
  obj.load();
  const restore = obj.program('rs_restore');
  const pass = obj.program('rs_pass');
  const targets = obj.map('rs_target');
  obj.close();
  closers.push(
    () => restore.close(),
    () => pass.close(),
    () => targets.close(),
  );
  return {
    pass,
    run(target, o) {
      targets.update(u32(0), u32(target.fd));
      return runInNetns(NS.router, () =>
        restore.testRun({
          dataIn: frame,
          xdpCtx: { ingressIfindex: ingress },
          repeat: o.repeat,
          ...(o.live ? { liveFrames: true } : {}),
        }),
      );
    },
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const r1 = (x) => Math.round(x * 10) / 10;
const r2 = (x) => Math.round(x * 100) / 100;

function snmpForw(v6) {
  const text = execFileSync(
    'ip',
    ['netns', 'exec', NS.router, 'cat', v6 ? '/proc/net/snmp6' : '/proc/net/snmp'],
    {
      encoding: 'utf8',
    },
  );
  if (v6) return Number(/^Ip6OutForwDatagrams\s+(\d+)/m.exec(text)[1]);
  const [keys, vals] = text.split('\n').filter((l) => l.startsWith('Ip:'));
  return Number(vals.split(/\s+/)[keys.split(/\s+/).indexOf('ForwDatagrams')]);
}

// ---- measurements -------------------------------------------------------------------------
/** ns per packet of each side through the wrapper, minus the wrapper, median of rounds. */
function perPacket(w, sides, expect) {
  const raw = Object.fromEntries([['wrapper', []], ...Object.keys(sides).map((k) => [k, []])]);
  const order = ['wrapper', ...Object.keys(sides)];
  for (let round = 0; round < opt.rounds; round++) {
    const names = round % 2 ? [...order].reverse() : order;
    for (const name of names) {
      const prog = name === 'wrapper' ? w.pass : sides[name];
      const r = w.run(prog, { repeat: opt.repeat });
      const want = name === 'wrapper' ? XdpAction.PASS : expect[name];
      if (r.retval !== want) throw new Error(`${name}: verdict ${r.retval}, expected ${want}`);
      raw[name].push(r.durationNs);
    }
  }
  const wrap = median(raw.wrapper);
  const out = { wrapperNs: r1(wrap), rounds: raw };
  for (const k of Object.keys(sides))
    out[k] = { totalNs: r1(median(raw[k])), ns: r1(median(raw[k]) - wrap) };
  return out;
}

/** Mpps on live frames: fk redirect vs the kernel's forwarding (rs_pass), same wrapper. */
function liveRate(w, fk, counters, v6) {
  const fkMpps = [];
  const kernelMpps = [];
  let fkDelivered = 0;
  let kernelDelivered = 0;
  for (let round = 0; round < opt.rounds; round++) {
    const sides = round % 2 ? ['kernel', 'fk'] : ['fk', 'kernel'];
    for (const side of sides) {
      if (side === 'fk') {
        const before = counters();
        const r = w.run(fk, { repeat: opt.liveRepeat, live: true });
        fkDelivered += counters() - before;
        fkMpps.push(1e3 / r.durationNs);
      } else {
        const before = snmpForw(v6);
        const r = w.run(w.pass, { repeat: opt.liveRepeat, live: true });
        kernelDelivered += snmpForw(v6) - before;
        kernelMpps.push(1e3 / r.durationNs);
      }
    }
  }
  const total = opt.rounds * opt.liveRepeat;
  return {
    fkMpps: r2(median(fkMpps)),
    kernelMpps: r2(median(kernelMpps)),
    fkRedirected: r2(fkDelivered / total),
    kernelForwarded: r2(kernelDelivered / total),
    rounds: { fk: fkMpps.map(r2), kernel: kernelMpps.map(r2) },
  };
}

function figure(name, value, unit, reference, referenceName, target, targetKind, targetOf) {
  const ratio = r2(value / reference);
  const subject = targetOf === 'ratio' ? ratio : value;
  const pass = target === null ? null : targetKind === '>=' ? subject >= target : subject <= target;
  return { name, value, unit, reference, referenceName, ratio, target, targetKind, targetOf, pass };
}

/** fk_state for the router: slot 1 (r1) with rp_filter 0, slot 2 the same with rp_filter 1. */
function writeKernelState(fk) {
  const dev = Array.from({ length: fib.FK_MAX_SLOTS }, () => ({ ...fib.NOT_READY }));
  dev[1] = { ready: true, rpFilter: 0, v4Addr: true, ip6Off: false };
  dev[2] = { ...dev[1], rpFilter: 1 };
  const { table } = fib.buildLocal4(['10.61.1.1', '10.61.2.1']); // the router's addresses
  const state = {
    ...{ mpPolicy4: 0, mpPolicy6: 0, mpath4: false, mpath6: false, local4w: false },
    ...{ dev, local4: table },
  };
  fk.maps.state.update(u32(0), fib.encodeState(state));
}

/**
 * fk_xdp_fwd as the loader configures it (slot 1, destination MAC check on, every kernel-state
 * check), its rp_filter twin (slot 2) and the reference, devmaps r1/r2.
 */
function programs(dev, refObj) {
  const cfg = { ...fib.defaultConfig(), dmacCheck: true, devMac: MAC.r1 };
  const fk = fib.loadInstance(OBJ, { ...cfg, slot: 1 });
  const rp = fib.loadInstance(OBJ, { ...cfg, slot: 2 }, fk.maps);
  closers.push(() => {
    fk.prog.close();
    fk.cfgMap.close();
    rp.prog.close();
    rp.cfgMap.close();
    for (const m of Object.values(fk.maps)) m.close();
  });
  writeKernelState(fk);
  const ro = BpfObject.open(refObj);
  ro.load();
  const ref = ro.program('ref_xdp_fwd');
  const refPorts = ro.map('ref_tx_ports');
  ro.close();
  closers.push(
    () => ref.close(),
    () => refPorts.close(),
  );
  runInNetns(NS.router, () => {
    for (const i of [dev.r1, dev.r2]) {
      fk.maps.txPorts.update(u32(i), u32(i));
      refPorts.update(u32(i), u32(i));
    }
  });
  const redirected = () =>
    fib.decodeStats(fk.maps.stats.lookupPerCpu(u32(1))).actions.redirect.packets;
  return { fk: fk.prog, rp: rp.prog, ref, redirected };
}

function measure(dev, restoreObj, p) {
  const w = {
    v4: wrapper(restoreObj, v4frame('10.61.2.2'), dev.r1),
    v6: wrapper(restoreObj, v6frame(), dev.r1),
    noNeigh: wrapper(restoreObj, v4frame('10.9.6.1'), dev.r1),
  };
  const R = XdpAction.REDIRECT;
  const P = XdpAction.PASS;
  const sides = { fk: p.fk, ref: p.ref };
  console.log(`test-run: ${opt.rounds} rounds x ${opt.repeat} repeats per side`);
  const testrun = {
    v4: perPacket(w.v4, { ...sides, rp: p.rp }, { fk: R, ref: R, rp: R }),
    v6: perPacket(w.v6, sides, { fk: R, ref: R }),
    noNeigh: perPacket(w.noNeigh, sides, { fk: P, ref: P }),
  };
  console.log(`live frames: ${opt.rounds} rounds x ${opt.liveRepeat} frames per side`);
  const live = {
    v4: liveRate(w.v4, p.fk, p.redirected, false),
    v6: liveRate(w.v6, p.fk, p.redirected, true),
  };
  for (const [k, l] of Object.entries(live)) {
    if (l.fkRedirected < 0.99 || l.kernelForwarded < 0.9) {
      throw new Error(
        `${k}: frames not delivered (fk ${l.fkRedirected}, kernel ${l.kernelForwarded})`,
      );
    }
  }
  return { testrun, live };
}

function figures({ testrun: tr, live }) {
  const REF = 'ref_xdp_fwd (bare kernel-sample forwarder)';
  return [
    figure(
      'testrun_ipv4_success',
      tr.v4.fk.ns,
      'ns/packet',
      tr.v4.ref.ns,
      REF,
      TARGET.v4tr,
      '<=',
      'ratio',
    ),
    figure(
      'testrun_ipv6_success',
      tr.v6.fk.ns,
      'ns/packet',
      tr.v6.ref.ns,
      REF,
      TARGET.v6tr,
      '<=',
      'ratio',
    ),
    figure(
      'testrun_ipv4_rp_filter',
      tr.v4.rp.ns,
      'ns/packet',
      tr.v4.fk.ns,
      'fk_xdp_fwd without rp_filter (the emulation costs the difference)',
      null,
      '<=',
      'value',
    ),
    figure(
      'testrun_ipv4_no_neigh',
      tr.noNeigh.fk.ns,
      'ns/packet',
      tr.noNeigh.ref.ns,
      'ref_xdp_fwd (no miss recording)',
      null,
      '<=',
      'value',
    ),
    figure(
      'live_ipv4_forwarding',
      live.v4.fkMpps,
      'Mpps (one core)',
      live.v4.kernelMpps,
      'kernel IPv4 forwarding (XDP_PASS)',
      TARGET.v4ratio,
      '>=',
      'ratio',
    ),
    figure(
      'live_ipv6_forwarding',
      live.v6.fkMpps,
      'Mpps (one core)',
      live.v6.kernelMpps,
      'kernel IPv6 forwarding (XDP_PASS)',
      TARGET.v6ratio,
      '>=',
      'ratio',
    ),
  ];
}

function report(m, figs) {
  const result = {
    benchmark: 'xdp',
    date: new Date().toISOString(),
    kernel: execFileSync('uname', ['-r']).toString().trim(),
    cpus: cpus().length,
    options: opt,
    notes: [
      'test-run figures: median ns per run through rs_restore minus the wrapper alone (rs_restore -> rs_pass)',
      'fk_xdp_fwd with every check on (destination MAC, header checksum, martians, local-source table, multipath policy 0); testrun_ipv4_rp_filter: the same with rp_filter 1 (a reverse bpf_fib_lookup per packet), reported against fk_xdp_fwd without it',
      'live figures: median Mpps; ratio = fk / kernel; target applies to the ratio',
      'no target is given for NO_NEIGH (the slow path: the stack handles the packet next)',
    ],
    figures: figs,
    testrun: m.testrun,
    live: m.live,
  };
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(join(root, 'bench', 'results', 'xdp.json'), `${JSON.stringify(result, null, 2)}\n`);
  const tr = m.testrun;
  console.log(
    `wrapper alone: ${tr.v4.wrapperNs} ns (IPv4 frame), ${tr.v6.wrapperNs} ns (IPv6 frame)`,
  );
  for (const f of figs) {
    const t = f.target === null ? 'no target' : `target ${f.targetOf} ${f.targetKind} ${f.target}`;
    const verdict = f.pass === null ? '' : f.pass ? 'PASS' : 'FAIL';
    const value = `${String(f.value).padStart(7)} ${f.unit.padEnd(16)}`;
    console.log(
      `${f.name.padEnd(24)} ${value} vs ${String(f.reference).padStart(7)} ${f.referenceName}: ratio ${f.ratio} (${t}) ${verdict}`,
    );
  }
  console.log('wrote bench/results/xdp.json');
}

async function main() {
  const dev = topology();
  const restoreObj = compile('xdp_restore');
  const p = programs(dev, compile('xdp_ref_fwd'));
  const m = measure(dev, restoreObj, p);
  report(m, figures(m));
}

try {
  await main();
} finally {
  cleanup();
}
