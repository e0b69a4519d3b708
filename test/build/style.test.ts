// One private-member style, as the README says: ECMAScript private names (#x) everywhere in
// src/; TypeScript's `private` only on a constructor that a static factory guards.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sourceFiles } from '../helpers/imports.js';

/** Lines of `text` that declare a member with TypeScript's `private` (constructors aside). */
function privateKeywordMembers(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => /(^|[(,]\s*)\s*private\s+(?!constructor\b)/.test(l) && !/^\s*(\/\/|\*)/.test(l));
}

describe('private members', () => {
  it('are #names in every file of src/', () => {
    const found = sourceFiles('src').flatMap((f) =>
      privateKeywordMembers(readFileSync(join(ROOT, f), 'utf8')).map((l) => `${f}: ${l.trim()}`),
    );
    expect(found).toEqual([]);
  });

  it('the check finds a private field, method and parameter property', () => {
    const text = [
      '  private readonly a = 1;',
      '  private b(): void {}',
      '  constructor(private readonly c: number) {}',
      '  private constructor() {}',
      '  // private d is only a comment',
      '  readonly #e = 2;',
    ].join('\n');
    expect(privateKeywordMembers(text)).toEqual([
      '  private readonly a = 1;',
      '  private b(): void {}',
      '  constructor(private readonly c: number) {}',
    ]);
  });
});

/** Test names (`it(`/`describe(` titles) in `text` that cite a finding or an issue number. */
function namedByNumber(text: string): string[] {
  return [...text.matchAll(/\b(?:it|describe)(?:\.\w+\([^)]*\))?\(\s*(['"`])(.*?)\1/g)]
    .map((m) => m[2]!)
    .filter((t) => /\((?:findings?|issues?) [0-9]/.test(t));
}

describe('test names', () => {
  it('say the behaviour, not which finding or issue they came from', () => {
    const found = [...sourceFiles('src'), ...sourceFiles('test')]
      .filter((f) => f.endsWith('.test.ts') && f !== 'test/build/style.test.ts') // its examples
      .flatMap((f) => namedByNumber(readFileSync(join(ROOT, f), 'utf8')).map((t) => `${f}: ${t}`));
    expect(found).toEqual([]);
  });

  it('the check finds a name that cites a finding', () => {
    expect(
      namedByNumber(
        "it('keeps every IP (finding 1)', () => {});\nit.skipIf(x)('waits (issue 24)', f);\nit('fine', f);",
      ),
    ).toEqual(['keeps every IP (finding 1)', 'waits (issue 24)']);
  });
});

describe('file size', () => {
  // A file a newcomer can read in one sitting: the source files of src/ (tests included) stay
  // under 500 lines; a longer one is split by what its parts do (see each module's wiring.ts).
  it('no file of src/ is over 500 lines', () => {
    const long = sourceFiles('src')
      .map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length - 1 }))
      .filter((x) => x.lines > 500)
      .map((x) => `${x.f}: ${x.lines} lines`);
    expect(long).toEqual([]);
  });
});
