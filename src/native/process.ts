// The process beyond what Node offers: a stop deadline that no waiting can hold up.
import { InvalidArgumentError } from '../errors/index.js';
import { binding } from './binding.js';

/**
 * Ends the process with `code` after `ms`, writing `message` (one line) to stderr first,
 * from a thread of its own: whatever the event loop waits for (a netlink reply that never
 * comes, a send thread stuck in the kernel) cannot hold it up. Cannot be disarmed.
 */
export function exitAfter(ms: number, code: number, message: string): void {
  if (!Number.isInteger(ms) || ms < 0) throw new InvalidArgumentError(`exitAfter: bad ms ${ms}`);
  binding().exitAfter(ms, code, message.endsWith('\n') ? message : `${message}\n`);
}

/**
 * Gives the C heap's free pages back to the kernel, on a thread of the addon (glibc's
 * malloc_trim; the event loop does not wait). False where the C library has no such call.
 */
export function trimHeap(): boolean {
  return binding().trimHeap();
}
