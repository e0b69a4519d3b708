// `--watch` (`-w`): print again whenever the agent reports a change, as `kubectl get -w`
// does — driven by the event stream (GET /v1/events?follow=1), never by polling. Events
// that come together are one redraw (a burst of them waits DEBOUNCE_MS for the rest), and a
// redraw never runs while the one before it still waits for its answer.
import type { ApiClient } from '../api/index.js';
import { systemClock, Timer, type Clock } from '../sched/index.js';

/** How long a redraw waits for more events of the same change, ms. */
export const DEBOUNCE_MS = 100;

/**
 * Calls `redraw` after each change since `since` (the time of the first drawing: a change
 * between it and the stream's start is not missed) until the stream ends (the agent
 * stopped: resolves false) or `signal` aborts (resolves true).
 */
export async function watchChanges(
  client: ApiClient,
  since: Date,
  redraw: () => Promise<void>,
  signal?: AbortSignal,
  clock: Clock = systemClock,
): Promise<boolean> {
  const timer = new Timer(clock);
  let running: Promise<void> | undefined;
  let again = false;
  const run = async (): Promise<void> => {
    if (running !== undefined) {
      again = true;
      return;
    }
    running = redraw().finally(() => {
      running = undefined;
      if (again) ((again = false), kick());
    });
    await running;
  };
  const kick = () => {
    timer.startIfIdle(DEBOUNCE_MS, () => void run());
  };
  const q = new URLSearchParams({ follow: '1', since: since.toISOString() });
  await client.stream(`/v1/events?${q}`, kick, signal);
  timer.cancel();
  await running;
  return signal?.aborted === true;
}
