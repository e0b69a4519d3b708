// sched: time for every subsystem — the Clock interface and the process's clocks, the one
// exponential backoff, the token-bucket RateLimiter, and the one deadline scheduler (a keyed
// heap of due times, with a clock timer on top), and one-shot Timer/sleep. Pure: time and timers come from an injected
// Clock, nothing sleeps. Tests drive them with the FakeClock of testing.ts. This file is the
// package's whole public surface.
//
//   const s = new KeyScheduler(clock, (keys) => keys.forEach(retry));
//   s.at('10.0.0.2', clock.now() + backoff(100, 60_000, failures));
export type { Clock, TimerHandle } from './clock.js';
export { systemClock, monotonicClock } from './clock.js';
export { backoff } from './backoff.js';
export { RateLimiter } from './ratelimit.js';
export type { RateLimiterOptions } from './ratelimit.js';
export { Deadlines } from './deadlines.js';
export type { Deadline } from './deadlines.js';
export { KeyScheduler, Periodic } from './scheduler.js';
export type { KeySchedulerOptions } from './scheduler.js';
export { Timer, sleep } from './timer.js';
export type { TimerOptions } from './timer.js';
