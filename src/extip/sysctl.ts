// What cluster mode needs the kernel to leave to fibkeeper on the external interface. A
// cluster IP sits on the holder of whichever node owns it, and an agent that was SIGKILLed
// or hangs leaves it there: the kernel must not speak for it on the segment, or two nodes
// would answer for one IP. So, on the external interface (the effective value is the
// larger of `all` and the interface's own, for both):
//
//   net.ipv4.conf.IFACE.arp_ignore   = 1  answer ARP only for addresses of the receiving
//                                         interface: never for the holder's (fibkeeper's
//                                         responder answers while the node holds a lease)
//   net.ipv4.conf.IFACE.arp_announce = 2  the kernel's own ARP requests carry an address of
//                                         the outgoing interface as sender, never a holder
//                                         address (which would re-point the segment's caches)
//
// IPv6 needs no setting: the kernel answers a neighbor solicitation only for an address of
// the receiving interface, its anycast addresses and proxy entries (`ip -6 neigh add proxy`,
// which must not exist for a cluster IP), and it picks an address of the outgoing interface
// as the source of its own solicitations (ndisc_recv_ns, ndisc_solicit).
import { writeFileSync } from 'node:fs';
import { FibkeeperError } from '../errors/index.js';
import { runInNetns } from '../native/index.js';
import { readNetSysctl } from './external.js';

export interface ClusterSysctl {
  readonly key: 'arp_ignore' | 'arp_announce';
  /** The least effective value that keeps the kernel quiet for holder addresses. */
  readonly want: number;
}

export const CLUSTER_SYSCTLS: readonly ClusterSysctl[] = [
  { key: 'arp_ignore', want: 1 },
  { key: 'arp_announce', want: 2 },
];

export interface SysctlState {
  key: string;
  /** max(all, iface) */
  effective: number;
  want: number;
}

/** The effective values on `iface` (read in `netns`). */
export function readClusterSysctls(netns: string | undefined, iface: string): SysctlState[] {
  const read = (): SysctlState[] =>
    CLUSTER_SYSCTLS.map(({ key, want }) => {
      const num = (p: string): number => Number(readNetSysctl(undefined, p) ?? '0') || 0;
      const effective = Math.max(num(`ipv4/conf/all/${key}`), num(`ipv4/conf/${iface}/${key}`));
      return { key: `net.ipv4.conf.${iface}.${key}`, effective, want };
    });
  return netns === undefined ? read() : runInNetns(netns, read);
}

/**
 * Sets every cluster sysctl of `iface` whose effective value is too low (the interface's
 * own value; `all` is left alone) and reads them back. Returns the keys it set. Throws a
 * FibkeeperError naming the sysctl and the fix when one cannot be set (a read-only
 * /proc/sys, as in a container).
 */
export function enforceClusterSysctls(netns: string | undefined, iface: string): string[] {
  const run = (): string[] => {
    const set: string[] = [];
    for (const s of readClusterSysctls(undefined, iface)) {
      if (s.effective >= s.want) continue;
      const name = s.key.slice(s.key.lastIndexOf('.') + 1);
      try {
        writeFileSync(`/proc/sys/net/ipv4/conf/${iface}/${name}`, `${s.want}\n`);
      } catch (err) {
        throw new FibkeeperError(
          `cluster mode needs ${s.key} = ${s.want} (it is ${s.effective}) so that the kernel never answers for the holder's addresses, and cannot set it (${(err as Error).message}); set it before the agent starts (sysctl -w ${s.key}=${s.want}; the DaemonSet's init container runs \`fibkeeper cluster prepare\`) or give the agent write access to /proc/sys`,
          { cause: err },
        );
      }
      set.push(s.key);
    }
    const low = readClusterSysctls(undefined, iface).filter((s) => s.effective < s.want);
    if (low.length > 0) {
      throw new FibkeeperError(
        `cluster mode: ${low.map((s) => `${s.key} is ${s.effective}, not ${s.want}`).join('; ')} after setting it`,
      );
    }
    return set;
  };
  return netns === undefined ? run() : runInNetns(netns, run);
}
