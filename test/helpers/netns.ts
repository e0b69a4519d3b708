// Helpers for privileged tests: unique network namespaces that are always deleted, `ip`
// wrappers that run inside them, and the root check that fails (never skips) in CI.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, onTestFinished } from 'vitest';

/** Fails the test when privileges are missing and FIBKEEPER_REQUIRE_PRIVILEGED=1; else skips. */
export function privileged(): { skip: boolean } {
  const root = process.getuid?.() === 0;
  if (!root && process.env.FIBKEEPER_REQUIRE_PRIVILEGED === '1') {
    throw new Error(
      'privileged tests need root and FIBKEEPER_REQUIRE_PRIVILEGED=1 forbids skipping them: run as root',
    );
  }
  return { skip: !root };
}

const created = new Set<string>();

function deleteNetns(name: string): void {
  // Kill anything we started inside it first (pids listed by `ip netns pids`).
  const pids = spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8' });
  for (const pid of pids.stdout?.split(/\s+/).filter(Boolean) ?? []) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  spawnSync('ip', ['netns', 'del', name]);
  created.delete(name);
}

afterAll(() => {
  for (const name of [...created]) deleteNetns(name);
});

/**
 * Creates a network namespace with a unique name (prefix `fkt-`), brings its loopback up,
 * and deletes it when the current test ends (pass or fail), or at the end of the file when
 * called outside a test.
 */
export function makeNetns(tag = 'ns', opts: { scope?: 'test' | 'file' } = {}): string {
  const name = `fkt-${tag}-${randomBytes(4).toString('hex')}`.slice(0, 30);
  execFileSync('ip', ['netns', 'add', name]);
  created.add(name);
  execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  if (opts.scope !== 'file') {
    try {
      onTestFinished(() => deleteNetns(name));
    } catch {
      /* outside a test: cleaned up in afterAll */
    }
  }
  return name;
}

export { deleteNetns };

/** Runs `ip -n NS args...` and returns stdout; throws with stderr on failure. */
export function ip(ns: string, ...args: string[]): string {
  const r = spawnSync('ip', ['-n', ns, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip -n ${ns} ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Runs `ip -j -n NS args...` and parses the JSON. */
export function ipJson<T = unknown>(ns: string, ...args: string[]): T {
  const out = ip(ns, '-j', ...args).trim();
  return (out === '' ? [] : JSON.parse(out)) as T;
}

/** Runs a command inside the namespace (`ip netns exec`). */
export function nsExec(ns: string, cmd: string, ...args: string[]): string {
  const r = spawnSync('ip', ['netns', 'exec', ns, cmd, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} in ${ns}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Sets a sysctl inside a namespace (never on the host). */
export function sysctl(ns: string, key: string, value: string | number): void {
  nsExec(ns, 'sysctl', '-q', '-w', `${key}=${value}`);
}

/** Creates a veth pair with one end in each namespace; both ends up. */
export function vethPair(
  nsA: string,
  nameA: string,
  nsB: string,
  nameB: string,
  opts: { macA?: string; macB?: string } = {},
): void {
  ip(nsA, 'link', 'add', 'name', nameA, 'type', 'veth', 'peer', 'name', nameB, 'netns', nsB);
  if (opts.macA) ip(nsA, 'link', 'set', nameA, 'address', opts.macA);
  if (opts.macB) ip(nsB, 'link', 'set', nameB, 'address', opts.macB);
  ip(nsA, 'link', 'set', nameA, 'up');
  ip(nsB, 'link', 'set', nameB, 'up');
}

export function ifindexOf(ns: string, dev: string): number {
  const links = ipJson<{ ifindex: number }[]>(ns, 'link', 'show', 'dev', dev);
  const l = links[0];
  if (!l) throw new Error(`no device ${dev} in ${ns}`);
  return l.ifindex;
}

/** Polls `fn` until it returns a truthy value or the timeout passes. */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string | (() => string) } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 5000);
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${(typeof opts.what === 'function' ? opts.what() : opts.what) ?? 'condition'}${last ? `: ${String(last)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 20));
  }
}
