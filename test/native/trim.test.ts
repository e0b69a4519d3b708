// trimHeap gives the C heap's free pages back to the kernel: in a fresh Node process, 40,000
// Buffers of 2 KiB (each its own malloc) are made and 15 of every 16 dropped and collected;
// their pages stay in the process's RssAnon (free() gives back only an arena's top) until
// trimHeap runs, as the kernel's own count (/proc/self/status) shows.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/imports.js';

const SCRIPT = `
import { readFileSync } from 'node:fs';
const { trimHeap } = await import(process.env.FK_NATIVE);
const WANT = Number(process.env.FK_WANT);
const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const keep = [];
let drop = [];
for (let i = 0; i < 40000; i++) {
  const b = Buffer.allocUnsafeSlow(2048);
  b.fill(1);
  (i % 16 === 0 ? keep : drop).push(b);
}
drop = null;
globalThis.gc();
globalThis.gc();
await new Promise((r) => setTimeout(r, 100));
const before = anon();
const trimmed = process.env.FK_TRIM === '1' ? trimHeap() : null;
let after = anon();
// The trim runs on a thread of its own and gives the pages back one run at a time: wait for
// all of it (what the test asks for), or 3 s.
for (let i = 0; i < 150 && before - after <= WANT; i++) {
  await new Promise((r) => setTimeout(r, 20));
  after = anon();
}
process.stdout.write(JSON.stringify({ before, after, trimmed, kept: keep.length }));
`;

/** Of the ~75 MiB freed, what the trim must hand back. */
const WANT_MIB = 40;

function run(trim: boolean): { before: number; after: number; trimmed: boolean | null } {
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', SCRIPT], {
    encoding: 'utf8',
    env: {
      ...process.env,
      FK_TRIM: trim ? '1' : '0',
      FK_WANT: String(WANT_MIB),
      FK_NATIVE: pathToFileURL(join(ROOT, 'dist/native/index.js')).href,
    },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { before: number; after: number; trimmed: boolean | null };
}

describe('trimHeap', () => {
  it("hands the freed pages back: the kernel's RssAnon falls by most of the ~75 MiB freed", () => {
    const without = run(false);
    expect(
      without.before - without.after,
      `nothing gives them back by itself: ${JSON.stringify(without)}`,
    ).toBeLessThan(5);
    const withTrim = run(true);
    expect(withTrim.trimmed).toBe(true);
    expect(withTrim.before - withTrim.after, JSON.stringify(withTrim)).toBeGreaterThan(WANT_MIB);
  }, 30_000); // two processes that fill and free ~80 MiB each: seconds on a busy machine
});
