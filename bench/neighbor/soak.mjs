#!/usr/bin/env node
// Steady state of the neighbor subsystem at scale: N on-link next hops on one device, the
// peer answering every ARP request (proxy ARP, proxy_delay 0), the kernel's default neighbor
// parameters on the device (base_reachable_time 30 s, delay_first_probe_time 5 s, 3 unicast
// and 3 broadcast probes), for a fixed time after convergence. Every `--sample` ms it
// records, from this driver's own view of the kernel:
//   - the usable share: entries with fibkeeper's mark in REACHABLE, STALE, DELAY or PROBE
//     with a link-layer address, over N (a missing entry counts as unusable);
//   - the NUD states of the marked entries;
//   - frames on the wire per second in each direction (R's device tx = ARP requests,
//     rx = replies; nothing else runs in the lab) and frames dropped on either veth end;
//   - the agent's RSS (/proc/PID/status VmRSS) and its refresh/re-insert counters.
// One run per mode (--modes managed,legacy,auto), one after the other, each in a fresh lab.
//
// Usage: node bench/neighbor/soak.mjs [--n 100000] [--seconds 600] [--modes managed,legacy,auto]
//          [--rate-limit 1000] [--sample 2000] [--out FILE] [--tuning JSON]
// Writes FILE (default bench/results/neighbor-soak.json): { figures, series: { MODE: [...] } }.
// Needs root and `npx tsc -p tsconfig.build.json`.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BASE, DEV, PROTO, quiet, r2, root, setup, sleep, spawnAgent } from './lab.mjs';
import { flagValue } from '../args.mjs';

function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => flagValue(a, name, def);
  return {
    n: Number(get('--n', '100000')),
    seconds: Number(get('--seconds', '600')),
    modes: get('--modes', 'managed,legacy,auto').split(','),
    rateLimit: Number(get('--rate-limit', '1000')),
    sampleMs: Number(get('--sample', '2000')),
    out: get('--out', join(root, 'bench', 'results', 'neighbor-soak.json')),
    tuning: JSON.parse(get('--tuning', '{}')),
  };
}

/** Packet counters of one device in a namespace (`ip -s -j link`). */
function linkStats(ns, dev) {
  const out = execFileSync('ip', ['-n', ns, '-s', '-j', 'link', 'show', 'dev', dev], {
    encoding: 'utf8',
  });
  const s = JSON.parse(out)[0].stats64;
  return {
    tx: s.tx.packets,
    rx: s.rx.packets,
    drops: s.tx.dropped + s.rx.dropped + (s.rx.missed ?? 0),
  };
}

function rssOf(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const USABLE_STATES = ['REACHABLE', 'STALE', 'DELAY', 'PROBE'];

/** Marked entries by state, and how many are usable, from one dump. */
async function census(nl, ifindex, mod) {
  const states = {};
  let usable = 0;
  for (const e of await nl.neighList({ ifindex })) {
    if (e.protocol !== PROTO) continue;
    const name = mod.nudStateNames(e.state)[0] ?? 'NONE';
    states[name] = (states[name] ?? 0) + 1;
    if (USABLE_STATES.includes(name) && e.lladdr !== undefined) usable++;
  }
  return { states, usable };
}

async function soak(mod, opts, mode) {
  const tag = randomBytes(3).toString('hex');
  const r = `fkt-nbs-r-${tag}`;
  const p = `fkt-nbs-p-${tag}`;
  let nl;
  let agent;
  try {
    setup(r, p, { reachableMs: null });
    nl = mod.NetlinkHandle.open({ netns: r });
    const ifindex = await nl.ifindex(DEV);
    agent = await spawnAgent(r);
    const started = await agent.call('start', {
      tuning: opts.tuning,
      config: { refresh: mode, rateLimit: opts.rateLimit },
    });
    const t0 = performance.now();
    const load = await agent.call('load', { owner: 'soak', base: BASE, count: opts.n });
    await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
    console.log(
      `[${mode}] ${opts.n} loaded in ${r2(load.ms)} ms, resolved after ${r2((performance.now() - t0) / 1000)} s`,
    );
    const series = [];
    const first = { r: linkStats(r, DEV), p: linkStats(p, 'fkp0'), t: performance.now() };
    let prev = first;
    const end = performance.now() + opts.seconds * 1000;
    while (performance.now() < end) {
      await sleep(opts.sampleMs);
      const now = { r: linkStats(r, DEV), p: linkStats(p, 'fkp0'), t: performance.now() };
      const dt = (now.t - prev.t) / 1000;
      const c = await census(nl, ifindex, mod);
      const st = await agent.call('status');
      const s = {
        t: r2((now.t - first.t) / 1000),
        usable: c.usable / opts.n,
        states: c.states,
        requestsPerS: r2((now.r.tx - prev.r.tx) / dt),
        repliesPerS: r2((now.r.rx - prev.r.rx) / dt),
        dropsPerS: r2((now.r.drops + now.p.drops - prev.r.drops - prev.p.drops) / dt),
        rssMiB: r2(rssOf(agent.pid)),
        mode: st.mode,
        refreshes: st.counters.refreshes,
        reinserts: st.counters.reinserts,
        rateLimited: st.counters.rateLimited,
      };
      series.push(s);
      prev = now;
      console.log(
        `[${mode}] t=${s.t}s usable ${(s.usable * 100).toFixed(3)}% ${JSON.stringify(s.states)} ` +
          `req/s ${s.requestsPerS} rep/s ${s.repliesPerS} drops/s ${s.dropsPerS} rss ${s.rssMiB} MiB ` +
          `refreshes ${s.refreshes} reinserts ${JSON.stringify(s.reinserts)}`,
      );
    }
    const mem = await agent.call('rss');
    // The path the run ended on (auto switches once the table is loaded).
    const running = series.at(-1)?.mode ?? started.mode;
    return { series, maxRssMiB: mem.maxRss / 2 ** 20, converge: load.ms, running };
  } finally {
    await agent?.stop().catch(() => undefined);
    nl?.close();
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
  }
}

function summarize(mode, run, opts) {
  const xs = run.series;
  const usable = xs.map((s) => s.usable);
  const req = xs.map((s) => s.requestsPerS);
  const frames = xs.map((s) => s.requestsPerS + s.repliesPerS);
  const drops = xs.reduce((a, s) => a + s.dropsPerS * (opts.sampleMs / 1000), 0);
  const mean = (a) => a.reduce((x, y) => x + y, 0) / Math.max(1, a.length);
  const bound = 3 * opts.rateLimit;
  const fig = (name, value, unit, target, kind, note) => ({
    name: `soak_${mode}_${name}`,
    value: r2(value),
    unit,
    reference: opts.rateLimit,
    referenceName: 'neighbor.rateLimit of the run (per second)',
    ratio: r2(value / opts.rateLimit),
    target,
    targetKind: target === null ? null : kind,
    targetOf: target === null ? null : 'value',
    targetMeaning: target === null ? null : `value ${kind === '>=' ? 'at least' : 'at most'}`,
    pass: target === null ? null : kind === '>=' ? value >= target : value <= target,
    note,
  });
  return [
    fig(
      'usable_min_pct',
      Math.min(...usable) * 100,
      '%',
      99.9,
      '>=',
      `lowest usable share of ${opts.n} entries over ${opts.seconds} s (samples every ${opts.sampleMs} ms), running ${run.running}`,
    ),
    fig('usable_mean_pct', mean(usable) * 100, '%', null, '>=', 'mean usable share'),
    fig(
      'requests_per_s_max',
      Math.max(...req),
      'frames/s',
      bound,
      '<=',
      `highest ARP request rate from the agent's device over one sample; documented bound 3 × rateLimit = ${bound}/s`,
    ),
    fig('requests_per_s_mean', mean(req), 'frames/s', null, '<=', 'mean ARP request rate'),
    fig('frames_per_s_mean', mean(frames), 'frames/s', null, '<=', 'requests + replies'),
    fig('drops_total', drops, 'frames', null, '<=', 'frames dropped on either veth end'),
    fig(
      'rss_max',
      Math.max(...xs.map((s) => s.rssMiB)),
      'MiB',
      250,
      '<=',
      'agent RSS, highest sample',
    ),
  ];
}

async function main() {
  const opts = args();
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mod = await import(join(root, 'dist', 'netlink', 'index.js')).catch((err) => {
    throw new Error(`cannot load dist/netlink (npx tsc -p tsconfig.build.json): ${err.message}`);
  });
  const figures = [];
  const series = {};
  const runs = {};
  for (const mode of opts.modes) {
    const run = await soak(mod, opts, mode);
    series[mode] = run.series;
    runs[mode] = {
      running: run.running,
      convergeMs: r2(run.converge),
      maxRssMiB: r2(run.maxRssMiB),
    };
    figures.push(...summarize(mode, run, opts));
  }
  const out = {
    benchmark: 'neighbor-soak',
    kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString(),
    command: `node bench/neighbor/soak.mjs ${process.argv.slice(2).join(' ')}`.trim(),
    n: opts.n,
    seconds: opts.seconds,
    rateLimit: opts.rateLimit,
    sampleMs: opts.sampleMs,
    figures,
    runs,
    series,
  };
  mkdirSync(join(opts.out, '..'), { recursive: true });
  writeFileSync(opts.out, JSON.stringify(out, null, 1) + '\n');
  for (const f of figures) {
    const verdict = f.pass === null ? '' : f.pass ? ' PASS' : ' MISS';
    console.log(
      `${f.name}: ${f.value} ${f.unit}${f.target === null ? '' : ` (target ${f.targetKind} ${f.target})`}${verdict}`,
    );
  }
}

main().catch((err) => {
  console.error(`neighbor soak: ${err.stack ?? err}`);
  process.exitCode = 1;
});
