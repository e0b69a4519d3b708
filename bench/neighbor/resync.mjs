#!/usr/bin/env node
// The whole agent's RSS through a periodic full resync (neighbor.resyncInterval: every next
// hop looked up again, the kernel's table dumped for the prune), which bench/neighbor/
// whole.mjs does not reach (it measures for ~60 s after the load; the default interval is 5
// minutes). `fibkeeper run` as whole.mjs runs it (API, state file, XDP, external IPs,
// metrics), with the resync interval shortened so that one falls after the load: N on-link
// forwardable IPs go through the bulk API; VmHWM is read just before the first resync (the
// load's peak) and 15 s after it (the peak through it), beside the idle agent's RSS.
//
// Usage: node bench/neighbor/resync.mjs [--sizes 100000,1000000] [--runs 3] [--out FILE]
// The interval: 30 s up to 100,000 IPs, 60 s above (the load must be over before it).
// Writes FILE (default bench/results/neighbor-resync.json; --out '' for none). Needs root
// and `make build`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { flagValue } from '../args.mjs';
import { r2, setup, sleep, sysctl } from './lab.mjs';
import { sendIps, startAgent } from './whole.mjs';

const argv = process.argv.slice(2);
const sizes = flagValue(argv, '--sizes', '100000').split(',').map(Number);
const runs = Number(flagValue(argv, '--runs', '3'));
const out = flagValue(argv, '--out', 'bench/results/neighbor-resync.json');

const mib = (kib) => r2(kib / 1024);
function status(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)[1]);
  return { hwm: mib(kib('VmHWM')), rss: mib(kib('VmRSS')) };
}

async function once(n) {
  const tag = Math.random().toString(16).slice(2, 8);
  const r = `fkt-rsy-r-${tag}`;
  const p = `fkt-rsy-p-${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fk-resync-'));
  const intervalS = n > 100_000 ? 60 : 30;
  let agent;
  try {
    setup(r, p, { reachableMs: null });
    sysctl(r, 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1');
    const t0 = Date.now();
    agent = await startAgent(dir, r, 'auto', { neighbor: [`resyncInterval: ${intervalS}s`] });
    await sleep(1000);
    const idle = status(agent.pid);
    await sendIps(agent, 'bench', n, 'stream');
    // The first resync is due intervalS after the agent started (its timer starts with it).
    await sleep(Math.max(0, t0 + (intervalS - 3) * 1000 - Date.now()));
    const load = status(agent.pid);
    await sleep(18_000);
    const resync = status(agent.pid);
    const row = {
      n,
      intervalS,
      idleMiB: idle.rss,
      loadPeakMiB: load.hwm,
      resyncPeakMiB: resync.hwm,
      afterMiB: resync.rss,
    };
    console.log(JSON.stringify(row));
    return row;
  } finally {
    await agent?.stop();
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
    spawnSync('umount', [join(dir, 'bpf')]);
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [];
for (const n of sizes) for (let i = 0; i < runs; i++) rows.push(await once(n));

const figures = [];
for (const n of sizes) {
  const mine = rows.filter((x) => x.n === n);
  const worst = (k) => Math.max(...mine.map((x) => x[k]));
  const idle = r2(mine.reduce((a, x) => a + x.idleMiB, 0) / mine.length);
  const target = n >= 1_000_000 ? 512 : n >= 100_000 ? 128 : null;
  for (const [what, k] of [
    ['load', 'loadPeakMiB'],
    ['resync', 'resyncPeakMiB'],
  ]) {
    const value = worst(k);
    figures.push({
      name: `rss_peak_${what}_${n}`,
      value,
      unit: 'MiB',
      reference: idle,
      referenceName: `the idle agent (mean of ${mine.length} runs); the figure is the highest of them`,
      ratio: r2(value / idle),
      target,
      targetKind: '<=',
      targetOf: 'value',
      targetMeaning: target === null ? null : 'value <=',
      pass: target === null ? null : value <= target,
    });
  }
}
if (out) {
  const res = {
    benchmark: 'neighbor-resync',
    kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString(),
    command: `node bench/neighbor/resync.mjs ${argv.join(' ')}`.trim(),
    figures,
    runs: rows,
  };
  writeFileSync(out, JSON.stringify(res, null, 1) + '\n');
}
