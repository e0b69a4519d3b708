// The clock of cluster mode: monotonic, in milliseconds, and the same in every process
// of the machine (CLOCK_MONOTONIC through process.hrtime), so histories recorded by
// several processes can be compared. Wall-clock time (Date.now()) can jump and would
// make a lease look valid for longer than it is.
import type { Clock } from '../statedb/index.js';

export const monotonicClock: Clock = {
  now: () => Number(process.hrtime.bigint()) / 1e6,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
