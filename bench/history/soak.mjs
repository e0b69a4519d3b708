// A longer run of the history checker (test/agent/history.netns.test.ts) than CI's: more
// requests, more kill points, several rounds with fresh seeds. Not part of `make bench`
// (it measures correctness, not speed). Needs root and `make build`.
//
//   flock /work/wt/bench.lock node bench/history/soak.mjs [--rounds 5] [--ops 10000] [--kills 60] [--clients 32]
//
// Prints one line per run and the totals; exits 1 if any run found a violation.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const rounds = arg('rounds', 5);
const env = {
  ...process.env,
  FIBKEEPER_REQUIRE_PRIVILEGED: '1',
  FIBKEEPER_HISTORY_OPS: String(arg('ops', 10_000)),
  FIBKEEPER_HISTORY_KILLS: String(arg('kills', 60)),
  FIBKEEPER_HISTORY_CLIENTS: String(arg('clients', 32)),
};
const total = {
  runs: 0,
  ops: 0,
  acknowledged: 0,
  unknown: 0,
  refusedStorage: 0,
  killPoints: 0,
  killsWithTempFile: 0,
  violations: 0,
};
let failed = 0;
for (let round = 1; round <= rounds; round++) {
  const r = spawnSync(
    join(root, 'node_modules/.bin/vitest'),
    ['run', 'test/agent/history.netns.test.ts', '--testTimeout', '3600000'],
    { cwd: root, env, encoding: 'utf8' },
  );
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('history {'));
  for (const line of lines) {
    const s = JSON.parse(line.slice('history '.length));
    console.log(`round ${round} ${line}`);
    total.runs++;
    for (const k of Object.keys(total)) if (k !== 'runs') total[k] += s[k] ?? 0;
  }
  if (r.status !== 0) {
    failed++;
    console.log(r.stdout.slice(-4000), r.stderr.slice(-2000));
  }
}
console.log(`total ${JSON.stringify(total)}`);
process.exit(failed > 0 || total.violations > 0 ? 1 : 0);
