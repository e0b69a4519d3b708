// The C heap's free pages back to the kernel, every HEAP_TRIM_MS. The agent's churn (request
// bodies, netlink messages, V8's off-heap buffers) allocates and frees in the C heap; glibc's
// free() gives back only the top of an arena, so the pages freed in the middle stayed in the
// agent's RSS: 5.8 MiB idle and 9.0 MiB with 100,000 forwardable IPs loaded, measured with
// one malloc_trim(0) called into the running agent (docs/neighbor.md, "The C heap").
import { trimHeap } from '../native/index.js';
import { Periodic, systemClock } from '../sched/index.js';

/** How often: a trim of a settled heap costs a thread and a walk of the free lists. */
export const HEAP_TRIM_MS = 1000;

/** Starts the trims; the returned function stops them. */
export function startHeapTrim(): () => void {
  const p = new Periodic(systemClock, HEAP_TRIM_MS, () => void trimHeap(), { unref: true });
  p.start();
  return () => p.stop();
}
