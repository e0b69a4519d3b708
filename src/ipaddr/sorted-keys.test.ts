import { describe, expect, it } from 'vitest';
import { PENDING_LIMIT, SortedKeys } from './sorted-keys.js';

/** SortedKeys of numbers whose sorts are recorded (the number of keys each was given). */
function spied(): { keys: SortedKeys<number>; sorts: number[] } {
  const sorts: number[] = [];
  const keys = new SortedKeys<number>((k) => {
    sorts.push(k.length);
    return k.sort((a, b) => a - b);
  });
  return { keys, sorts };
}

describe('SortedKeys', () => {
  it('a query after a bulk load of 10 x PENDING_LIMIT keys sorts at most PENDING_LIMIT of them', () => {
    const { keys, sorts } = spied();
    const n = 10 * PENDING_LIMIT + 123;
    // a pseudo-random order of 0..n-1 (n is odd and 7919 prime to it: a permutation)
    for (let i = 0; i < n; i++) keys.add((i * 7919) % n, String((i * 7919) % n));
    sorts.length = 0;
    const got = keys.range(1000, 1009);
    expect(got).toEqual([
      '1000',
      '1001',
      '1002',
      '1003',
      '1004',
      '1005',
      '1006',
      '1007',
      '1008',
      '1009',
    ]);
    expect(Math.max(0, ...sorts)).toBeLessThanOrEqual(PENDING_LIMIT);
    expect(keys.range(0, n).length).toBe(n);
  });

  it('keeps adds, deletes and re-adds around the slices exact', () => {
    const { keys } = spied();
    const want = new Set<number>();
    let seed = 1;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 50_000;
    for (let i = 0; i < 3 * PENDING_LIMIT; i++) {
      const k = rnd();
      if (i % 3 === 2) {
        keys.delete(k);
        want.delete(k);
      } else {
        keys.add(k, String(k));
        want.add(k);
      }
      if (i % 9_999 === 0) keys.range(0, 10);
    }
    const sorted = [...want].sort((a, b) => a - b).map(String);
    expect(keys.range(0, 50_000)).toEqual(sorted);
    expect(keys.range(20_000, 29_999)).toEqual(sorted.filter((x) => +x >= 20_000 && +x <= 29_999));
  });

  it('answers every range like a plain set, through slices, merges, ghosts and rebuilds', () => {
    const { keys } = spied();
    const want = new Set<number>();
    const added: number[] = [];
    let seed = 7;
    const rnd = (n: number): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const check = (lo: number, hi: number): void => {
      const inside = [...want].filter((x) => x >= lo && x <= hi).sort((a, b) => a - b);
      expect(keys.range(lo, hi)).toEqual(inside.map(String));
    };
    for (let i = 0; i < 6 * PENDING_LIMIT; i++) {
      if (rnd(4) === 0 && added.length > 0) {
        // a key added earlier: in pending, a run, delta or base by now
        const k = added[rnd(added.length)]!;
        expect(keys.delete(k)).toBe(want.delete(k));
      } else {
        const k = rnd(1_000_000);
        expect(keys.add(k, String(k))).toBe(!want.has(k));
        want.add(k);
        added.push(k);
      }
      // rarely: runs form between the queries (PENDING_LIMIT adds and more)
      if (i % 25_000 === 24_999 || rnd(30_000) === 0) {
        const lo = rnd(1_000_000);
        check(lo, lo + rnd(50_000));
      }
    }
    expect(keys.size).toBe(want.size);
    check(0, 1_000_000);
  });
});
