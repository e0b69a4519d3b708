#!/usr/bin/env node
// Benchmark of the neighbor subsystem (dist/neighbor, run in a child process: agent.mjs).
//
// 1. Converge: N on-link forwardable IPs (each its own next hop) from empty until every
//    entry is in the kernel, against, in the same run and on the same device,
//      - `ip -batch` writing the same entries (neigh replace IP dev D extern_learn managed
//        proto 241), the reference of the target (>= 4x), and
//      - fibkeeper's netlink client writing them directly (neighSetMany), the raw-netlink
//        ceiling: the writes alone, without the next-hop lookups and the tables.
//    Both write the entries as fibkeeper does at that size: `managed` up to
//    neighbor.rateLimit (1000 in agent.mjs) entries, `use` (NTF_USE, the legacy path that
//    neighbor.refresh auto runs above it) beyond.
//    fibkeeper's time runs from setOwner() to the reconciler having written the last entry
//    (NeighborSubsystem.settled()), and every entry is then checked in a kernel dump.
// 2. With 100,000 forwardable IPs loaded: latency from a route change (`ip route replace`
//    to a new gateway) to the new gateway's entry appearing, and from `ip neigh del` of an
//    entry to its re-insertion, both seen as neighbor events by this driver; the reference
//    is the same path for a plain neighSet by this driver (the kernel's own floor).
// 3. The agent process's RSS with 100,000 loaded (reference: the idle agent).
//
// ARP: the peer namespace answers every ARP request by proxy ARP (proxy_delay 0), so the
// entries resolve as on a real network; base_reachable_time on the bench device is one hour
// so that no re-probing runs during the measurements. Every side pays for the same ARP.
// Sides alternate order per round. Needs root and `npx tsc -p tsconfig.build.json`.
//
// Figures (bench/results/neighbor.json): { name, value, unit, reference, referenceName, ratio,
// target, targetKind: ">=" | "<=", targetOf: "ratio" | "value", pass }. Convergence is judged
// against both readings of its target: `converge_N` (ratio = ip -batch / fibkeeper, >= 4)
// and `converge_N_share_of_raw` (ratio = raw / fibkeeper, >= 0.6: fibkeeper takes at most
// 1/0.6 of the raw-netlink time). `runs[]` keeps every round: { n, ms: { fibkeeper, ipBatch, raw } }.
//
// Then, unless --no-soak / --no-scale, the steady state at 100,000 for 10 minutes per refresh
// path (soak.mjs → neighbor-soak.json) and the 1,000,000-IP run (scale.mjs →
// neighbor-scale.json), each in a child process with its defaults.
//
// Usage: node bench/neighbor/run.mjs [--sizes 1000,10000,100000] [--rounds 3] [--iterations 300]
//          [--skip-steady] [--out FILE]   (a run with --skip-steady writes no file unless --out)
//          [--tuning JSON]                (NeighborTuning overrides for the agent, experiments)
//          [--no-soak] [--no-scale]
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BASE,
  DEV,
  PROTO,
  check,
  clear,
  ip,
  ipsFrom,
  latencies,
  median,
  pct,
  quiet,
  r2,
  root,
  setup,
  sleep,
  spawnAgent,
  WARM_BASE,
} from './lab.mjs';
import { flagValue } from '../args.mjs';

/** neighbor.rateLimit of the agent (agent.mjs): above it, refresh auto runs the legacy path. */
const RATE_LIMIT = 1000;

function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => flagValue(a, name, def);
  return {
    sizes: get('--sizes', '1000,10000,100000')
      .split(',')
      .map(Number)
      .filter((n) => n > 0),
    rounds: Number(get('--rounds', '3')),
    iterations: Number(get('--iterations', '300')),
    skipSteady: a.includes('--skip-steady'),
    tuning: JSON.parse(get('--tuning', '{}')),
    out: get('--out', undefined),
  };
}

/**
 * One size: the agent runs warm, as a long-running agent is: before the rounds it converges
 * and clears N other IPs a few times (at least 30,000 IPs in all; one round for 100,000), so
 * that V8 has optimized its hot paths; the raw side gets one untimed write too. The agent is
 * paused (SIGSTOP) while the references run, so that it neither competes for the CPU nor is
 * measured processing their events; after SIGCONT it catches up (its event socket
 * overflowed: a resync) before its own turn.
 */
async function converge(ctx, n, rounds) {
  const { nl, ifindex, dir, r, mod } = ctx;
  const list = ipsFrom(BASE, n);
  const file = join(dir, `set-${n}.batch`);
  const legacy = n > RATE_LIMIT;
  writeFileSync(
    file,
    list
      .map(
        (d) =>
          `neigh replace ${d} dev ${DEV} extern_learn ${legacy ? 'use' : 'managed'} proto ${PROTO}`,
      )
      .join('\n') + '\n',
  );
  const agent = await spawnAgent(r);
  await agent.call('start', { tuning: ctx.tuning });
  const warmups = Math.max(1, Math.min(5, Math.ceil(30_000 / n)));
  for (let k = 0; k < warmups; k++) {
    await agent.call('load', { owner: 'warmup', base: WARM_BASE, count: n });
    await agent.call('clear', { owner: 'warmup' });
    await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
  }
  const paused = async (fn) => {
    agent.pause();
    try {
      return await fn();
    } finally {
      agent.resume();
      // Its event socket holds what the reference did (or overflowed: a resync); let it
      // catch up before anything is timed, or its next turn would pay for the reference.
      await sleep(500);
      await agent.call('settle');
    }
  };
  const sides = {
    ipBatch: () =>
      paused(async () => {
        const t0 = performance.now();
        ip(r, '-batch', file);
        const ms = performance.now() - t0;
        await check(nl, ifindex, n);
        await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
        await clear(nl, ifindex);
        return ms;
      }),
    raw: () =>
      paused(async () => {
        const specs = list.map((dst) =>
          legacy
            ? { ifindex, dst, state: 0, externLearned: true, protocol: PROTO, flags: mod.NTF_USE }
            : { ifindex, dst, state: 0, externLearned: true, managed: true, protocol: PROTO },
        );
        const t0 = performance.now();
        const out = await nl.neighSetMany(specs);
        const ms = performance.now() - t0;
        if (out.failures.length > 0) throw new Error(`raw: ${out.failures[0].error.message}`);
        await check(nl, ifindex, n);
        await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
        await clear(nl, ifindex);
        return ms;
      }),
    fibkeeper: async () => {
      const res = await agent.call('load', { owner: 'bench', base: BASE, count: n });
      ctx.resyncs = res.counters.resyncs;
      await check(nl, ifindex, n);
      await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
      await agent.call('clear', { owner: 'bench' });
      await check(nl, ifindex, 0);
      return res.ms;
    },
  };
  await sides.raw(); // untimed: the driver's own code warms up too
  const got = { ipBatch: [], raw: [], fibkeeper: [] };
  const orders = [
    ['fibkeeper', 'ipBatch', 'raw'],
    ['ipBatch', 'raw', 'fibkeeper'],
    ['raw', 'fibkeeper', 'ipBatch'],
  ];
  try {
    for (let k = 0; k < rounds; k++) {
      for (const name of orders[k % 3]) got[name].push(await sides[name]());
    }
  } finally {
    await agent.stop();
  }
  return got;
}

/**
 * One figure. `targetOf` says what the target bounds: the ratio to the same-run reference
 * (convergence) or the value itself (latency, memory); `targetKind` which way.
 */
function figure(f) {
  const judged = f.targetOf === 'ratio' ? f.ratio : f.value;
  const pass =
    f.target === null ? null : f.targetKind === '>=' ? judged >= f.target : judged <= f.target;
  return {
    name: f.name,
    value: r2(f.value),
    unit: f.unit,
    reference: r2(f.reference),
    referenceName: f.referenceName,
    ratio: r2(f.ratio),
    target: f.target,
    targetKind: f.target === null ? null : f.targetKind,
    targetOf: f.target === null ? null : f.targetOf,
    targetMeaning:
      f.target === null ? null : `${f.targetOf} ${f.targetKind === '>=' ? 'at least' : 'at most'}`,
    pass,
    note: f.note,
  };
}

/** Latencies and RSS with 100,000 loaded; leaves the device empty. */
async function steadyState(ctx, iterations, figures) {
  const { nl, r, mod } = ctx;
  const agent = await spawnAgent(r);
  const idle = (await agent.call('start', { tuning: ctx.tuning })).rss;
  const load = await agent.call('load', { owner: 'bench', base: BASE, count: 100_000 });
  await check(nl, ctx.ifindex, 100_000);
  await quiet(nl, ctx.ifindex, mod.NUD_INCOMPLETE);
  const lat = await latencies(ctx, agent, iterations);
  await sleep(10_000); // idle: V8 gives back what the load left behind
  const mem = await agent.call('rss');
  const status = await agent.call('status');
  await agent.stop();
  const rss = mem.rss / 2 ** 20;
  const peak = mem.maxRss / 2 ** 20;
  const idleMb = idle / 2 ** 20;
  for (const [name, xs] of [
    ['route_change_to_entry', lat.route],
    ['neigh_del_to_reinsert', lat.reinsert],
  ]) {
    for (const q of [50, 99]) {
      const v = pct(xs, q);
      const ref = pct(lat.floor, q);
      figures.push(
        figure({
          name: `${name}_p${q}`,
          value: v,
          unit: 'ms',
          reference: ref,
          referenceName: `the driver's own neighSet to its event (p${q}), same run`,
          ratio: v / ref,
          target: q === 99 ? 5 : null,
          targetKind: '<=',
          targetOf: 'value',
          note: `p${q} of ${xs.length} samples with 100,000 forwardable IPs loaded; target p99 <= 5 ms`,
        }),
      );
    }
    const worst = [...xs]
      .sort((a, b) => b - a)
      .slice(0, 5)
      .map(r2);
    console.log(`${name}: worst ${worst.join(', ')} ms`);
    console.log(
      `${name}: p50 ${r2(pct(xs, 50))} ms, p99 ${r2(pct(xs, 99))} ms (n=${xs.length}; driver's own neighSet p50 ${r2(pct(lat.floor, 50))} ms, p99 ${r2(pct(lat.floor, 99))} ms)`,
    );
  }
  figures.push(
    figure({
      name: 'agent_rss_100000',
      value: rss,
      unit: 'MiB',
      reference: idleMb,
      referenceName: 'the idle agent (started, nothing loaded)',
      ratio: rss / idleMb,
      target: 250,
      targetKind: '<=',
      targetOf: 'value',
      note: 'steady RSS with 100,000 loaded, 10 s after the last activity',
    }),
    figure({
      name: 'agent_rss_peak_100000',
      value: peak,
      unit: 'MiB',
      reference: idleMb,
      referenceName: 'the idle agent (started, nothing loaded)',
      ratio: peak / idleMb,
      target: 250,
      targetKind: '<=',
      targetOf: 'value',
      note: 'peak RSS of the agent process (getrusage maxrss) over loading 100,000 and the latency runs',
    }),
  );
  console.log(
    `agent RSS with 100,000 loaded: ${r2(rss)} MiB, peak ${r2(peak)} MiB (idle ${r2(idleMb)} MiB); load took ${r2(load.ms)} ms`,
  );
  console.log(
    `timeouts (counted as the worst): ${JSON.stringify(lat.timeouts)}; lost to the probe's own overflow (left out): ${JSON.stringify(lat.probeLost)}; agent: ${JSON.stringify(status.counters)}`,
  );
  await clear(nl, ctx.ifindex);
  await nl.routeDel({ dst: '10.200.0.0/24' });
  return lat;
}

async function main() {
  const { sizes, rounds, iterations, skipSteady, out: outFile, tuning } = args();
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mod = await import(join(root, 'dist', 'netlink', 'index.js')).catch((err) => {
    throw new Error(`cannot load dist/netlink (npx tsc -p tsconfig.build.json): ${err.message}`);
  });
  const tag = randomBytes(3).toString('hex');
  const r = `fkt-nbb-r-${tag}`;
  const p = `fkt-nbb-p-${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fk-nbb-'));
  const figures = [];
  const runs = [];
  let nl;
  try {
    setup(r, p);
    nl = mod.NetlinkHandle.open({ netns: r });
    const ctx = { nl, ifindex: await nl.ifindex(DEV), dir, r, mod, tuning };
    // Latencies first, while this driver's own heap is small: its GC pauses would count.
    const lat = skipSteady ? undefined : await steadyState(ctx, iterations, figures);
    for (const n of sizes) {
      const got = await converge(ctx, n, rounds);
      const f = median(got.fibkeeper);
      const b = median(got.ipBatch);
      const w = median(got.raw);
      runs.push({ n, rounds, ms: got });
      console.log(
        `converge N=${n}: fibkeeper ${r2(f)} ms, ip -batch ${r2(b)} ms (${r2(b / f)}x), ` +
          `raw neighSetMany ${r2(w)} ms (fibkeeper at ${r2(w / f)} of the raw ceiling); ` +
          `rounds ${got.fibkeeper.map(r2).join(', ')} / raw ${got.raw.map(r2).join(', ')} ms; ` +
          `agent resyncs so far ${JSON.stringify(ctx.resyncs)}`,
      );
      figures.push(
        figure({
          name: `converge_${n}`,
          value: f,
          unit: 'ms',
          reference: b,
          referenceName: 'ip -batch writing the same entries, same run',
          ratio: b / f,
          target: 4,
          targetKind: '>=',
          targetOf: 'ratio',
          note: `ratio = ip -batch time / fibkeeper time (medians of ${rounds} rounds). Here raw netlink itself is only ${r2(b / w)}x ip -batch, so 4x is below the kernel's own time for these writes`,
        }),
        figure({
          name: `converge_${n}_share_of_raw`,
          value: f,
          unit: 'ms',
          reference: w,
          referenceName: 'raw neighSetMany of the same entries (the raw-netlink ceiling), same run',
          ratio: w / f,
          target: 0.6,
          targetKind: '>=',
          targetOf: 'ratio',
          note: `ratio = raw time / fibkeeper time (medians of ${rounds} rounds): fibkeeper at least 0.6 of the raw-netlink speed`,
        }),
      );
    }
    const out = {
      benchmark: 'neighbor',
      kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
      date: new Date().toISOString(),
      arp: 'peer answers every ARP request (proxy ARP, proxy_delay 0); base_reachable_time 1 h on the bench device',
      figures,
      runs,
      latencyTimeouts: lat?.timeouts,
      latencyProbeLost: lat?.probeLost,
    };
    const file =
      outFile ?? (skipSteady ? undefined : join(root, 'bench', 'results', 'neighbor.json'));
    if (file !== undefined) {
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
    }
    for (const f of figures) {
      const verdict = f.pass === null ? '' : f.pass ? ' PASS' : ' MISS';
      console.log(
        `${f.name}: ${f.value} ${f.unit} (reference ${f.reference}, ratio ${f.ratio}, target ${f.target === null ? '-' : `${f.targetOf} ${f.targetKind} ${f.target}`})${verdict}`,
      );
    }
  } finally {
    nl?.close();
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The long runs, each its own script and results file. */
function longRuns() {
  const a = process.argv.slice(2);
  for (const [flag, script] of [
    ['--no-soak', 'soak.mjs'],
    ['--no-scale', 'scale.mjs'],
  ]) {
    if (a.includes(flag) || a.includes('--skip-steady')) continue;
    const r = spawnSync(process.execPath, [join(root, 'bench', 'neighbor', script)], {
      stdio: 'inherit',
    });
    if (r.status !== 0) process.exitCode = 1;
  }
}

main()
  .then(() => {
    if (!process.exitCode) longRuns();
  })
  .catch((err) => {
    console.error(`neighbor bench: ${err.stack ?? err}`);
    process.exitCode = 1;
  });
