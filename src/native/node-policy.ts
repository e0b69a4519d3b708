// What the node configured that no netlink family shows: BPF programs on a device's tcx hooks
// and the legacy iptables tables (their entries are parsed by src/fib).
import { InvalidArgumentError } from '../errors/index.js';
import { checkNetns, checkUint } from './args.js';
import { binding } from './binding.js';

/**
 * The ids of the BPF programs on `ifindex`'s tcx ingress or egress hook (Linux 6.6+), in run
 * order; undefined when the kernel has no tcx.
 */
export function tcxQuery(
  ifindex: number,
  direction: 'ingress' | 'egress',
  opts: { netns?: string } = {},
): number[] | undefined {
  if (direction !== 'ingress' && direction !== 'egress') {
    throw new InvalidArgumentError(`tcx direction must be ingress or egress, got ${direction}`);
  }
  const netns = opts.netns === undefined ? undefined : checkNetns('netns', opts.netns);
  const ids = binding().tcxQuery(
    checkUint('ifindex', ifindex, 0x7fff_ffff, 1),
    direction === 'egress',
    netns,
  );
  return ids ?? undefined;
}

/**
 * A legacy iptables (4) or ip6tables (6) table as the kernel holds it: struct ipt_getinfo and,
 * with `entries`, the entries (IPT_SO_GET_INFO, IPT_SO_GET_ENTRIES; else an empty buffer);
 * undefined when it does not exist. Asking for a table that does not exist yet creates it:
 * read /proc/net/ip_tables_names first.
 */
export function iptablesTable(
  family: 4 | 6,
  name: string,
  opts: { netns?: string; entries?: boolean } = {},
): { info: Buffer; entries: Buffer } | undefined {
  if (family !== 4 && family !== 6) {
    throw new InvalidArgumentError(`iptables family must be 4 or 6, got ${family}`);
  }
  if (!/^[a-z0-9_]{1,31}$/.test(name)) {
    throw new InvalidArgumentError(`not an iptables table name: ${JSON.stringify(name)}`);
  }
  const netns = opts.netns === undefined ? undefined : checkNetns('netns', opts.netns);
  return binding().iptablesTable(family, name, netns, opts.entries ?? true) ?? undefined;
}
