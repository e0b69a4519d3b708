// Every wait goes through the injected clock (src/sched: Clock, Timer, sleep, Periodic,
// KeyScheduler), so that a FakeClock drives it in tests: no file of src/ outside src/sched
// names setTimeout or setInterval, not even a clock's (tests included: they advance a
// FakeClock, or wait for the counter that proves a round ran). Allowed: src/demo and
// src/lab (demonstrations in real time), nothing else: every module is converted (the list
// of modules still being converted, ALLOWED_NOW, emptied with src/neighbor, is gone).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sourceFiles } from '../helpers/imports.js';

/** Where raw timers stay: the clock itself and the real-time demonstrations. */
const ALLOWED = ['src/sched/', 'src/demo/', 'src/lab/'];

/** Lines of `text` that name a raw timer. */
function rawTimers(text: string): string[] {
  return text.split('\n').filter((l) => /\bset(?:Timeout|Interval)\b/.test(l));
}

describe('timers', () => {
  it('go through the injected clock everywhere in src/ outside src/sched', () => {
    const found = sourceFiles('src')
      .filter((f) => !ALLOWED.some((a) => f.startsWith(a)))
      .flatMap((f) =>
        rawTimers(readFileSync(join(ROOT, f), 'utf8')).map((l) => `${f}: ${l.trim()}`),
      );
    expect(found).toEqual([]);
  });

  it('the check finds a raw timer, a clock timer and an interval, not a Timer', () => {
    const text = [
      'const t = setTimeout(fn, 10);',
      'this.#clock.setTimeout(() => undefined, 5);',
      'setInterval(tick, 1000).unref();',
      'new Timer(clock).start(10, fn);',
      'await sleep(clock, 200);',
    ].join('\n');
    expect(rawTimers(text)).toEqual([
      'const t = setTimeout(fn, 10);',
      'this.#clock.setTimeout(() => undefined, 5);',
      'setInterval(tick, 1000).unref();',
    ]);
  });
});
