// The fault soak (issue 24): for each error class, two minutes of `fibkeeper run` in the
// lab's router with that class injected at the native boundary (FIBKEEPER_TEST_FAULTS) under
// route churn (a replace every 20 ms, a delete/add every 100 ms), a link flap every 2 s and
// control API traffic (an add or delete every 50 ms); then the kernel against the desired
// state computed without the agent (src/lab/faults.ts). One more run injects nothing: the
// workload of issue 24's reproduction (resync 1 s, extip checks every 50 ms), which is where
// the spurious EINVAL of the dump race showed up. Writes bench/results/faults.json.
//
//   node bench/faults/run.mjs [--seconds 120] [--only EINVAL,timeout]
//
// Needs root and `make build`. test/agent/faults.netns.test.ts runs the same for 6 s a class.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, release } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flagValue } from '../args.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const { faultSoak } = await import(join(root, 'dist/lab/index.js'));
const { FAULT_CLASSES } = await import(join(root, 'dist/native/index.js'));

const seconds = Number(flagValue(process.argv, '--seconds', '120'));
const only = flagValue(process.argv, '--only', undefined)?.split(',');
const RATES = {
  EINVAL: 0.002,
  ENOBUFS: 0.01,
  EMSGSIZE: 0.005,
  EBUSY: 0.002,
  EAGAIN: 0.005,
  timeout: 0.001,
  truncate: 0.005,
  hang: 0.02,
};
const HEALTH =
  'phase=ready,probeMs=500,silentMs=2000,liveMs=8000,deafMs=1500,hangMs=1500,stormMs=30';
const runs = [
  ...FAULT_CLASSES.map((c) => ({
    name: c,
    faults: `classes=${c},rate=${RATES[c]},seed=11,${HEALTH}${c === 'timeout' ? ',deafMs=4000' : ''}`,
  })),
  { name: 'none', faults: 'phase=ready', checkInterval: '50ms' },
].filter((r) => !only || only.includes(r.name));

const figures = [];
for (const run of runs) {
  const dir = mkdtempSync(join(tmpdir(), `fk-bench-faults-${run.name}-`));
  const t0 = Date.now();
  console.log(`--- ${run.name}: ${run.faults}`);
  try {
    const r = await faultSoak({
      prefix: `bf${Math.floor(Math.random() * 1e5)}`,
      faults: run.faults,
      churnMs: seconds * 1000,
      settleMs: 60_000,
      dir,
      bin: join(root, 'bin/fibkeeper.js'),
      node: process.execPath,
      say: (l) => console.log(`    ${((Date.now() - t0) / 1000).toFixed(1)} s ${l}`),
      ...(run.checkInterval ? { extipCheckInterval: run.checkInterval } : {}),
    });
    const einval = r.log.split('\n').filter((l) => /EINVAL/.test(l)).length;
    const reopens = Object.values(r.reopens).reduce((a, b) => a + b, 0);
    const injected = Object.values(r.injected).reduce((a, b) => a + b, 0);
    const pass =
      r.diff.length === 0 &&
      r.livez.failed === 0 &&
      r.livez.unanswered === 0 &&
      r.api.unanswered === 0 &&
      r.stop.code === 0 &&
      (run.name === 'none' ? einval === 0 : injected > 0);
    figures.push({
      name: `${run.name}_converged_after_churn`,
      date: new Date().toISOString(),
      description: `${seconds} s of churn with ${run.name === 'none' ? 'no injected fault' : `${run.name} injected`}; then the time until the kernel matched the desired state`,
      value: r.convergedMs ?? null,
      unit: 'ms',
      target: 60_000,
      targetMeaning: 'converged, /livez and the API answered throughout, clean stop',
      pass,
      faults: run.faults,
      injected: r.injected,
      reopens: r.reopens,
      livez: r.livez,
      api: r.api,
      diff: r.diff,
      desired: {
        neigh: r.desired.neigh.length,
        holder: r.desired.holder.length,
        xdp: r.desired.xdp,
      },
      einvalLogLines: einval,
      stop: r.stop,
    });
    console.log(
      `    converged ${r.convergedMs ?? 'NO'} ms; injected ${injected}; reopens ${JSON.stringify(r.reopens)}; livez ${JSON.stringify(r.livez)}; api ${JSON.stringify(r.api)}; EINVAL lines ${einval}; ${pass ? 'pass' : 'FAIL'}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const file = fileURLToPath(new URL('../results/faults.json', import.meta.url));
// With --only, the other classes' rows of the last run stay (each row says when it ran).
const kept =
  only && existsSync(file)
    ? JSON.parse(readFileSync(file, 'utf8')).figures.filter(
        (f) => !figures.some((n) => n.name === f.name),
      )
    : [];
const order = runs.length > 0 ? [...FAULT_CLASSES, 'none'] : [];
const all = [...kept, ...figures].sort(
  (a, b) => order.indexOf(a.name.split('_')[0]) - order.indexOf(b.name.split('_')[0]),
);
const out = {
  benchmark: 'faults',
  kernel: release(),
  date: new Date().toISOString(),
  seconds,
  figures: all,
};
writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
console.log(`wrote ${file}`);
process.exit(all.every((f) => f.pass) ? 0 : 1);
