#!/usr/bin/env node
// What the kernel does with N managed entries (NTF_MANAGED, extern_learn) and nobody else:
// `ip -batch` writes them once, then every second for S seconds the driver counts their
// states (usable: REACHABLE/STALE/DELAY/PROBE with an address), the ARP requests the peer
// received in that second (its fkp0 rx packets) and the packets the machine's backlogs
// dropped (/proc/net/softnet_stat, column 2, all CPUs: read-only, host-wide). The kernel
// re-probes every managed entry that is STALE in one pass of its managed work (every
// interval_probe_time_ms, 5 s), so entries confirmed together (a bulk write) are probed
// together: the bursts and the usable share show whether managed mode can hold N entries
// usable on this path. Every entry is extern_learn (none counts against gc_thresh3).
//
// Usage: node bench/neighbor/managed-burst.mjs [--n 100000] [--seconds 75] [--out FILE]
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flagValue } from '../args.mjs';
import { BASE, DEV, PROTO, clear, ip, ipOf, r2, root, setup, sleep } from './lab.mjs';

const argv = process.argv.slice(2);
const n = Number(flagValue(argv, '--n', '100000'));
const seconds = Number(flagValue(argv, '--seconds', '75'));
const out = flagValue(argv, '--out', '');

const softnetDrops = () =>
  readFileSync('/proc/net/softnet_stat', 'utf8')
    .trim()
    .split('\n')
    .reduce((s, l) => s + parseInt(l.trim().split(/\s+/)[1], 16), 0);

function rxPackets(ns, dev) {
  const r = spawnSync('ip', ['-n', ns, '-j', '-s', 'link', 'show', dev], { encoding: 'utf8' });
  return JSON.parse(r.stdout)[0].stats64.rx.packets;
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mod = await import(join(root, 'dist', 'netlink', 'index.js'));
  const tag = randomBytes(3).toString('hex');
  const r = `fkt-nbm-r-${tag}`;
  const p = `fkt-nbm-p-${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fk-burst-'));
  let nl;
  try {
    setup(r, p, { reachableMs: null }); // the kernel's default reachable time (30 s)
    nl = mod.NetlinkHandle.open({ netns: r });
    const ifindex = await nl.ifindex(DEV);
    const file = join(dir, 'batch');
    const lines = [];
    for (let i = 0; i < n; i++) {
      lines.push(`neigh replace ${ipOf(BASE + i)} dev ${DEV} extern_learn managed proto ${PROTO}`);
    }
    writeFileSync(file, lines.join('\n') + '\n');
    const t0 = performance.now();
    ip(r, '-batch', file);
    const writeMs = performance.now() - t0;
    const samples = [];
    let rx = rxPackets(p, 'fkp0');
    let drops = softnetDrops();
    for (let s = 1; s <= seconds; s++) {
      await sleep(1000);
      const counts = {};
      let usable = 0;
      for (const e of await nl.neighList({ ifindex })) {
        if (e.protocol !== PROTO) continue;
        const st = mod.nudStateNames(e.state)[0] ?? 'NONE';
        counts[st] = (counts[st] ?? 0) + 1;
        if (['REACHABLE', 'STALE', 'DELAY', 'PROBE'].includes(st) && e.lladdr) usable++;
      }
      const rx2 = rxPackets(p, 'fkp0');
      const d2 = softnetDrops();
      samples.push({
        s,
        usablePct: r2((usable / n) * 100),
        arpIn: rx2 - rx,
        drops: d2 - drops,
        counts,
      });
      console.log(
        `${String(s).padStart(3)} s usable ${r2((usable / n) * 100)}% peer rx ${rx2 - rx}/s drops ${d2 - drops} ${JSON.stringify(counts)}`,
      );
      rx = rx2;
      drops = d2;
    }
    const after = samples.filter((x) => x.s > 10);
    const result = {
      kernel: spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim(),
      n,
      writeMs: r2(writeMs),
      usableMinPct: Math.min(...after.map((x) => x.usablePct)),
      arpBurstMax: Math.max(...samples.map((x) => x.arpIn)),
      droppedTotal: samples.reduce((a, x) => a + x.drops, 0),
      samples,
    };
    console.log(
      `[${n} managed, kernel alone] written in ${result.writeMs} ms; usable min ${result.usableMinPct}% after 10 s; ARP requests at most ${result.arpBurstMax}/s; ${result.droppedTotal} packets dropped by backlogs`,
    );
    if (out) writeFileSync(out, JSON.stringify(result, null, 1) + '\n');
    await clear(nl, ifindex);
  } finally {
    nl?.close();
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
