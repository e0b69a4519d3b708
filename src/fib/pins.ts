// Where the loader pins things on the bpffs, and making sure there is a bpffs to pin on.
//
//   <pinDir>/ns<inode>/                 one directory per network namespace (nsfs inode)
//     maps/fk_tx_ports, fk_stats, fk_miss   the maps every program instance shares
//     dev/<device name>/prog             the device's program instance (its slot inside)
//     dev/<device name>/cfg              that instance's rodata (fk_config: slot, flags)
//     dev/<device name>/link             the XDP bpf_link (absent while the device is gone)
//
// The namespace directory keeps agents of different namespaces that share a pinDir apart,
// and lets `fibkeeper xdp detach --netns NS` find what the agent of NS pinned.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { FibkeeperError, NotFoundError, describeError, errnoCode } from '../errors/index.js';
import { isBpffs, mountBpffs } from '../native/index.js';
import type { Logger } from '../log/index.js';

/** The conventional bpffs mount point: mounted there, when nothing is, instead of pinDir. */
const SYS_FS_BPF = '/sys/fs/bpf';

/** The nsfs inode of `netns` (a name under /run/netns, a path, or undefined: our own). */
export function netnsInode(netns: string | undefined): number {
  const path =
    netns === undefined
      ? '/proc/self/ns/net'
      : netns.startsWith('/')
        ? netns
        : join('/run/netns', netns);
  try {
    return statSync(path).ino;
  } catch (err) {
    throw new NotFoundError(`network namespace ${netns ?? '(own)'}: ${describeError(err)}`, {
      cause: err,
    });
  }
}

export interface PinPaths {
  root: string;
  maps: string;
  dev: string;
}

export function pinPaths(pinDir: string, netns: string | undefined): PinPaths {
  const root = join(resolve(pinDir), `ns${netnsInode(netns)}`);
  return { root, maps: join(root, 'maps'), dev: join(root, 'dev') };
}

export function devPaths(
  p: PinPaths,
  name: string,
): { dir: string; prog: string; cfg: string; link: string } {
  const dir = join(p.dev, name);
  return { dir, prog: join(dir, 'prog'), cfg: join(dir, 'cfg'), link: join(dir, 'link') };
}

function nearestExisting(path: string): string {
  let p = path;
  while (!existsSync(p)) {
    const up = dirname(p);
    if (up === p) break;
    p = up;
  }
  return p;
}

function mountOrExplain(at: string, log: Logger): void {
  try {
    mountBpffs(at);
    log.info({ path: at }, 'mounted a bpffs');
  } catch (err) {
    throw new FibkeeperError(
      `no bpffs at ${at} and mounting one failed (${errnoCode(err) ?? describeError(err)}): ` +
        `mount it beforehand (mount -t bpf bpf ${at}) or give the agent CAP_SYS_ADMIN`,
      { cause: err, code: 'FIBKEEPER_ERR_PERMISSION' },
    );
  }
}

/**
 * Makes `pinDir` a directory on a bpffs: nothing to do when it is one; mkdir -p when its
 * nearest existing ancestor is on a bpffs; else mount a bpffs on /sys/fs/bpf when pinDir
 * lies below an empty, unmounted /sys/fs/bpf, or on pinDir itself (created if needed).
 * Throws with the fix when mounting is not allowed. Returns whether it mounted.
 */
export function ensureBpffs(pinDir: string, log: Logger): boolean {
  const dir = resolve(pinDir);
  if (existsSync(dir) && isBpffs(dir)) return false;
  const base = nearestExisting(dir);
  let mounted = false;
  if (!isBpffs(base)) {
    if (base === SYS_FS_BPF && dir.startsWith(`${SYS_FS_BPF}/`)) {
      mountOrExplain(SYS_FS_BPF, log);
    } else {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      mountOrExplain(dir, log);
    }
    mounted = true;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!isBpffs(dir)) throw new FibkeeperError(`${dir} is not on a bpffs after mounting one`);
  return mounted;
}

/** Names of the device records pinned under `p.dev` (directories). */
export function pinnedDevices(p: PinPaths): string[] {
  if (!existsSync(p.dev)) return [];
  return readdirSync(p.dev, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** Unpins `path` (file or directory tree); a path that does not exist is not an error. */
export function unpin(path: string): void {
  rmSync(path, { recursive: true, force: true });
}
