// A scratch network namespace for probes that must create links and neighbor entries
// (as Cilium does for managed neighbors): created, used, and always deleted. A process
// killed while probing cannot delete its namespace, so each probe first deletes those left
// by processes that no longer run (their pid is in the name).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
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

const SCRATCH_RE = /^fkprobe-(\d+)-[0-9a-f]{6}$/;

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Deletes scratch namespaces whose creator no longer runs; returns their names. */
export function sweepStaleScratch(): string[] {
  let names: string[];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return [];
  }
  const stale = names.filter((n) => {
    const pid = SCRATCH_RE.exec(n)?.[1];
    return pid !== undefined && !running(Number(pid));
  });
  for (const n of stale) spawnSync('ip', ['netns', 'del', n]);
  return stale;
}

export async function withScratchNetns<T>(fn: (s: Scratch) => Promise<T>): Promise<T> {
  sweepStaleScratch();
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
