// A scratch network namespace for probes that must create links and neighbor entries
// (as Cilium does for managed neighbors): created, used, and always deleted.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { FibkeeperError } from '../errors/index.js';
import { NetlinkHandle } from '../netlink/index.js';

export interface Scratch {
  netns: string;
  nl: NetlinkHandle;
  /** ifindex of a veth end that is up (its peer is up too), made on first use. */
  veth(): Promise<number>;
}

function ip(args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new FibkeeperError(`ip ${args.join(' ')}: ${r.error?.message ?? r.stderr.trim()}`, {
      code: 'FIBKEEPER_ERR_SYSTEM',
    });
  }
}

export async function withScratchNetns<T>(fn: (s: Scratch) => Promise<T>): Promise<T> {
  const netns = `fkprobe-${process.pid}-${randomBytes(3).toString('hex')}`;
  ip(['netns', 'add', netns]);
  let nl: NetlinkHandle | undefined;
  try {
    nl = NetlinkHandle.open({ netns });
    const handle = nl;
    let vethIndex: number | undefined;
    return await fn({
      netns,
      nl: handle,
      async veth() {
        if (vethIndex === undefined) {
          await handle.linkAdd({ name: 'probe0', kind: 'veth', peer: { name: 'probe1' } });
          await handle.linkSetUp('probe1');
          await handle.linkSetUp('probe0');
          vethIndex = await handle.ifindex('probe0');
        }
        return vethIndex;
      },
    });
  } finally {
    nl?.close();
    spawnSync('ip', ['netns', 'del', netns]);
  }
}
