// The import graph of src/ has no cycle: a module never depends, even through others, on a
// module that depends on it (a circle makes load order matter and the layers meaningless).
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, sourceFiles } from '../helpers/imports.js';


describe('the import graph of src/', () => {
  const cycles = importCycles(importGraph(sourceFiles('src', { tests: false })));

  it('has no cycle', () => {
    expect(cycles.map((c) => c.cycle.join(' → '))).toEqual([]);
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
