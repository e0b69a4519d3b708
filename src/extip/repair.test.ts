import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { FakeClock } from '../sched/testing.js';
import type { Holder } from './holder.js';
import type { ExtipMetrics } from './metrics.js';
import { HolderRepair } from './repair.js';

/** A holder whose recreation fails once the test lets it: ensure() waits for `fail()`. */
function failingHolder(): { holder: Holder; fail: () => void; ensures: () => number } {
  let calls = 0;
  let reject: ((e: Error) => void) | undefined;
  const holder = {
    name: 'fkholder0',
    markGone: () => undefined,
    ensure: () => {
      calls++;
      return new Promise<{ created: boolean }>((_res, rej) => {
        reject = rej;
      });
    },
  } as unknown as Holder;
  return { holder, fail: () => reject?.(new Error('EBUSY')), ensures: () => calls };
}

describe('HolderRepair', () => {
  it('stop() ends at once when an attempt fails after it was asked: no backoff pause starts', async () => {
    const clock = new FakeClock();
    const { holder, fail, ensures } = failingHolder();
    const errors: string[] = [];
    const repair = new HolderRepair({
      nl: {
        linkGet: () => Promise.reject(new Error('unused')),
        linkSetUp: () => Promise.resolve(),
      },
      holder,
      assigner: { holderLost: () => undefined, holderBack: () => undefined },
      metrics: {
        error: (k: string) => errors.push(k),
        repaired: () => undefined,
      } as unknown as ExtipMetrics,
      log: silentLogger(),
      clock,
    });
    void repair.recreate();
    expect(ensures()).toBe(1);
    let stopped = false;
    const stopping = repair.stop().then(() => {
      stopped = true;
    });
    fail(); // the attempt under way fails after stop() was asked
    // No time passes on the clock: stop() must not wait for the 100 ms backoff pause.
    for (let i = 0; i < 20 && !stopped; i++) await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect(errors).toEqual(['repair']);
    expect(stopped).toBe(true);
    expect(clock.pending).toBe(0);
    await stopping;
  });
});
