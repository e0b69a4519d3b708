// Traffic-control calls, each the equivalent of a `tc` command (read only: fibkeeper looks at
// what the node configured, it configures no tc itself).
import type { Client } from './client.js';
import {
  formatFilterDump,
  formatQdiscDump,
  NetlinkError,
  parseTcObject,
  type TcObject,
} from './codec/index.js';

/** qdiscList — like `tc qdisc show` (every device). */
export function qdiscList(c: Client): Promise<TcObject[]> {
  return c.dump((w) => formatQdiscDump(w), parseTcObject, 'tc qdisc show');
}

/**
 * filterList — like `tc filter show dev DEV parent PARENT` (every chain): TC_PARENT_INGRESS
 * for `ingress`, TC_PARENT_EGRESS for `egress`. A device without such a block answers
 * EINVAL or ENOENT, reported as no filters.
 */
export async function filterList(c: Client, ifindex: number, parent: number): Promise<TcObject[]> {
  try {
    return await c.dump(
      (w) => formatFilterDump(w, ifindex, parent),
      parseTcObject,
      `tc filter show dev ${ifindex} parent ${parent.toString(16)}`,
    );
  } catch (err) {
    const none = ['EINVAL', 'ENOENT', 'EOPNOTSUPP', 'ENODEV'];
    if (err instanceof NetlinkError && none.includes(err.errnoName)) return [];
    throw err;
  }
}
