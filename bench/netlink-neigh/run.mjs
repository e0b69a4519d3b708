#!/usr/bin/env node
// Benchmark: write N extern_learn neighbor entries through fibkeeper's netlink client
// (NetlinkHandle.neighSetMany), dump them back, delete them; then the same entries with
// `ip -n NS -batch FILE` (neigh replace ... extern_learn), dumped with `ip neigh show`,
// deleted with `ip -batch`. Prints entries/s for both and the ratio, for N = 10,000 and
// 100,000, and writes bench/results/netlink-neigh.json. Target: >= 4x ip -batch at 100,000.
//
// Everything happens in a namespace of its own (always deleted); extern_learn entries do
// not count against gc_thresh3. Sides alternate (client first on even rounds, ip first on
// odd ones) so machine noise does not favour one. Needs root and `make build`.
//
// Usage: node bench/netlink-neigh/run.mjs [--rounds R] [--sizes 10000,100000]
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flagValue } from '../args.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const TARGET = 4;
const DEV = 'fkb0';

function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => flagValue(a, name, def);
  return {
    rounds: Number(get('--rounds', '3')),
    sizes: get('--sizes', '10000,100000').split(',').map(Number),
  };
}

function ip(ns, ...argv) {
  const r = spawnSync('ip', ['-n', ns, ...argv], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`ip -n ${ns} ${argv.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

const entryIp = (i) => {
  const v = 0x0a000001 + i; // 10.0.0.1 onwards
  return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
};
const entryMac = (i) =>
  `02:00:${[24, 16, 8, 0].map((s) => ((i >>> s) & 255).toString(16).padStart(2, '0')).join(':')}`;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const seconds = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;

function countNeighbors(ns) {
  const out = ip(ns, 'neigh', 'show', 'dev', DEV);
  return out === '' ? 0 : out.trimEnd().split('\n').length;
}

async function runClient(nl, ns, ifindex, n, NUD_REACHABLE) {
  const entries = new Array(n);
  for (let i = 0; i < n; i++) {
    entries[i] = {
      ifindex,
      dst: entryIp(i),
      lladdr: entryMac(i),
      state: NUD_REACHABLE,
      externLearned: true,
    };
  }
  let t0 = process.hrtime.bigint();
  const set = await nl.neighSetMany(entries);
  const write = seconds(t0);
  if (set.failures.length > 0)
    throw new Error(`client: ${set.failures.length} failed: ${set.failures[0].error.message}`);
  t0 = process.hrtime.bigint();
  const dumped = await nl.neighList({ ifindex });
  const dump = seconds(t0);
  if (dumped.length !== n) throw new Error(`client dump: ${dumped.length} entries, expected ${n}`);
  t0 = process.hrtime.bigint();
  const del = await nl.neighDelMany(entries);
  const remove = seconds(t0);
  if (del.failures.length > 0) throw new Error(`client delete: ${del.failures.length} failed`);
  if (countNeighbors(ns) !== 0) throw new Error('client delete left entries behind');
  return { write, dump, remove };
}

function runIp(ns, n, dir) {
  const setFile = join(dir, `set-${n}.batch`);
  const delFile = join(dir, `del-${n}.batch`);
  const set = [];
  const del = [];
  for (let i = 0; i < n; i++) {
    set.push(
      `neigh replace ${entryIp(i)} lladdr ${entryMac(i)} dev ${DEV} nud reachable extern_learn`,
    );
    del.push(`neigh del ${entryIp(i)} dev ${DEV}`);
  }
  writeFileSync(setFile, set.join('\n') + '\n');
  writeFileSync(delFile, del.join('\n') + '\n');
  let t0 = process.hrtime.bigint();
  ip(ns, '-batch', setFile);
  const write = seconds(t0);
  t0 = process.hrtime.bigint();
  const count = countNeighbors(ns);
  const dump = seconds(t0);
  if (count !== n) throw new Error(`ip dump: ${count} entries, expected ${n}`);
  t0 = process.hrtime.bigint();
  ip(ns, '-batch', delFile);
  const remove = seconds(t0);
  if (countNeighbors(ns) !== 0) throw new Error('ip delete left entries behind');
  return { write, dump, remove };
}

function rates(n, runs) {
  const r = (k) => Math.round(n / median(runs.map((x) => x[k])));
  return { write: r('write'), dump: r('dump'), delete: r('remove') };
}

async function main() {
  const { rounds, sizes } = args();
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mod = await import(join(root, 'dist', 'netlink', 'index.js')).catch((err) => {
    throw new Error(`cannot load dist/netlink (run make build): ${err.message}`);
  });
  const ns = `fkt-bench-${randomBytes(4).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'fk-bench-'));
  execFileSync('ip', ['netns', 'add', ns]);
  const onSignal = (sig) => {
    spawnSync('ip', ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
    process.kill(process.pid, sig);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const results = [];
  let nl;
  try {
    ip(ns, 'link', 'add', DEV, 'type', 'veth', 'peer', 'name', 'fkb1');
    ip(ns, 'link', 'set', DEV, 'up');
    nl = mod.NetlinkHandle.open({ netns: ns });
    const ifindex = await nl.ifindex(DEV);
    for (const n of sizes) {
      const client = [];
      const ref = [];
      for (let k = 0; k < rounds; k++) {
        if (k % 2 === 0) {
          client.push(await runClient(nl, ns, ifindex, n, mod.NUD_REACHABLE));
          ref.push(runIp(ns, n, dir));
        } else {
          ref.push(runIp(ns, n, dir));
          client.push(await runClient(nl, ns, ifindex, n, mod.NUD_REACHABLE));
        }
      }
      const c = rates(n, client);
      const r = rates(n, ref);
      const ratio = Math.round((c.write / r.write) * 100) / 100;
      results.push({ n, rounds, client: c, ipBatch: r, ratio });
      console.log(
        `N=${n}: client ${c.write} entries/s (dump ${c.dump}/s, delete ${c.delete}/s); ` +
          `ip -batch ${r.write} entries/s (dump ${r.dump}/s, delete ${r.delete}/s); ratio ${ratio}x`,
      );
    }
  } finally {
    nl?.close();
    spawnSync('ip', ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
  }
  const top = results.find((x) => x.n === 100000) ?? results[results.length - 1];
  const out = {
    benchmark: 'netlink-neigh',
    unit: 'entries/s (extern_learn neighbor writes, median of rounds)',
    figure: top.client.write,
    reference: top.ipBatch.write,
    ratio: top.ratio,
    target: TARGET,
    n: top.n,
    pass: top.ratio >= TARGET,
    figures: results.flatMap((x) => [
      {
        name: `write_${x.n}`,
        value: x.client.write,
        unit: 'entries/s',
        reference: x.ipBatch.write,
        referenceName: 'ip -batch neigh replace ... extern_learn, same entries, same run',
        ratio: x.ratio,
        target: x.n === 100000 ? TARGET : null,
        targetKind: '>=',
        pass: x.n === 100000 ? x.ratio >= TARGET : null,
      },
      {
        name: `dump_${x.n}`,
        value: x.client.dump,
        unit: 'entries/s',
        reference: x.ipBatch.dump,
        referenceName: 'ip -j neigh show',
        ratio: Math.round((x.client.dump / x.ipBatch.dump) * 100) / 100,
        target: null,
        targetKind: '>=',
        pass: null,
      },
    ]),
    runs: results,
    kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString(),
  };
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(
    join(root, 'bench', 'results', 'netlink-neigh.json'),
    JSON.stringify(out, null, 2) + '\n',
  );
  console.log(
    `ratio at N=${top.n}: ${top.ratio}x (target ${TARGET}x) -> ${out.pass ? 'PASS' : 'MISS'}`,
  );
}

main().catch((err) => {
  console.error(`netlink-neigh bench: ${err.stack ?? err}`);
  process.exitCode = 1;
});
