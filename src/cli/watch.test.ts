// The redraws of --watch on the fake clock: one per burst of events, never two at once.
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../api/index.js';
import { FakeClock, turns } from '../sched/testing.js';
import { DEBOUNCE_MS, watchChanges } from './watch.js';

/** A client whose event stream the test drives: push events, end the stream. */
function client() {
  let push: (e: unknown) => void = () => undefined;
  let end: () => void = () => undefined;
  const paths: string[] = [];
  const c = {
    stream(path: string, onItem: (e: unknown) => void) {
      paths.push(path);
      push = onItem;
      return new Promise<void>((r) => (end = r));
    },
  } as unknown as ApiClient;
  const events = (n: number) => {
    for (let i = 0; i < n; i++) push({ seq: i, type: 'neighbor.written' });
  };
  return { c, paths, events, end: () => end() };
}

describe('watchChanges', () => {
  it('redraws once per burst of events, and says the stream ended by itself', async () => {
    const clock = new FakeClock();
    const s = client();
    let redraws = 0;
    const since = new Date('2026-01-01T00:00:00Z');
    const done = watchChanges(s.c, since, async () => void redraws++, undefined, clock);
    for (const n of [50, 1, 20]) {
      s.events(n);
      await clock.advanceAsync(DEBOUNCE_MS - 1);
      s.events(3); // more of the same change, within the window
      await clock.advanceAsync(1);
    }
    s.end();
    expect(await done).toBe(false);
    expect(redraws).toBe(3);
    expect(s.paths).toEqual(['/v1/events?follow=1&since=2026-01-01T00%3A00%3A00.000Z']);
  });

  it('never runs two redraws at once: events during a slow one give one more after it', async () => {
    const clock = new FakeClock();
    const s = client();
    let running = 0;
    let most = 0;
    let redraws = 0;
    let finish: () => void = () => undefined;
    const done = watchChanges(
      s.c,
      new Date(),
      async () => {
        running++;
        most = Math.max(most, running);
        redraws++;
        await new Promise<void>((r) => (finish = r));
        running--;
      },
      undefined,
      clock,
    );
    s.events(1);
    await clock.advanceAsync(DEBOUNCE_MS); // redraw 1 starts and waits
    for (let i = 0; i < 3; i++) {
      s.events(1);
      await clock.advanceAsync(DEBOUNCE_MS); // due while redraw 1 runs: only noted
    }
    expect(redraws).toBe(1);
    finish();
    await turns(3);
    await clock.advanceAsync(DEBOUNCE_MS); // the one more
    expect(redraws).toBe(2);
    finish();
    s.end();
    await done;
    expect(most).toBe(1);
    expect(clock.pending).toBe(0);
  });
});
