#!/usr/bin/env node
// CPU profile of the agent converging N on-link forwardable IPs (the convergence figure of
// bench/neighbor/run.mjs), with the self time summed per function and per part of the code.
// The agent child runs warm (one load and clear first); each round profiles exactly the
// timed part (setOwner() until the last entry is written), then clears.
//
// Usage: node bench/neighbor/profile.mjs [--n 100000] [--rounds 3] [--out DIR] [--top 30]
// Writes DIR/converge-N-K.cpuprofile (open in Chrome DevTools) and prints the breakdown.
// Needs root and `npx tsc -p tsconfig.build.json`.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BASE, check, DEV, quiet, r2, root, setup, spawnAgent, WARM_BASE } from './lab.mjs';
import { flagValue } from '../args.mjs';

function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => flagValue(a, name, def);
  return {
    n: Number(get('--n', '100000')),
    rounds: Number(get('--rounds', '3')),
    out: get('--out', join(root, 'bench', 'results', 'profile')),
    top: Number(get('--top', '30')),
  };
}

/** The part of the code a profile node belongs to. */
function partOf(node) {
  const { url, functionName } = node.callFrame;
  if (url === '') {
    if (functionName === '(garbage collector)') return 'gc';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'program (native, addon, libuv)';
    return `v8 builtin`;
  }
  const m = /\/dist\/([a-z]+)\/([a-z-]+)\.js$/.exec(url);
  if (m) return `${m[1]}/${m[2]}`;
  if (url.startsWith('node:')) return 'node internals';
  return url.split('/').slice(-2).join('/');
}

/** Self time per function and per part, in ms. */
function summarize(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (dt[i + 1] ?? 0) / 1000);
  }
  const fns = new Map();
  const parts = new Map();
  let total = 0;
  for (const [id, ms] of self) {
    const n = byId.get(id);
    const cf = n.callFrame;
    const part = partOf(n);
    const fn = `${cf.functionName || '(anonymous)'} ${part}:${cf.lineNumber + 1}`;
    fns.set(fn, (fns.get(fn) ?? 0) + ms);
    parts.set(part, (parts.get(part) ?? 0) + ms);
    total += ms;
  }
  return { fns, parts, total };
}

function merge(into, from) {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
}

function print(title, map, total, rounds, top) {
  console.log(`\n${title} (ms per round, share of the profiled time)`);
  const rows = [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [k, v] of rows) {
    console.log(
      `${r2(v / rounds)
        .toFixed(1)
        .padStart(9)}  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`,
    );
  }
}

async function main() {
  const { n, rounds, out, top } = args();
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mod = await import(join(root, 'dist', 'netlink', 'index.js'));
  const tag = randomBytes(3).toString('hex');
  const r = `fkt-nbp-r-${tag}`;
  const p = `fkt-nbp-p-${tag}`;
  mkdirSync(out, { recursive: true });
  let nl;
  let agent;
  try {
    setup(r, p);
    nl = mod.NetlinkHandle.open({ netns: r });
    const ifindex = await nl.ifindex(DEV);
    agent = await spawnAgent(r);
    await agent.call('start', {});
    await agent.call('load', { owner: 'warmup', base: WARM_BASE, count: n });
    await agent.call('clear', { owner: 'warmup' });
    await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
    const fns = new Map();
    const parts = new Map();
    let total = 0;
    const times = [];
    for (let k = 0; k < rounds; k++) {
      const file = join(out, `converge-${n}-${k}.cpuprofile`);
      await agent.call('profileStart', {});
      const res = await agent.call('load', { owner: 'bench', base: BASE, count: n });
      await agent.call('profileStop', { file });
      times.push(res.ms);
      await check(nl, ifindex, n);
      await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
      await agent.call('clear', { owner: 'bench' });
      await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
      const s = summarize(JSON.parse(readFileSync(file, 'utf8')));
      merge(fns, s.fns);
      merge(parts, s.parts);
      total += s.total;
    }
    console.log(`converge N=${n}: ${times.map(r2).join(', ')} ms (profiler on)`);
    print('self time by part', parts, total, rounds, top);
    print('self time by function', fns, total, rounds, top);
  } finally {
    await agent?.stop();
    nl?.close();
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
  }
}

main().catch((err) => {
  console.error(`neighbor profile: ${err.stack ?? err}`);
  process.exitCode = 1;
});
