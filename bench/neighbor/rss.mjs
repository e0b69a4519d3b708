#!/usr/bin/env node
// Where the whole agent's RSS goes: starts `fibkeeper run` as bench/neighbor/whole.mjs does
// (API, state file, XDP, extip, metrics) in a namespace of its own, prints its RSS (anon and
// file-backed, /proc/PID/status) when idle and its largest mappings (smaps), then loads N
// forwardable IPs through the bulk API and prints the RSS 3 s later with the mappings again.
// FKB_AGENT_FLAGS adds node flags to the agent (e.g. --heapsnapshot-signal=SIGUSR2, with
// SNAP=1 to take a heap snapshot idle and after the load, written to the working directory);
// XDP=off runs it without XDP; the environment is the agent's (glibc tunables, …).
//
// Usage: node bench/neighbor/rss.mjs [N]      (default 100000; 0: idle only). Needs root.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup, sleep, sysctl } from './lab.mjs';
import { sendIps, startAgent } from './whole.mjs';

const n = Number(process.argv[2] ?? 100_000);
const tag = Math.random().toString(16).slice(2, 8);
const r = `fkt-rss-r-${tag}`;
const p = `fkt-rss-p-${tag}`;
const dir = mkdtempSync(join(tmpdir(), 'fk-rss-'));

function status(pid, label) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const f = s.match(/(VmHWM|VmRSS|RssAnon|RssFile):.*/g).map((x) => x.replace(/\s+/g, ' '));
  console.log(`${label}: ${f.join(', ')}`);
}

function mappings(pid, top = 12) {
  const rss = new Map();
  let name;
  for (const l of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(l);
    if (m) name = m[1] || '[anon]';
    const q = /^Rss:\s+(\d+)/.exec(l);
    if (q) rss.set(name, (rss.get(name) ?? 0) + Number(q[1]));
  }
  for (const [k, v] of [...rss].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`  ${String(v).padStart(8)} kB ${k}`);
  }
}

let agent;
try {
  setup(r, p, { reachableMs: null });
  sysctl(r, 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1');
  agent = await startAgent(dir, r, process.env.MODE ?? 'auto', { xdp: process.env.XDP !== 'off' });
  await sleep(1500);
  status(agent.pid, 'idle');
  mappings(agent.pid);
  if (process.env.SNAP) (process.kill(agent.pid, 'SIGUSR2'), await sleep(8000));
  if (n > 0) {
    await sendIps(agent, 'bench', n, 'stream');
    await sleep(3000);
    status(agent.pid, `${n} loaded`);
    mappings(agent.pid);
    if (process.env.SNAP) (process.kill(agent.pid, 'SIGUSR2'), await sleep(15000));
  }
} finally {
  await agent?.stop();
  for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
  spawnSync('umount', [join(dir, 'bpf')]);
  rmSync(dir, { recursive: true, force: true });
}
