// Network namespaces, bpffs mounts and file locks: small kernel-side helpers for the other
// subsystems.
import { InvalidArgumentError } from '../errors/index.js';
import { checkFunction, checkNetns, checkPath, checkUint } from './args.js';
import { binding } from './binding.js';

/**
 * Runs `fn` with the calling thread inside the network namespace `netns` (a name under
 * /run/netns or an absolute path), and always moves the thread back afterwards, also when
 * `fn` throws. `fn` must be synchronous: only code that runs before it returns is inside the
 * namespace (ifindexes for XDP attach, bpf_prog_test_run and bpf_fib_lookup resolve there).
 */
export function runInNetns<T>(netns: string, fn: () => T): T {
  checkNetns('netns', netns);
  checkFunction('fn', fn);
  const result = binding().runInNetns(netns, fn);
  if (result instanceof Promise) {
    result.catch(() => undefined);
    throw new InvalidArgumentError('runInNetns: fn must be synchronous (it returned a Promise)');
  }
  return result;
}

/** Mounts a bpffs at `path` (`mount -t bpf bpf PATH -o mode=MODE`), default mode 0700. */
export function mountBpffs(path: string, mode = 0o700): void {
  binding().mountBpffs(checkPath('path', path), checkUint('mode', mode, 0o7777));
}

/** Unmounts whatever is mounted at `path` (`umount2`, MNT_DETACH when `lazy`). */
export function unmount(path: string, opts: { lazy?: boolean } = {}): void {
  binding().unmount(checkPath('path', path), opts.lazy === true);
}

/** Whether `path` lies on a bpffs (statfs magic), i.e. BPF objects can be pinned there. */
export function isBpffs(path: string): boolean {
  return binding().isBpffs(checkPath('path', path));
}

/**
 * `flock(fd, LOCK_EX | LOCK_NB)` (or LOCK_SH): true when taken, false when another open file
 * holds a conflicting lock. The lock lasts while the file is open (and ends with the process).
 */
export function flockFd(fd: number, opts: { exclusive?: boolean; wait?: boolean } = {}): boolean {
  return binding().flockFd(
    checkUint('fd', fd, 0x7fff_ffff),
    opts.exclusive !== false,
    opts.wait === true,
  );
}
