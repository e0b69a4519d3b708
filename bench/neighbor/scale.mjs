#!/usr/bin/env node
// The neighbor subsystem at 1,000,000 forwardable IPs on one node (one device, each IP its own
// next hop: 1,000,000 neighbor entries, extern_learn, so gc_thresh3 does not apply), the peer
// answering every ARP request (proxy ARP). In one run:
//   1. converge: every entry written, from empty, against the raw-netlink writer in the same
//      run (neighSetMany of exactly the entries fibkeeper writes: the same flags);
//   2. the agent's RSS with 1,000,000 loaded (steady, after the resolution traffic);
//   3. latency from a route change to the new gateway's entry, and from `ip neigh del` of an
//      entry to its re-insertion, with 1,000,000 loaded (reference: the driver's own write);
//      (and once, right after the load: the first route change, which moves 255 loaded IPs)
//   4. `fibkeeper status` (the status document the API serves, limit 1000) latency;
//   5. (--fresh-seconds S) stay fresh: the usable share of the entries with the kernel's
//      default reachable time, sampled every --sample ms for S seconds.
// The device keeps the kernel's reachable time (30 s) throughout: the latencies and the
// status are measured while the entries go STALE and are refreshed, as on a loaded node.
//
// Usage: node bench/neighbor/scale.mjs [--n 1000000] [--iterations 300] [--fresh-seconds 300]
//          [--sample 15000] [--out FILE]
// Writes FILE (default bench/results/neighbor-scale.json). Needs root and `make build`.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BASE,
  DEV,
  GW_BASE,
  PROTO,
  check,
  clear,
  ipOf,
  latencies,
  latencyProbe,
  pct,
  PROBE_TIMEOUT_MS,
  quiet,
  r2,
  root,
  setup,
  sleep,
  spawnAgent,
  WARM_BASE,
} from './lab.mjs';
import { flagValue } from '../args.mjs';

function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => flagValue(a, name, def);
  return {
    n: Number(get('--n', '1000000')),
    iterations: Number(get('--iterations', '300')),
    freshSeconds: Number(get('--fresh-seconds', '300')),
    sampleMs: Number(get('--sample', '15000')),
    out: get('--out', join(root, 'bench', 'results', 'neighbor-scale.json')),
  };
}

function rssOf(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function figure(f) {
  const judged = f.targetOf === 'ratio' ? f.ratio : f.value;
  const pass =
    f.target === null ? null : f.targetKind === '>=' ? judged >= f.target : judged <= f.target;
  return {
    name: f.name,
    value: r2(f.value),
    unit: f.unit,
    reference: f.reference === null ? null : r2(f.reference),
    referenceName: f.referenceName,
    ratio: f.ratio === null ? null : r2(f.ratio),
    target: f.target,
    targetKind: f.target === null ? null : f.targetKind,
    targetOf: f.target === null ? null : f.targetOf,
    targetMeaning:
      f.target === null ? null : `${f.targetOf} ${f.targetKind === '>=' ? 'at least' : 'at most'}`,
    pass,
    note: f.note,
  };
}

/** The entries fibkeeper writes in `mode`, for the raw writer. */
function specs(mod, ifindex, n, mode) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const dst = ipOf(BASE + i);
    out[i] =
      mode === 'managed'
        ? { ifindex, dst, state: 0, externLearned: true, protocol: PROTO, managed: true }
        : { ifindex, dst, state: 0, externLearned: true, protocol: PROTO, flags: mod.NTF_USE };
  }
  return out;
}

async function waitQuiet(nl, ifindex, mod) {
  // The resolution of a million entries takes a while; quiet() waits up to 20 s per call.
  for (let i = 0; i < 15; i++) await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
}

async function main() {
  const opts = args();
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mod = await import(join(root, 'dist', 'netlink', 'index.js'));
  const tag = randomBytes(3).toString('hex');
  const r = `fkt-nbx-r-${tag}`;
  const p = `fkt-nbx-p-${tag}`;
  const figures = [];
  const fresh = [];
  let nl;
  let agent;
  try {
    setup(r, p, { reachableMs: null });
    nl = mod.NetlinkHandle.open({ netns: r });
    const ifindex = await nl.ifindex(DEV);
    const ctx = { nl, ifindex, r, mod };
    agent = await spawnAgent(r);
    const started = await agent.call('start', {});
    const idle = started.rss / 2 ** 20;
    // Warm up (as a long-running agent is) with a tenth of the table, then clear.
    await agent.call('load', { owner: 'warmup', base: WARM_BASE, count: opts.n / 10 });
    await agent.call('clear', { owner: 'warmup' });
    // 1. The raw writer (agent paused), then fibkeeper. The raw side writes the entries with
    // the flags fibkeeper will use: neighbor.refresh auto runs the legacy path above
    // neighbor.rateLimit (1000 in agent.mjs) entries.
    const rawMode = opts.n > 1000 ? 'legacy' : 'managed';
    const list = specs(mod, ifindex, opts.n, rawMode);
    agent.pause();
    let rawMs;
    try {
      const t0 = performance.now();
      const out = await nl.neighSetMany(list);
      rawMs = performance.now() - t0;
      if (out.failures.length > 0) throw new Error(`raw: ${out.failures[0].error.message}`);
      await check(nl, ifindex, opts.n);
      await waitQuiet(nl, ifindex, mod);
      await clear(nl, ifindex);
    } finally {
      agent.resume();
    }
    await sleep(1000);
    await agent.call('settle');
    const before = (await agent.call('status')).counters.resyncs;
    const load = await agent.call('load', { owner: 'bench', base: BASE, count: opts.n });
    const loadedAt = performance.now();
    const during = Object.entries(load.counters.resyncs)
      .filter(([k, v]) => v !== (before[k] ?? 0))
      .map(([k, v]) => `${k} +${v - (before[k] ?? 0)}`);
    await check(nl, ifindex, opts.n);
    const mode1m = (await agent.call('status')).mode;
    if (mode1m !== rawMode)
      throw new Error(`the agent runs ${mode1m}, the raw side wrote ${rawMode}`);
    console.log(
      `converge ${opts.n}: fibkeeper ${r2(load.ms)} ms (${mode1m}), raw neighSetMany ${r2(rawMs)} ms (${r2(load.ms / rawMs)}x raw); resyncs during the load: ${during.join(', ') || 'none'}`,
    );
    figures.push(
      figure({
        name: `converge_${opts.n}`,
        value: load.ms,
        unit: 'ms',
        reference: rawMs,
        referenceName: `raw neighSetMany of the same ${opts.n} entries (${mode1m} flags), same run`,
        ratio: load.ms / rawMs,
        target: 2,
        targetKind: '<=',
        targetOf: 'ratio',
        note: 'ratio = fibkeeper time / raw time: at most twice the raw-netlink writer',
      }),
    );
    // 2b. The first route change right after the load: 255 of the loaded IPs move to a new
    // gateway (the range index answers its first query since the million adds).
    {
      const probe = await latencyProbe(ctx);
      const gw = ipOf(GW_BASE + 0xfff0);
      const dst = `${ipOf(BASE).split('.').slice(0, 3).join('.')}.0/24`;
      const ms = await probe.measure(gw, () => nl.routeReplace({ dst, gateway: gw }));
      probe.close();
      await nl.routeDel({ dst });
      console.log(`first route change after the load: ${r2(ms)} ms`);
      figures.push(
        figure({
          name: `route_change_after_load_${opts.n}`,
          value: ms,
          unit: 'ms',
          reference: null,
          referenceName: 'the first route change after the load, one sample',
          ratio: null,
          target: null,
          targetKind: '<=',
          targetOf: 'value',
          note: `route ${dst} via ${gw} right after the load, until the gateway's entry is written (255 loaded IPs move to it)`,
        }),
      );
    }
    await waitQuiet(nl, ifindex, mod);
    await agent.call('settle');
    // 3. Latencies with the table loaded.
    const lat = await latencies(ctx, agent, opts.iterations, opts.n);
    for (const x of lat.slow) {
      console.log(
        `slow ${x.kind} sample: ${r2(x.ms)} ms, ${r2((x.at - performance.timeOrigin - loadedAt) / 1000)} s after the load (agent's ${Math.round(x.at - started.timeOrigin)} ms)`,
      );
    }
    for (const [name, xs] of [
      ['route_change_to_entry', lat.route],
      ['neigh_del_to_reinsert', lat.reinsert],
    ]) {
      const key = name === 'route_change_to_entry' ? 'route' : 'reinsert';
      for (const q of [50, 99]) {
        const v = pct(xs, q);
        const ref = pct(lat.floor, q);
        figures.push(
          figure({
            name: `${name}_p${q}_${opts.n}`,
            value: v,
            unit: 'ms',
            reference: ref,
            referenceName: `the driver's own neighSet to its event (p${q}), same run`,
            ratio: v / ref,
            target: q === 99 && key === 'route' ? 5 : null,
            targetKind: '<=',
            targetOf: 'value',
            note: `p${q} of ${xs.length} samples with ${opts.n} loaded (${lat.timeouts[key]} timed out after ${PROBE_TIMEOUT_MS} ms, counted as the worst; ${lat.probeLost[key]} lost to the probe's own socket overflow, left out)`,
          }),
        );
      }
      const worst = [...xs]
        .sort((x, y) => y - x)
        .slice(0, 5)
        .map(r2);
      console.log(
        `${name}: p50 ${r2(pct(xs, 50))} ms, p99 ${r2(pct(xs, 99))} ms (n=${xs.length}; worst ${worst.join(', ')} ms)`,
      );
    }
    // The entries written within the same ~2 s go STALE in one tick, ~20 s after the load:
    // an overflow of the agent's event socket then (a dump of the whole table) is what
    // delayed route changes by up to a second (docs/neighbor.md, "The STALE wave").
    const overflowsOf = (resyncs) => resyncs['neighbors/overflow'] ?? 0;
    const latOverflows =
      overflowsOf((await agent.call('status')).counters.resyncs) -
      overflowsOf(load.counters.resyncs);
    const latSeconds = (performance.now() - loadedAt) / 1000;
    figures.push(
      figure({
        name: `event_overflows_after_load_${opts.n}`,
        value: latOverflows,
        unit: 'count',
        reference: null,
        referenceName: null,
        ratio: null,
        target: 0,
        targetKind: '<=',
        targetOf: 'value',
        note: `overflows of the agent's neighbor-event socket from the load's end through the latencies (${r2(latSeconds)} s, the STALE wave included)`,
      }),
    );
    console.log(
      `neighbor-event overflows in the ${r2(latSeconds)} s after the load: ${latOverflows}`,
    );
    // 4. Status.
    const times = [];
    for (let k = 0; k < 20; k++) {
      times.push((await agent.call('statusTimed', { limit: 1000 })).ms);
      await sleep(100);
    }
    for (const q of [50, 99]) {
      figures.push(
        figure({
          name: `status_p${q}_${opts.n}`,
          value: pct(times, q),
          unit: 'ms',
          reference: null,
          referenceName:
            'the status document the API serves (limit 1000), built and serialized in the agent',
          ratio: null,
          target: null,
          targetKind: '<=',
          targetOf: 'value',
          note: `p${q} of ${times.length} calls with ${opts.n} loaded`,
        }),
      );
    }
    console.log(`status: p50 ${r2(pct(times, 50))} ms, p99 ${r2(pct(times, 99))} ms`);
    // 2. RSS, after the resolution traffic and the latency runs.
    await sleep(10_000);
    const mem = await agent.call('rss');
    const rss = mem.rss / 2 ** 20;
    figures.push(
      figure({
        name: `agent_rss_${opts.n}`,
        value: rss,
        unit: 'MiB',
        reference: idle,
        referenceName: 'the idle agent (started, nothing loaded)',
        ratio: rss / idle,
        target: 1024,
        targetKind: '<=',
        targetOf: 'value',
        note: `steady RSS with ${opts.n} loaded, 10 s after the last activity`,
      }),
      figure({
        name: `agent_rss_peak_${opts.n}`,
        value: mem.maxRss / 2 ** 20,
        unit: 'MiB',
        reference: idle,
        referenceName: 'the idle agent (started, nothing loaded)',
        ratio: mem.maxRss / 2 ** 20 / idle,
        target: 1024,
        targetKind: '<=',
        targetOf: 'value',
        note: 'peak RSS (getrusage maxrss) over the whole run',
      }),
    );
    console.log(`RSS ${r2(rss)} MiB, peak ${r2(mem.maxRss / 2 ** 20)} MiB (idle ${r2(idle)})`);
    // 5. Stay fresh with the kernel's reachable time.
    if (opts.freshSeconds > 0) {
      const end = performance.now() + opts.freshSeconds * 1000;
      const t0 = performance.now();
      while (performance.now() < end) {
        await sleep(opts.sampleMs);
        let usable = 0;
        const states = {};
        for (const e of await nl.neighList({ ifindex })) {
          if (e.protocol !== PROTO) continue;
          const s = mod.nudStateNames(e.state)[0] ?? 'NONE';
          states[s] = (states[s] ?? 0) + 1;
          if (['REACHABLE', 'STALE', 'DELAY', 'PROBE'].includes(s) && e.lladdr) usable++;
        }
        const sample = {
          t: r2((performance.now() - t0) / 1000),
          usable: usable / opts.n,
          states,
          rssMiB: r2(rssOf(agent.pid)),
        };
        fresh.push(sample);
        console.log(
          `fresh t=${sample.t}s usable ${(sample.usable * 100).toFixed(3)}% ${JSON.stringify(states)} rss ${sample.rssMiB} MiB`,
        );
      }
      const min = Math.min(...fresh.map((s) => s.usable)) * 100;
      figures.push(
        figure({
          name: `fresh_usable_min_pct_${opts.n}`,
          value: min,
          unit: '%',
          reference: null,
          referenceName: `lowest usable share over ${opts.freshSeconds} s, reachable time 30 s`,
          ratio: null,
          target: 99.9,
          targetKind: '>=',
          targetOf: 'value',
          note: `samples every ${opts.sampleMs} ms`,
        }),
        figure({
          name: `fresh_rss_max_${opts.n}`,
          value: Math.max(...fresh.map((s) => s.rssMiB)),
          unit: 'MiB',
          reference: idle,
          referenceName: 'the idle agent',
          ratio: Math.max(...fresh.map((s) => s.rssMiB)) / idle,
          target: 1024,
          targetKind: '<=',
          targetOf: 'value',
          note: 'highest RSS sample while refreshing',
        }),
      );
    }
    const st = await agent.call('status');
    console.log(`agent: ${JSON.stringify(st.counters)}`);
    const out = {
      benchmark: 'neighbor-scale',
      kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
      date: new Date().toISOString(),
      command: `node bench/neighbor/scale.mjs ${process.argv.slice(2).join(' ')}`.trim(),
      n: opts.n,
      mode: mode1m,
      figures,
      statusMs: times.map(r2),
      fresh,
      counters: st.counters,
    };
    mkdirSync(join(opts.out, '..'), { recursive: true });
    writeFileSync(opts.out, JSON.stringify(out, null, 1) + '\n');
    for (const f of figures) {
      const verdict = f.pass === null ? '' : f.pass ? ' PASS' : ' MISS';
      console.log(
        `${f.name}: ${f.value} ${f.unit} (reference ${f.reference}, ratio ${f.ratio})${verdict}`,
      );
    }
  } finally {
    await agent?.stop().catch(() => undefined);
    nl?.close();
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
  }
}

main().catch((err) => {
  console.error(`neighbor scale: ${err.stack ?? err}`);
  process.exitCode = 1;
});
