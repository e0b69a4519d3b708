import { describe, expect, it } from 'vitest';
import { SortedInts } from './sorted-ints.js';
import { PENDING_LIMIT } from './sorted-keys.js';

/** xorshift: the same sequence every run. */
function random(seed: number): (n: number) => number {
  return (n) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
}

describe('SortedInts', () => {
  it('answers every range, has and size like a plain set, through slices, merges, ghosts and rebuilds', () => {
    const keys = new SortedInts();
    const want = new Set<number>();
    const added: number[] = [];
    const rnd = random(7);
    // negative and positive keys: IPv4 keys are signed 32-bit numbers
    const key = (): number => rnd(2_000_000) - 1_000_000;
    const check = (lo: number, hi: number): void => {
      const inside = [...want].filter((x) => x >= lo && x <= hi).sort((a, b) => a - b);
      expect(keys.range(lo, hi)).toEqual(inside);
    };
    for (let i = 0; i < 6 * PENDING_LIMIT; i++) {
      const r = rnd(8);
      if (r < 2 && added.length > 0) {
        // a key added earlier: in pending, a run, delta or base by now (or deleted already)
        const k = added[rnd(added.length)]!;
        if (keys.delete(k) !== want.delete(k)) expect.fail(`delete(${k}) at ${i}`);
      } else if (r === 2 && added.length > 0) {
        // a key added earlier again: a ghost comes back, a live key is refused
        const k = added[rnd(added.length)]!;
        if (keys.add(k) !== !want.has(k)) expect.fail(`re-add(${k}) at ${i}`);
        want.add(k);
      } else {
        const k = key();
        if (keys.add(k) !== !want.has(k)) expect.fail(`add(${k}) at ${i}`);
        want.add(k);
        added.push(k);
      }
      if (i % 997 === 0) {
        const k = added[rnd(added.length)]!;
        expect(keys.has(k)).toBe(want.has(k));
        expect(keys.size).toBe(want.size);
      }
      // rarely: runs form between the queries (PENDING_LIMIT adds and more)
      if (i % 25_000 === 24_999 || rnd(30_000) === 0) {
        const lo = key();
        check(lo, lo + rnd(100_000));
      }
    }
    expect(keys.size).toBe(want.size);
    check(-(2 ** 31), 2 ** 31 - 1);
    expect(keys.range()).toEqual([...want].sort((a, b) => a - b));
  });

  it('steady churn after a load: single adds and deletes between queries stay exact', () => {
    const keys = new SortedInts();
    const want = new Set<number>();
    for (let k = 0; k < 3 * PENDING_LIMIT; k++) {
      keys.add(k * 3);
      want.add(k * 3);
    }
    expect(keys.range(0, 30)).toEqual([0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30]);
    const rnd = random(11);
    for (let i = 0; i < 1_500; i++) {
      const k = rnd(9 * PENDING_LIMIT);
      if (want.has(k)) {
        expect(keys.delete(k)).toBe(true);
        want.delete(k);
      } else {
        expect(keys.add(k)).toBe(true);
        want.add(k);
      }
      expect(keys.delete(-1)).toBe(false);
      const lo = rnd(9 * PENDING_LIMIT);
      const inside = [...want].filter((x) => x >= lo && x <= lo + 50).sort((a, b) => a - b);
      expect(keys.range(lo, lo + 50)).toEqual(inside);
    }
    expect(keys.size).toBe(want.size);
    keys.clear();
    expect(keys.size).toBe(0);
    expect(keys.range()).toEqual([]);
    expect(keys.has(0)).toBe(false);
  });
});
