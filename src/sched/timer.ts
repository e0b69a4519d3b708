// One-shot time on the injected clock, for code with a single thing pending (a retry, a
// deadline, a debounce): Timer holds at most one callback; sleep() awaits a delay. Code
// outside src/sched uses these, Periodic and KeyScheduler instead of the clock's raw
// setTimeout/clearTimeout, so every wait in the agent is one a FakeClock can drive.
import type { Clock, TimerHandle } from './clock.js';

export interface TimerOptions {
  /** A pending callback of the process clock does not keep the process alive (default: it does). */
  unref?: boolean;
}

/** At most one pending callback on a clock. */
export class Timer {
  readonly #clock: Clock;
  readonly #unref: boolean;
  #handle: TimerHandle | undefined;

  constructor(clock: Clock, opts: TimerOptions = {}) {
    this.#clock = clock;
    this.#unref = opts.unref === true;
  }

  /** True while a callback is pending (set and neither run nor cancelled). */
  get pending(): boolean {
    return this.#handle !== undefined;
  }

  /** Runs `fn` in `ms`, replacing the pending callback if there is one. */
  start(ms: number, fn: () => void): void {
    this.cancel();
    const handle = this.#clock.setTimeout(() => {
      if (this.#handle === handle) this.#handle = undefined;
      fn();
    }, ms);
    this.#handle = handle;
    if (this.#unref) unref(handle);
  }

  /** Like start(), but keeps a callback that is already pending (the first due time wins). */
  startIfIdle(ms: number, fn: () => void): void {
    if (this.#handle === undefined) this.start(ms, fn);
  }

  /** Drops the pending callback. Cancelling when nothing is pending is not an error. */
  cancel(): void {
    if (this.#handle !== undefined) this.#clock.clearTimeout(this.#handle);
    this.#handle = undefined;
  }
}

/**
 * Resolves after `ms` on `clock`; rejects with the signal's reason when it aborts first (the
 * timer is then cleared).
 */
export function sleep(
  clock: Clock,
  ms: number,
  opts: TimerOptions & { signal?: AbortSignal } = {},
): Promise<void> {
  const { signal } = opts;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (opts.unref === true) unref(handle);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Timers of the process clock have unref(); fake handles have none. */
export function unref(handle: TimerHandle): void {
  (handle as { unref?: () => void }).unref?.();
}
