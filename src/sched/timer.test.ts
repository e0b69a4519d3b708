import { describe, expect, it } from 'vitest';
import { sleep, Timer } from './index.js';
import { FakeClock } from './testing.js';

describe('Timer', () => {
  it('holds one callback: start() replaces it, startIfIdle() keeps it, cancel() drops it', () => {
    const clock = new FakeClock();
    const t0 = clock.now();
    const runs: string[] = [];
    const t = new Timer(clock);
    t.start(10, () => runs.push(`a@${clock.now() - t0}`));
    t.start(20, () => runs.push(`b@${clock.now() - t0}`));
    t.startIfIdle(5, () => runs.push('c'));
    expect(t.pending).toBe(true);
    expect(clock.pending).toBe(1);
    clock.advance(30);
    expect(runs).toEqual(['b@20']);
    expect(t.pending).toBe(false);
    t.start(10, () => runs.push('d'));
    t.cancel();
    t.cancel();
    clock.advance(30);
    expect(runs).toEqual(['b@20']);
    expect(clock.pending).toBe(0);
  });

  it('a callback may start the next one', () => {
    const clock = new FakeClock();
    const t = new Timer(clock);
    let n = 0;
    const tick = (): void => {
      if (++n < 3) t.start(10, tick);
    };
    t.start(10, tick);
    clock.advance(100);
    expect(n).toBe(3);
    expect(t.pending).toBe(false);
  });
});

describe('sleep', () => {
  it('resolves when the clock has moved by ms, not before', async () => {
    const clock = new FakeClock();
    let done = false;
    const p = sleep(clock, 50).then(() => (done = true));
    await clock.advanceAsync(49);
    expect(done).toBe(false);
    await clock.advanceAsync(1);
    await p;
    expect(done).toBe(true);
  });

  it('rejects with the reason when the signal aborts first, and clears its timer', async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const p = sleep(clock, 50, { signal: ac.signal });
    ac.abort(new Error('stopped'));
    await expect(p).rejects.toThrow('stopped');
    expect(clock.pending).toBe(0);
    await expect(sleep(clock, 1, { signal: ac.signal })).rejects.toThrow('stopped');
  });
});
