import { describe, expect, it } from 'vitest';
import { FakeClock } from './testing.js';

describe('FakeClock', () => {
  it('fires due timers in (due, creation) order, each at its own time; cleared ones never', () => {
    const c = new FakeClock();
    const t0 = c.now();
    const seen: string[] = [];
    const at = (name: string) => () => seen.push(`${name}@${c.now() - t0}`);
    c.setTimeout(at('b'), 20);
    c.setTimeout(at('a'), 10);
    c.setTimeout(at('c'), 20);
    c.clearTimeout(c.setTimeout(at('x'), 5));
    c.setTimeout(() => c.setTimeout(at('nested'), 0), 15);
    expect(c.pending).toBe(4);
    c.advance(30);
    expect(seen).toEqual(['a@10', 'nested@15', 'b@20', 'c@20']);
    expect(c.now() - t0).toBe(30);
    expect(c.pending).toBe(0);
  });

  it('jump() moves time without firing; the late timers run at the next advance', () => {
    const c = new FakeClock();
    let ran = 0;
    c.setTimeout(() => ran++, 10);
    c.jump(100);
    expect(ran).toBe(0);
    c.advance(0);
    expect(ran).toBe(1);
  });

  it('advanceAsync() lets promises settle between timers', async () => {
    const c = new FakeClock();
    const seen: string[] = [];
    c.setTimeout(() => void Promise.resolve().then(() => seen.push('first settled')), 10);
    c.setTimeout(() => seen.push('second'), 20);
    await c.advanceAsync(20);
    expect(seen).toEqual(['first settled', 'second']);
  });
});
