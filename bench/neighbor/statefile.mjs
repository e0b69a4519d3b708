#!/usr/bin/env node
// The state file at N forwardable IPs (default 1,000,000), through the agent's own StateStore
// (dist/agent): its size; how long a save takes and how long it holds the event loop — the
// first save of the N IPs (the whole file, streamed in pieces), a save of one change (a
// journal line), the whole file written again (compaction, when the journal has grown to a
// quarter of it) — and how long a restart takes to read it back. The event loop's hold is
// the worst gap between the ticks of a 1 ms timer during the save, less the 1 ms (what a
// route change arriving then would wait for the loop).
//
// Usage: node bench/neighbor/statefile.mjs [--n 1000000] [--changes 200] [--out FILE]
// Writes FILE (default bench/results/neighbor-statefile.json; --out '' for none).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE, ipOf, pct, r2, root } from './lab.mjs';
import { flagValue } from '../args.mjs';

const a = process.argv.slice(2);
const opts = {
  n: Number(flagValue(a, '--n', '1000000')),
  changes: Number(flagValue(a, '--changes', '200')),
  out: flagValue(a, '--out', join(root, 'bench', 'results', 'neighbor-statefile.json')),
};

const { StateStore } = await import(join(root, 'dist', 'agent', 'state.js'));

/** Runs `fn` while a 1 ms timer ticks; its time and the worst gap between ticks (less 1 ms). */
async function held(fn) {
  let last = performance.now();
  let worst = 0;
  const t = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 1);
    last = now;
  }, 1);
  const t0 = performance.now();
  try {
    await fn();
  } finally {
    clearInterval(t);
  }
  const ms = performance.now() - t0;
  worst = Math.max(worst, performance.now() - last - 1);
  return { ms: r2(ms), heldMs: r2(Math.max(0, worst)) };
}

const dir = mkdtempSync(join(tmpdir(), 'fk-statefile-'));
try {
  const path = join(dir, 'state.json');
  const store = new StateStore(path);
  store.load();
  const ips = Array.from({ length: opts.n }, (_, i) => ipOf(BASE + i));
  store.record({ op: 'forwardable.set', owner: 'bench', ips });
  const first = await held(() => store.persist());
  const bytes = statSync(path).size;
  console.log(
    `first save of ${opts.n} IPs: ${first.ms} ms, event loop held at most ${first.heldMs} ms; state file ${bytes} bytes (${r2(bytes / opts.n)} per IP)`,
  );
  const one = [];
  for (let k = 0; k < opts.changes; k++) {
    const ip = ipOf(0x0a800000 + (k >> 1));
    store.record({ op: k % 2 ? 'forwardable.del' : 'forwardable.add', owner: 'other', ips: [ip] });
    one.push(await held(() => store.persist()));
  }
  const times = one.map((x) => x.ms);
  const holds = one.map((x) => x.heldMs);
  console.log(
    `a save of one change (journal): p50 ${r2(pct(times, 50))} ms, p99 ${r2(pct(times, 99))} ms; event loop held at most ${r2(Math.max(...holds))} ms`,
  );
  const compact = await held(() => store.compact());
  console.log(
    `the whole file written again (compaction): ${compact.ms} ms, event loop held at most ${compact.heldMs} ms`,
  );
  const t0 = performance.now();
  const again = new StateStore(path);
  const { usable } = again.load();
  const loadMs = r2(performance.now() - t0);
  if (usable.forwardable.get('bench')?.size !== opts.n)
    throw new Error('the state did not load back');
  console.log(`a restart reads it back (and checks every entry) in ${loadMs} ms`);
  const out = {
    benchmark: 'neighbor-statefile',
    kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString(),
    command: `node bench/neighbor/statefile.mjs ${process.argv.slice(2).join(' ')}`.trim(),
    n: opts.n,
    stateFileBytes: bytes,
    bytesPerIp: r2(bytes / opts.n),
    firstSave: first,
    oneChange: {
      p50Ms: r2(pct(times, 50)),
      p99Ms: r2(pct(times, 99)),
      heldMaxMs: r2(Math.max(...holds)),
    },
    compaction: compact,
    loadMs,
    figures: [
      ['state_file_bytes', bytes, 'bytes', null, null],
      ['first_save_ms', first.ms, 'ms', null, null],
      ['first_save_event_loop_held_ms', first.heldMs, 'ms', 5, '<='],
      ['journal_save_p99_ms', r2(pct(times, 99)), 'ms', null, null],
      ['journal_save_event_loop_held_ms', r2(Math.max(...holds)), 'ms', 5, '<='],
      ['compaction_ms', compact.ms, 'ms', null, null],
      ['compaction_event_loop_held_ms', compact.heldMs, 'ms', 5, '<='],
      ['load_ms', loadMs, 'ms', null, null],
    ].map(([name, value, unit, target, kind]) => ({
      name: `${name}_${opts.n}`,
      value,
      unit,
      reference: null,
      referenceName: name.includes('held')
        ? 'the worst gap between ticks of a 1 ms timer during it, less 1 ms'
        : null,
      ratio: null,
      target,
      targetKind: kind,
      targetOf: target === null ? null : 'value',
      targetMeaning: target === null ? null : 'value <=',
      pass: target === null ? null : value <= target,
    })),
  };
  if (opts.out) {
    mkdirSync(join(opts.out, '..'), { recursive: true });
    writeFileSync(opts.out, JSON.stringify(out, null, 1) + '\n');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
