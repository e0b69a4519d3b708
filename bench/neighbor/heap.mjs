#!/usr/bin/env node
// Where the whole agent's memory goes per forwardable IP: `fibkeeper run` (as whole.mjs runs
// it: every node subsystem on) loaded with N forwardable IPs through the API, a heap
// snapshot taken (--heapsnapshot-signal) once every entry is in the kernel, and the
// snapshot summed up:
//   - by constructor / node type: count and self size, and bytes per forwardable IP;
//   - the large collections (Map, Set, arrays, typed arrays' buffers) with the path that
//     holds them (owner class and field), their retained-by-hash-table size (the backing
//     store's self size) and bytes per IP.
// The same with 0 IPs is subtracted (--base), so what is left is the per-IP cost.
//
// Usage: node --max-old-space-size=8192 bench/neighbor/heap.mjs [--n 100000] [--mode auto]
//          [--top 40] [--keep DIR]
// Needs root and `make build`. Prints a table (docs/neighbor.md, "Memory per IP").
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV, PROTO, r2, setup, sleep, sysctl } from './lab.mjs';
import { sendIps, startAgent } from './whole.mjs';
import { flagValue } from '../args.mjs';

const a = process.argv.slice(2);
const opts = {
  n: Number(flagValue(a, '--n', '100000')),
  mode: flagValue(a, '--mode', 'auto'),
  top: Number(flagValue(a, '--top', '40')),
  api: flagValue(a, '--api', 'stream'),
  keep: flagValue(a, '--keep', undefined),
};

async function snapshot(agent, dir) {
  const before = new Set(readdirSync(dir));
  process.kill(agent.pid, 'SIGUSR2');
  for (;;) {
    await sleep(500);
    const f = readdirSync(dir).find((x) => x.endsWith('.heapsnapshot') && !before.has(x));
    if (!f) continue;
    const path = join(dir, f);
    const s1 = statSync(path).size;
    await sleep(1500);
    if (s1 > 0 && statSync(path).size === s1) return path;
  }
}

/** Sums a snapshot: self size by class, and the largest collections with who holds them. */
function summarize(path) {
  const snap = JSON.parse(readFileSync(path, 'utf8'));
  const m = snap.snapshot.meta;
  const nf = m.node_fields.length;
  const ef = m.edge_fields.length;
  const types = m.node_types[0];
  const etypes = m.edge_types[0];
  const [iType, iName, , iSelf, iEdges] = ['type', 'name', 'id', 'self_size', 'edge_count'].map(
    (k) => m.node_fields.indexOf(k),
  );
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((k) =>
    m.edge_fields.indexOf(k),
  );
  const { nodes, edges, strings } = snap;
  const count = nodes.length / nf;
  const byClass = new Map();
  const firstEdge = new Uint32Array(count);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += nodes[i * nf + iEdges] * ef;
  }
  const nameOf = (i) => strings[nodes[i * nf + iName]];
  const typeOf = (i) => types[nodes[i * nf + iType]];
  for (let i = 0; i < count; i++) {
    const t = typeOf(i);
    const key =
      t === 'object' || t === 'closure'
        ? `${t} ${nameOf(i)}`
        : t === 'hidden' || t === 'array' || t === 'code'
          ? `${t} ${nameOf(i).slice(0, 40)}`
          : t;
    const c = byClass.get(key) ?? { count: 0, bytes: 0 };
    c.count++;
    c.bytes += nodes[i * nf + iSelf];
    byClass.set(key, c);
  }
  // The collections: objects named Map/Set/Array/typed arrays and who points at them.
  const holders = new Map();
  for (let i = 0; i < count; i++) {
    const t = typeOf(i);
    if (t !== 'object' && t !== 'hidden' && t !== 'synthetic') continue;
    const owner = nameOf(i);
    for (let e = firstEdge[i], k = 0; k < nodes[i * nf + iEdges]; k++, e += ef) {
      const et = etypes[edges[e + eType]];
      if (et !== 'property' && et !== 'internal') continue;
      const to = edges[e + eTo] / nf;
      const tn = nameOf(to);
      if (
        typeOf(to) !== 'object' ||
        !/^(Map|Set|Array|Uint\w*Array|Int\w*Array|Float\w*Array)$/.test(tn)
      )
        continue;
      // Its storage: the table / elements it points at (internal edges), plus itself.
      let bytes = nodes[to * nf + iSelf];
      for (let e2 = firstEdge[to], k2 = 0; k2 < nodes[to * nf + iEdges]; k2++, e2 += ef) {
        const et2 = etypes[edges[e2 + eType]];
        const to2 = edges[e2 + eTo] / nf;
        if (et2 === 'internal' || (et2 === 'property' && strings[edges[e2 + eName]] === 'table'))
          bytes += nodes[to2 * nf + iSelf];
        if (typeOf(to2) === 'hidden' && /ArrayBuffer|backing_store/.test(nameOf(to2)))
          bytes += nodes[to2 * nf + iSelf];
      }
      const field =
        et === 'property'
          ? strings[edges[e + eName]]
          : `(${strings[edges[e + eName]] ?? edges[e + eName]})`;
      const key = `${owner}.${field} → ${tn}`;
      const h = holders.get(key) ?? { count: 0, bytes: 0 };
      h.count++;
      h.bytes += bytes;
      holders.set(key, h);
    }
  }
  let total = 0;
  for (let i = 0; i < count; i++) total += nodes[i * nf + iSelf];
  return { byClass, holders, total };
}

async function measure(n) {
  const tag = randomBytes(3).toString('hex');
  const r = `fkt-nbh-r-${tag}`;
  const p = `fkt-nbh-p-${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fk-heap-'));
  let agent;
  try {
    setup(r, p, { reachableMs: null });
    sysctl(r, 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1');
    agent = await startAgent(dir, r, opts.mode, {
      nodeOptions: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`,
    });
    if (n > 0) {
      await sendIps(agent, 'bench', n, opts.api);
      for (let i = 0; i < 600; i++) {
        const out = spawnSync(
          'ip',
          ['-n', r, 'neigh', 'show', 'dev', DEV, 'proto', String(PROTO)],
          {
            encoding: 'utf8',
            maxBuffer: 1 << 30,
          },
        ).stdout;
        if (out.split('\n').filter(Boolean).length >= n) break;
        await sleep(1000);
      }
      await sleep(5000);
    }
    const rss =
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${agent.pid}/status`, 'utf8'))[1]) / 1024;
    const file = await snapshot(agent, dir);
    // --keep DIR: the snapshot is kept (open it in Chrome's DevTools, Memory tab).
    if (opts.keep) copyFileSync(file, join(opts.keep, `fibkeeper-${n}.heapsnapshot`));
    const sum = summarize(file);
    return { ...sum, rss };
  } finally {
    await agent?.stop().catch(() => undefined);
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
    spawnSync('umount', [join(dir, 'bpf')]);
    rmSync(dir, { recursive: true, force: true });
  }
}

const base = await measure(0);
const full = await measure(opts.n);
const per = (x) => r2(x / opts.n);
console.log(
  `heap ${r2(full.total / 2 ** 20)} MiB with ${opts.n} (${r2(base.total / 2 ** 20)} MiB with none): ${per(full.total - base.total)} B per IP; RSS ${r2(full.rss)} MiB (${r2(base.rss)})`,
);
const diff = (a, b) =>
  [...a.entries()]
    .map(([k, v]) => ({
      k,
      count: v.count - (b.get(k)?.count ?? 0),
      bytes: v.bytes - (b.get(k)?.bytes ?? 0),
    }))
    .sort((x, y) => y.bytes - x.bytes)
    .slice(0, opts.top);
console.log('\nby class/type: count, bytes, bytes per IP');
for (const d of diff(full.byClass, base.byClass))
  console.log(
    `${d.k.padEnd(60)} ${String(d.count).padStart(9)} ${String(d.bytes).padStart(11)} ${per(d.bytes)}`,
  );
console.log('\ncollections by holder: count, bytes (object + backing store), bytes per IP');
for (const d of diff(full.holders, base.holders))
  console.log(
    `${d.k.padEnd(60)} ${String(d.count).padStart(9)} ${String(d.bytes).padStart(11)} ${per(d.bytes)}`,
  );
