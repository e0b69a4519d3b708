// A container (or a systemd service) as the deployment files describe it, built from
// kernel primitives inside a lab namespace: `ip netns exec` gives a network namespace and a
// private mount namespace (propagation: slave, so nothing reaches the host's mounts); in it
// a tmpfs becomes the root file system (the host's /usr read-only, /etc through an overlay,
// fresh /proc, /sys of the namespace, /tmp and /run), volumes are mounted where the file
// says, and the command runs chrooted there with the stated capabilities (setpriv), no new
// privileges, and optionally a seccomp filter (python3-seccomp: systemd's SystemCallFilter,
// RestrictAddressFamilies and RestrictNamespaces, groups expanded by systemd-analyze).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export interface SandboxVolume {
  /** Path inside the sandbox. */
  target: string;
  /** Host directory or file bound there; without it, an empty tmpfs. */
  source?: string;
  readOnly?: boolean;
}

export interface SeccompSpec {
  /** Syscalls that fail with `errno`. */
  deny: string[];
  errno: string;
  /** Socket families allowed (names of Python's socket.AF_*); others fail EAFNOSUPPORT. */
  families?: string[];
  /** CLONE_NEW* flags that unshare/clone/setns may not use (EPERM); clone3 then gives ENOSYS. */
  denyNamespaceFlags?: number[];
}

export interface SandboxSpec {
  /** Network namespace (a name under /run/netns). */
  netns: string;
  /** Scratch directory on the host; the sandbox's root is a tmpfs mounted in it. */
  dir: string;
  volumes: SandboxVolume[];
  /** Shell lines run as root inside the root before anything else (builds the "image"). */
  setup?: string[];
  /** Commands run in turn as root with every capability before the main one (init containers). */
  init?: string[][];
  argv: string[];
  env: Record<string, string>;
  /** Capabilities kept (bounding, and ambient when `ambient`); undefined: all of root's. */
  caps?: string[];
  ambient?: boolean;
  noNewPrivs?: boolean;
  /** The root file system read-only (/etc included); volumes keep their own mode. */
  readOnlyRoot?: boolean;
  /** /sys and /proc/sys read-only (volumes below them, like a bpffs, stay writable). */
  readOnlyKernel?: boolean;
  /** Shell lines run just before the command (resource limits: `ulimit -l unlimited`). */
  preExec?: string[];
  seccomp?: SeccompSpec;
  umask?: string;
  cwd?: string;
}

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

const SECCOMP_LOADER = `
import errno, json, os, socket, sys, seccomp
spec = json.loads(sys.argv[1])
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
err = getattr(errno, spec['errno'])
for name in spec['deny']:
    try:
        f.add_rule(seccomp.ERRNO(err), name)
    except (RuntimeError, ValueError):
        pass  # not a syscall of this architecture
if 'families' in spec:
    allowed = {getattr(socket, n) for n in spec['families']}
    for fam in range(0, 46):
        if fam not in allowed:
            f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), 'socket', seccomp.Arg(0, seccomp.EQ, fam))
flags = spec.get('denyNamespaceFlags', [])
for flag in flags:
    for call, arg in (('unshare', 0), ('clone', 0), ('setns', 1)):
        f.add_rule(seccomp.ERRNO(errno.EPERM), call, seccomp.Arg(arg, seccomp.MASKED_EQ, flag, flag))
if flags:
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), 'clone3')
f.load()
os.execv(sys.argv[2], sys.argv[2:])
`;

/** The shell script that builds the sandbox and execs the command; exported for tests of it. */
export function sandboxScript(s: SandboxSpec): string {
  const R = join(s.dir, 'root');
  const lines = [
    'set -eu',
    `R=${q(R)}`,
    'mount -t tmpfs -o mode=0755 fkroot "$R"',
    'mkdir -p "$R"/usr "$R"/etc "$R"/proc "$R"/sys "$R"/dev "$R"/tmp "$R"/run "$R"/var/lib "$R"/opt "$R"/root',
    'for d in bin sbin lib lib64; do ln -s usr/$d "$R/$d"; done',
    'mount --rbind /usr "$R"/usr && mount -o remount,bind,ro "$R"/usr',
    `mkdir -p ${q(join(s.dir, 'etc.up'))} ${q(join(s.dir, 'etc.work'))}`,
    `mount -t overlay overlay -o lowerdir=/etc,upperdir=${q(join(s.dir, 'etc.up'))},workdir=${q(join(s.dir, 'etc.work'))} "$R"/etc`,
    'mount -t proc proc "$R"/proc',
    // The sysfs of this network namespace (what `ip netns exec` mounted on /sys).
    'mount -t sysfs sysfs "$R"/sys',
    'mount --rbind /dev "$R"/dev',
    'mount -t tmpfs -o mode=1777 tmpfs "$R"/tmp',
    'mount -t tmpfs -o mode=0755 tmpfs "$R"/run',
    // Named network namespaces stay reachable (the netns option), read-only.
    'mkdir -p "$R"/run/netns && mount --rbind /run/netns "$R"/run/netns',
    'mount -o remount,bind,ro "$R"/run/netns',
  ];
  for (const v of s.volumes) {
    const t = `"$R"${q(v.target)}`;
    if (v.source === undefined) {
      lines.push(`mkdir -p ${t}`, `mount -t tmpfs -o mode=0755 tmpfs ${t}`);
    } else {
      lines.push(
        `if [ -d ${q(v.source)} ]; then mkdir -p ${t}; else mkdir -p "$(dirname ${t})"; touch ${t}; fi`,
        `mount --bind ${q(v.source)} ${t}`,
      );
      if (v.readOnly) lines.push(`mount -o remount,bind,ro ${t}`);
    }
  }
  for (const l of s.setup ?? []) lines.push(`chroot "$R" /bin/sh -c ${q(l)}`);
  if (s.readOnlyRoot)
    lines.push('mount -o remount,bind,ro "$R"', 'mount -o remount,bind,ro "$R"/etc');
  for (const c of s.init ?? []) lines.push(`chroot "$R" ${c.map(q).join(' ')}`);
  if (s.readOnlyKernel) {
    lines.push(
      'mount -o remount,bind,ro "$R"/sys',
      'mount --bind "$R"/proc/sys "$R"/proc/sys && mount -o remount,bind,ro "$R"/proc/sys',
    );
  }
  lines.push(...(s.preExec ?? []));
  if (s.umask) lines.push(`umask ${s.umask}`);
  const env = Object.entries(s.env).map(([k, v]) => q(`${k}=${v}`));
  const priv: string[] = [];
  if (s.caps !== undefined) {
    const set = ['-all', ...s.caps.map((c) => `+${c.toLowerCase().replace(/^cap_/, '')}`)].join(
      ',',
    );
    priv.push(
      '/usr/bin/setpriv',
      `--bounding-set=${set}`,
      `--inh-caps=${s.ambient ? set : '-all'}`,
    );
    if (s.ambient) priv.push(`--ambient-caps=${set}`);
  } else if (s.noNewPrivs) priv.push('/usr/bin/setpriv');
  if (s.noNewPrivs) priv.push('--no-new-privs');
  if (priv.length > 0) priv.push('--');
  const seccomp = s.seccomp
    ? ['/usr/bin/python3', '-c', SECCOMP_LOADER, JSON.stringify(s.seccomp)]
    : [];
  const cd = s.cwd ? `cd ${q(s.cwd)} && ` : '';
  const argv = [...seccomp, ...priv, ...s.argv].map(q).join(' ');
  // chroot, then a clean environment with only the stated variables, as a runtime does.
  lines.push(
    `exec chroot "$R" /bin/sh -c ${q(`${cd}exec /usr/bin/env -i ${env.join(' ')} ${argv}`)}`,
  );
  return lines.join('\n');
}

/**
 * Starts the sandboxed command; its stdout and stderr go to `log` (a file descriptor). Every
 * step execs the next, so the returned process's pid becomes the command's own.
 */
export function startSandbox(s: SandboxSpec, log: number): ChildProcess {
  mkdirSync(join(s.dir, 'root'), { recursive: true });
  return spawn('ip', ['netns', 'exec', s.netns, '/bin/bash', '-c', sandboxScript(s)], {
    stdio: ['ignore', log, log],
  });
}

/**
 * Runs `argv` inside the running sandbox whose main process is `pid`, like `kubectl exec`
 * or `systemctl`'s helpers: same mount and network namespaces, same root, a fresh
 * environment with `env`.
 */
export function execIn(
  pid: number,
  argv: string[],
  env: Record<string, string>,
): { code: number | null; out: string; err: string } {
  const r = spawnSync(
    'nsenter',
    [
      `--target=${pid}`,
      '--mount',
      '--net',
      '--root',
      '--wd=/',
      '/usr/bin/env',
      '-i',
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      ...argv,
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  return { code: r.status, out: r.stdout, err: r.stderr };
}
