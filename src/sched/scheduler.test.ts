import { describe, expect, it } from 'vitest';
import { KeyScheduler, Periodic, type KeySchedulerOptions } from './index.js';
import { FakeClock } from './testing.js';

/** A scheduler on a fake clock that records the keys it fires, in order. */
function setup(opts: KeySchedulerOptions = {}) {
  const clock = new FakeClock();
  const fired: string[] = [];
  const s = new KeyScheduler(clock, (keys) => fired.push(...keys), opts);
  return { clock, fired, s, t0: clock.now() };
}

describe('KeyScheduler', () => {
  it('fires keys in due order, those due together in one call, and re-arms', () => {
    const clock = new FakeClock();
    const fired: string[][] = [];
    const s = new KeyScheduler(clock, (keys) => fired.push(keys));
    const t0 = clock.now();
    s.at('b', t0 + 200);
    s.at('a', t0 + 100);
    s.at('c', t0 + 100);
    expect(clock.pending).toBe(1); // one clock timer for all keys
    clock.advance(99);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual([['a', 'c']]);
    clock.advance(100);
    expect(fired).toEqual([['a', 'c'], ['b']]);
    expect(s.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('fires keys with equal due times in the order they were scheduled', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const s = new KeyScheduler(clock, (keys) => fired.push(...keys));
    const t = clock.now() + 50;
    for (const k of ['q', 'b', 'z', 'a', 'm']) s.at(k, t);
    s.at('b', t); // rescheduled: now the last of the five
    clock.advance(50);
    expect(fired).toEqual(['q', 'z', 'a', 'm', 'b']);
  });

  it('replaces and cancels due times; stop() cancels everything', () => {
    const { clock, fired, s, t0 } = setup();
    s.at('a', t0 + 100);
    s.at('a', t0 + 300); // replaces
    s.at('b', t0 + 200);
    s.cancel('b');
    s.cancel('nope'); // not an error
    expect(s.dueOf('a')).toBe(t0 + 300);
    expect(s.has('b')).toBe(false);
    clock.advance(250);
    expect(fired).toEqual([]);
    clock.advance(50);
    expect(fired).toEqual(['a']);
    s.at('c', clock.now() + 10);
    s.stop();
    s.at('d', clock.now() + 10);
    clock.advance(100);
    expect(fired).toEqual(['a']);
    expect(clock.pending).toBe(0);
  });

  it('moves its one timer earlier for an earlier key, and clears it when nothing is left', () => {
    const { clock, fired, s, t0 } = setup();
    s.at('late', t0 + 1000);
    s.at('early', t0 + 10);
    expect(clock.pending).toBe(1);
    clock.advance(10);
    expect(fired).toEqual(['early']);
    s.cancel('late');
    expect(clock.pending).toBe(0);
  });

  it('made paused, keeps keys and fires nothing until start(), then what is due at once', () => {
    const { clock, fired, s, t0 } = setup({ paused: true });
    s.at('a', t0 + 100);
    s.at('b', t0 + 500);
    expect(clock.pending).toBe(0);
    clock.advance(200);
    expect(fired).toEqual([]);
    expect(s.size).toBe(2);
    s.start();
    clock.advance(0);
    expect(fired).toEqual(['a']);
    clock.advance(300);
    expect(fired).toEqual(['a', 'b']);
  });

  it('still re-arms when fire throws', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const s = new KeyScheduler(clock, (keys) => {
      fired.push(...keys);
      if (keys.includes('bad')) throw new Error('boom');
    });
    s.at('bad', clock.now() + 10);
    s.at('good', clock.now() + 20);
    expect(() => clock.advance(10)).toThrow('boom');
    clock.advance(10);
    expect(fired).toEqual(['bad', 'good']);
  });

  it('fires each key once, at its last due time, when keys are rescheduled many times', () => {
    const clock = new FakeClock();
    const fired: [string, number][] = [];
    const s = new KeyScheduler(clock, (keys) => keys.forEach((k) => fired.push([k, clock.now()])));
    const t0 = clock.now();
    for (let i = 0; i < 10_000; i++) s.at(`k${i % 10}`, t0 + 1000 + i);
    clock.advance(20_000);
    expect(fired).toEqual(Array.from({ length: 10 }, (_, i) => [`k${i}`, t0 + 10_990 + i]));
  });
});

describe('Periodic', () => {
  it('runs every period between start() and stop(), one timer at a time', () => {
    const clock = new FakeClock();
    const runs: number[] = [];
    const t0 = clock.now();
    const p = new Periodic(clock, 50, () => runs.push(clock.now() - t0));
    clock.advance(100);
    expect(runs).toEqual([]);
    p.start();
    p.start(); // idempotent
    expect(clock.pending).toBe(1);
    clock.advance(120);
    expect(runs).toEqual([150, 200]);
    p.stop();
    p.stop();
    expect(p.running).toBe(false);
    expect(clock.pending).toBe(0);
    clock.advance(500);
    expect(runs).toEqual([150, 200]);
  });

  it('a run that stops it is the last', () => {
    const clock = new FakeClock();
    let n = 0;
    const p = new Periodic(clock, 10, () => {
      if (++n === 3) p.stop();
    });
    p.start();
    clock.advance(1000);
    expect(n).toBe(3);
    expect(clock.pending).toBe(0);
  });
});
