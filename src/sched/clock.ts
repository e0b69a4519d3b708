// Time and timers, injected so that tests can drive them (testing.ts has the fake).
// Two clocks: the process's wall clock for the single-node subsystems, and the monotonic
// one of cluster mode.

export type TimerHandle = unknown;

/** Time and timers, injected so that tests can drive them. */
export interface Clock {
  /** Milliseconds; only differences are used. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

const setTimer = (fn: () => void, ms: number): TimerHandle => setTimeout(fn, ms);
const clearTimer = (handle: TimerHandle): void =>
  clearTimeout(handle as ReturnType<typeof setTimeout>);

/**
 * The process clock. Globals are looked up at call time, so fake timers installed after the
 * clock was created still take effect.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: setTimer,
  clearTimeout: clearTimer,
};

/**
 * The clock of cluster mode: monotonic, in milliseconds, and the same in every process
 * of the machine (CLOCK_MONOTONIC through process.hrtime), so histories recorded by
 * several processes can be compared. Wall-clock time (Date.now()) can jump and would
 * make a lease look valid for longer than it is.
 */
export const monotonicClock: Clock = {
  now: () => Number(process.hrtime.bigint()) / 1e6,
  setTimeout: setTimer,
  clearTimeout: clearTimer,
};
