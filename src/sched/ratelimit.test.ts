import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { RateLimiter } from './index.js';

describe('RateLimiter', () => {
  it('allows a burst, then one token per 1/rate seconds', () => {
    let now = 0;
    const l = new RateLimiter({ rate: 10, burst: 3, now: () => now });
    expect([l.tryTake(), l.tryTake(), l.tryTake(), l.tryTake()]).toEqual([true, true, true, false]);
    expect(l.delayMs()).toBe(100);
    now = 99;
    expect(l.tryTake()).toBe(false);
    now = 100;
    expect(l.tryTake()).toBe(true);
    expect(l.tryTake()).toBe(false);
  });

  it('never saves more than the burst', () => {
    let now = 0;
    const l = new RateLimiter({ rate: 100, burst: 2, now: () => now });
    now = 60_000;
    expect(l.available()).toBe(2);
    expect(l.tryTake(2)).toBe(true);
    expect(l.tryTake()).toBe(false);
  });

  it('takes all of n or nothing, and says how long until n are there', () => {
    let now = 0;
    const l = new RateLimiter({ rate: 1, burst: 5, now: () => now });
    expect(l.tryTake(4)).toBe(true);
    expect(l.tryTake(2)).toBe(false);
    expect(l.available()).toBe(1);
    expect(l.delayMs(2)).toBe(1000);
    expect(l.delayMs(6)).toBe(Infinity);
    now = 1000;
    expect(l.delayMs(2)).toBe(0);
    expect(l.tryTake(2)).toBe(true);
  });

  it('bounds the total over a long run to burst + rate·time', () => {
    let now = 0;
    const l = new RateLimiter({ rate: 5, burst: 4, now: () => now });
    let taken = 0;
    for (now = 0; now <= 10_000; now += 7) while (l.tryTake()) taken++;
    expect(taken).toBeLessThanOrEqual(4 + 5 * 10);
    expect(taken).toBeGreaterThanOrEqual(4 + 5 * 10 - 1);
  });

  it('rejects a bad rate or burst naming the option', () => {
    expect(() => new RateLimiter({ rate: 0, burst: 1 })).toThrow(ConfigError);
    expect(() => new RateLimiter({ rate: 1, burst: 0.5 })).toThrow(/^burst:/);
    expect(() => new RateLimiter({ rate: Number.POSITIVE_INFINITY, burst: 1 })).toThrow(/^rate:/);
  });
});
