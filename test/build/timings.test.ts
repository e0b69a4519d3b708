// The per-file timings make test keeps (test/helpers/timings-reporter.ts): vitest itself runs
// two files, one of them ~400 ms longer, with the reporter; the JSON it writes ranks the slow
// one first with at least its wait, and the run's output prints the slowest files.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TimingsDocument } from '../helpers/timings-reporter.js';

const ROOT = new URL('../..', import.meta.url).pathname;
mkdirSync(join(ROOT, 'build'), { recursive: true });
// Inside the repo so that the fixtures resolve 'vitest' from its node_modules.
const dir = mkdtempSync(join(ROOT, 'build', 'timings-fixture-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the timings reporter', () => {
  it('writes each file’s wall time, slowest first, and prints the slowest', () => {
    writeFileSync(
      join(dir, 'slow.test.ts'),
      "import { it } from 'vitest';\nit('waits', async () => { await new Promise((r) => setTimeout(r, 400)); });\n",
    );
    writeFileSync(
      join(dir, 'fast.test.ts'),
      "import { it, expect } from 'vitest';\nit('a', () => expect(1).toBe(1));\nit('b', () => expect(2).toBe(2));\n",
    );
    writeFileSync(join(dir, 'vitest.config.mjs'), 'export default {};\n');
    const out = join(dir, 'timings.json');
    const r = spawnSync(
      join(ROOT, 'node_modules/.bin/vitest'),
      [
        'run',
        '--reporter=default',
        `--reporter=${join(ROOT, 'test/helpers/timings-reporter.ts')}`,
      ],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, FIBKEEPER_TEST_TIMINGS: out },
        timeout: 60_000,
      },
    );
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const doc = JSON.parse(readFileSync(out, 'utf8')) as TimingsDocument;
    expect(doc.node).toBe(process.versions.node);
    expect(doc.files.map((f) => [f.file, f.tests, f.state])).toEqual([
      ['slow.test.ts', 1, 'passed'],
      ['fast.test.ts', 2, 'passed'],
    ]);
    expect(doc.files[0]!.wallMs).toBeGreaterThanOrEqual(400);
    expect(doc.files[0]!.testsMs).toBeGreaterThanOrEqual(400);
    expect(doc.wallMs).toBeGreaterThanOrEqual(doc.files[0]!.wallMs);
    expect(Math.min(...doc.files.map((f) => f.startMs))).toBe(0);
    expect(r.stdout).toMatch(/slowest 2 of 2 test files \(wall time; node [\d.]+; suite \d+ s\):/);
    expect(r.stdout).toMatch(/^\s+\d+\.\d s {2}slow\.test\.ts\s+\S* ?\(1 tests\)$/m);
  }, 60_000);
});
