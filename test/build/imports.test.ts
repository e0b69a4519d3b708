// The import graph of src/ has no cycle: a module never depends, even through others, on a
// module that depends on it (a circle makes load order matter and the layers meaningless).
// And a subsystem's surface is its index.ts: a file imports another subsystem only through
// that (or, in tests and other test doubles, through its testing.ts).
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, sourceFiles } from '../helpers/imports.js';


describe('the import graph of src/', () => {
  const cycles = importCycles(importGraph(sourceFiles('src', { tests: false })));

  it('has no cycle', () => {
    expect(cycles.map((c) => c.cycle.join(' → '))).toEqual([]);
  });

  it('reaches another subsystem only through its index.ts (tests and doubles: testing.ts too)', () => {
    const graph = importGraph(sourceFiles('src'));
    expect(pastIndex(graph)).toEqual([]);
  });

  it('the index check finds an import past index.ts', () => {
    const graph = new Map([
      ['src/a/x.ts', ['src/b/index.ts', 'src/b/y.ts', 'src/a/z.ts']],
      ['src/a/x.test.ts', ['src/b/testing.ts']],
      ['src/a/w.ts', ['src/b/testing.ts']],
    ]);
    expect(pastIndex(graph)).toEqual(['src/a/x.ts → src/b/y.ts', 'src/a/w.ts → src/b/testing.ts']);
  });


  it('the checker finds a cycle, through other files too', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(importCycles(graph)).toEqual([
      { files: ['a.ts', 'b.ts', 'c.ts'], cycle: ['a.ts', 'b.ts', 'c.ts', 'a.ts'] },
    ]);
    expect(importCycles(new Map([['a.ts', ['b.ts']], ['b.ts', []]]))).toEqual([]);
  });
});

/** Imports of another subsystem's file other than its index.ts (testing.ts for doubles). */
function pastIndex(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const subsystem = (f: string) => f.split('/')[1];
  const double = (f: string) => f.endsWith('.test.ts') || f.endsWith('/testing.ts');
  const out: string[] = [];
  for (const [from, tos] of graph) {
    for (const to of tos) {
      if (subsystem(to) === subsystem(from) || to.endsWith('/index.ts')) continue;
      if (to.endsWith('/testing.ts') && double(from)) continue;
      out.push(`${from} → ${to}`);
    }
  }
  return out;
}
