// Test doubles stay out of the shipped build: every one lives in a subsystem's testing.ts,
// which tsconfig.build.json leaves out, no shipped file imports one, and dist/ (as `make
// build` leaves it, which `make test` runs first) holds exactly the shipped sources.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, importsOf, sourceFiles } from '../helpers/imports.js';

const isTest = (f: string) => f.endsWith('.test.ts');
const isDouble = (f: string) => f.endsWith('/testing.ts');
const shipped = sourceFiles('src', { tests: false }).filter((f) => !isDouble(f));

function distFiles(dir = join(ROOT, 'dist')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? distFiles(join(dir, e.name)) : [relative(ROOT, join(dir, e.name))],
  );
}

describe('test doubles', () => {
  it('live only in files named testing.ts', () => {
    const named = sourceFiles('src').filter((f) => /(^|[/-])(fakes?|mocks?|stubs?)[-.]/.test(f));
    expect(named).toEqual([]);
    // A shipped file declares no Fake*/Mock*/Stub* class, function or constant.
    const declaring = shipped.filter((f) =>
      /^export (abstract )?(class|function|const) (Fake|Mock|Stub)[A-Z]/m.test(
        readFileSync(join(ROOT, f), 'utf8'),
      ),
    );
    expect(declaring).toEqual([]);
  });

  it('are imported by tests and other test doubles only', () => {
    const importers = shipped.flatMap((f) =>
      importsOf(f)
        .filter(isDouble)
        .map((d) => `${f} → ${d}`),
    );
    expect(importers).toEqual([]);
    expect(sourceFiles('src').filter((f) => isDouble(f) && isTest(f))).toEqual([]);
  });

  it('are not in dist/ (built from the shipped sources only)', () => {
    expect(existsSync(join(ROOT, 'dist')), 'dist/ is missing: run make build').toBe(true);
    const js = distFiles().filter((f) => f.endsWith('.js'));
    const want = shipped.map((f) => f.replace(/^src\//, 'dist/').replace(/\.ts$/, '.js'));
    expect(js.filter((f) => !want.includes(f))).toEqual([]);
    expect(want.filter((f) => !js.includes(f))).toEqual([]);
    const importing = js.filter((f) =>
      /from '[^']*\/testing\.js'|import\('[^']*\/testing\.js'\)/.test(
        readFileSync(join(ROOT, f), 'utf8'),
      ),
    );
    expect(importing).toEqual([]);
  });
});
