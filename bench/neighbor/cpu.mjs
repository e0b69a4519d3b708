#!/usr/bin/env node
// Where the convergence time goes: wall time against the CPU time (user and system, from
// /proc) of the process doing the work, for the raw writer (this driver, agent paused) and
// for fibkeeper (the agent), at N, per round; plus the agent's resync counters. Each side's
// time is split by thread: the JS thread, the netlink send thread (fk-netlink-send: the
// kernel's work inside sendmsg) and the rest (V8's GC helpers).
// Usage: node bench/neighbor/cpu.mjs [--n 100000] [--rounds 3] [--tuning JSON]
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BASE,
  DEV,
  PROTO,
  check,
  clear,
  ipOf,
  quiet,
  r2,
  root,
  setup,
  sleep,
  spawnAgent,
  WARM_BASE,
} from './lab.mjs';
import { flagValue } from '../args.mjs';

const a = process.argv.slice(2);
const get = (name, def) => flagValue(a, name, def);
const n = Number(get('--n', '100000'));
const rounds = Number(get('--rounds', '3'));
const tuning = JSON.parse(get('--tuning', '{}'));
const hz = 100;

/** utime and stime of one /proc stat file, ms. */
function times(path) {
  const f = readFileSync(path, 'utf8');
  const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(x[11]) * 1000) / hz, sys: (Number(x[12]) * 1000) / hz };
}

/** utime and stime of a process (all threads), ms, and of its threads by role. */
function cpu(pid) {
  const byRole = { js: { user: 0, sys: 0 }, send: { user: 0, sys: 0 }, rest: { user: 0, sys: 0 } };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let t;
    let comm;
    try {
      t = times(`/proc/${pid}/task/${tid}/stat`);
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // the thread ended meanwhile
    }
    const role = tid === String(pid) ? 'js' : comm === 'fk-netlink-send' ? 'send' : 'rest';
    byRole[role].user += t.user;
    byRole[role].sys += t.sys;
  }
  return { ...times(`/proc/${pid}/stat`), byRole };
}

/** "JS thread u/s, send thread u/s, rest u/s" of the CPU between two cpu() readings. */
function split(c0, c1) {
  const part = (k) => {
    const u = c1.byRole[k].user - c0.byRole[k].user;
    const sy = c1.byRole[k].sys - c0.byRole[k].sys;
    return `${u}/${sy}`;
  };
  return `JS thread ${part('js')}, send thread ${part('send')}, rest ${part('rest')} (user/sys ms)`;
}

const mod = await import(join(root, 'dist', 'netlink', 'index.js'));
const tag = randomBytes(3).toString('hex');
const r = `fkt-nbc-r-${tag}`;
const p = `fkt-nbc-p-${tag}`;
let nl;
let agent;
try {
  setup(r, p);
  nl = mod.NetlinkHandle.open({ netns: r });
  const ifindex = await nl.ifindex(DEV);
  agent = await spawnAgent(r);
  await agent.call('start', { tuning });
  await agent.call('load', { owner: 'warmup', base: WARM_BASE, count: Math.min(n, 100000) });
  await agent.call('clear', { owner: 'warmup' });
  await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
  const legacy = n > 1000;
  const specs = Array.from({ length: n }, (_, i) =>
    legacy
      ? {
          ifindex,
          dst: ipOf(BASE + i),
          state: 0,
          externLearned: true,
          protocol: PROTO,
          flags: mod.NTF_USE,
        }
      : {
          ifindex,
          dst: ipOf(BASE + i),
          state: 0,
          externLearned: true,
          protocol: PROTO,
          managed: true,
        },
  );
  for (let k = 0; k < rounds; k++) {
    agent.pause();
    const c0 = cpu(process.pid);
    const t0 = performance.now();
    await nl.neighSetMany(specs);
    const raw = performance.now() - t0;
    const c1 = cpu(process.pid);
    await check(nl, ifindex, n);
    for (let i = 0; i < 3; i++) await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
    await clear(nl, ifindex);
    agent.resume();
    await sleep(1000);
    await agent.call('settle');
    const k0 = (await agent.call('status')).counters;
    const before = k0.resyncs;
    const a0 = cpu(agent.pid);
    const res = await agent.call('load', { owner: 'bench', base: BASE, count: n });
    const a1 = cpu(agent.pid);
    await check(nl, ifindex, n);
    for (let i = 0; i < 3; i++) await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
    const k1 = (await agent.call('status')).counters;
    const after = k1.resyncs;
    const delta = {};
    for (const [k, v] of Object.entries(k1)) {
      if (typeof v === 'number' && v !== k0[k]) delta[k] = v - k0[k];
      if (typeof v === 'object' && JSON.stringify(v) !== JSON.stringify(k0[k])) delta[k] = v;
    }
    console.log(`  counters changed: ${JSON.stringify(delta)}`);
    await agent.call('clear', { owner: 'bench' });
    await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
    const over = (after['neighbors/overflow'] ?? 0) - (before['neighbors/overflow'] ?? 0);
    console.log(
      `N=${n} round ${k}: raw ${r2(raw)} ms (user ${c1.user - c0.user}, sys ${c1.sys - c0.sys}); ` +
        `fibkeeper ${r2(res.ms)} ms (user ${a1.user - a0.user}, sys ${a1.sys - a0.sys}); ` +
        `ratio ${r2(res.ms / raw)}x raw, share ${r2(raw / res.ms)}; overflows during load+resolution ${over}`,
    );
    console.log(`  raw: ${split(c0, c1)}`);
    console.log(`  fibkeeper: ${split(a0, a1)}`);
  }
} finally {
  await agent?.stop();
  nl?.close();
  for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
}
