// One agent per managed network namespace: the agent holds an exclusive flock on the
// namespace itself (its nsfs file: /run/netns/NAME, a given path, or our own
// /proc/thread-self/ns/net — every path to one namespace is one inode, so two agents collide
// whatever their config paths, and the lock ends with the process, also on SIGKILL). A
// second lock on `<stateFile>.lock` keeps two agents off one state file. The holder's PID
// comes from /proc/locks.
import { closeSync, mkdirSync, openSync, readFileSync, fstatSync, constants } from 'node:fs';
import { dirname } from 'node:path';
import { ConflictError, FibkeeperError, NotFoundError } from '../errors/index.js';
import { flockFd } from '../native/index.js';

/** The nsfs file of a namespace as the config names it ('' = the agent's own). */
export function netnsPath(netns: string): string {
  if (netns === '') return '/proc/thread-self/ns/net';
  return netns.startsWith('/') ? netns : `/run/netns/${netns}`;
}

/** The PID holding a flock on the file with this device and inode, from /proc/locks. */
export function lockHolder(dev: number, ino: number, locks?: string): number | undefined {
  const text = locks ?? readFileSync('/proc/locks', 'utf8');
  // "1: FLOCK  ADVISORY  WRITE 2472 00:04:4026532177 0 EOF" (major:minor in hex)
  const major = ((dev >> 8) & 0xfff) | ((dev / 2 ** 32) & ~0xfff);
  const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
  for (const line of text.split('\n')) {
    const m = /^\d+:\s+FLOCK\s+\S+\s+\S+\s+(-?\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (!m) continue;
    if (
      Number(m[4]) === ino &&
      parseInt(m[2] as string, 16) === major &&
      parseInt(m[3] as string, 16) === minor
    ) {
      return Number(m[1]);
    }
  }
  return undefined;
}

export interface AgentLock {
  /** Releases both locks (idempotent). */
  release(): void;
}

function take(what: string, opener: () => number): () => void {
  const fd = opener();
  try {
    if (!flockFd(fd, { exclusive: true })) {
      const st = fstatSync(fd);
      const pid = lockHolder(st.dev, st.ino);
      throw new ConflictError(
        `another fibkeeper agent (${pid === undefined ? 'pid unknown' : `pid ${pid}`}) ${what}; ` +
          'one agent per namespace: stop it first, or point this one at another namespace',
      );
    }
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  let open = true;
  return () => {
    if (open) closeSync(fd);
    open = false;
  };
}

/**
 * Takes the namespace lock, then the state-file lock; throws ConflictError naming the PID
 * of the agent that holds either, and changes nothing.
 */
export function acquireAgentLock(opts: { netns: string; stateFile: string }): AgentLock {
  const nsPath = netnsPath(opts.netns);
  const releases: (() => void)[] = [];
  try {
    releases.push(
      take(`manages the network namespace ${opts.netns || '(its own)'}`, () => {
        try {
          return openSync(nsPath, constants.O_RDONLY);
        } catch (err) {
          throw new NotFoundError(
            `network namespace ${opts.netns}: cannot open ${nsPath} (${(err as NodeJS.ErrnoException).code}); create it (ip netns add) or fix netns`,
            { cause: err },
          );
        }
      }),
    );
    if (opts.stateFile !== '') {
      const lockPath = `${opts.stateFile}.lock`;
      releases.push(
        take(`uses the state file ${opts.stateFile}`, () => {
          try {
            mkdirSync(dirname(lockPath), { recursive: true, mode: 0o750 });
            return openSync(lockPath, constants.O_RDWR | constants.O_CREAT, 0o600);
          } catch (err) {
            throw new FibkeeperError(`cannot open the lock file ${lockPath}`, {
              cause: err,
              code: 'FIBKEEPER_ERR_SYSTEM',
            });
          }
        }),
      );
    }
  } catch (err) {
    for (const r of releases.reverse()) r();
    throw err;
  }
  return {
    release() {
      for (const r of releases.splice(0).reverse()) r();
    },
  };
}
