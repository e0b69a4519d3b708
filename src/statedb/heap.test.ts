import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MinHeap } from './heap.js';

describe('MinHeap', () => {
  it('pops in priority order for any input', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 })), (xs) => {
        const h = new MinHeap<number>((x, y) => x < y);
        for (const x of xs) h.push(x);
        const out: number[] = [];
        for (let x = h.pop(); x !== undefined; x = h.pop()) out.push(x);
        expect(out).toEqual([...xs].sort((a, b) => a - b));
        expect(h.size).toBe(0);
      }),
    );
  });

  it('keeps insertion order among equals when the comparator breaks ties', () => {
    let seq = 0;
    const h = new MinHeap<{ due: number; seq: number }>((a, b) =>
      a.due === b.due ? a.seq < b.seq : a.due < b.due,
    );
    for (const due of [5, 1, 5, 1, 5, 1]) h.push({ due, seq: seq++ });
    const out: number[] = [];
    for (let x = h.pop(); x !== undefined; x = h.pop()) out.push(x.seq);
    expect(out).toEqual([1, 3, 5, 0, 2, 4]);
  });

  it('interleaves push and pop correctly', () => {
    const h = new MinHeap<number>((x, y) => x < y);
    h.push(5);
    h.push(1);
    expect(h.pop()).toBe(1);
    h.push(3);
    h.push(0);
    expect(h.peek()).toBe(0);
    expect([h.pop(), h.pop(), h.pop(), h.pop()]).toEqual([0, 3, 5, undefined]);
  });
});
