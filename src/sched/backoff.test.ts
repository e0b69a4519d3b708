import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoff } from './index.js';

describe('backoff', () => {
  it('doubles from the minimum per failure up to the maximum', () => {
    expect([1, 2, 3, 4, 12].map((n) => backoff(100, 1000, n))).toEqual([100, 200, 400, 800, 1000]);
  });

  it('gives the minimum for no failure yet', () => {
    expect([0, -1, 1].map((n) => backoff(50, 500, n))).toEqual([50, 50, 50]);
  });

  it('stays finite, never below the minimum nor above the maximum, and never shrinks', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 1e9 }),
        fc.integer({ min: 0, max: 5000 }),
        (min, extra, n) => {
          const max = min + extra;
          const d = backoff(min, max, n);
          expect(Number.isFinite(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(min);
          expect(d).toBeLessThanOrEqual(max);
          expect(backoff(min, max, n + 1)).toBeGreaterThanOrEqual(d);
        },
      ),
    );
  });
});
