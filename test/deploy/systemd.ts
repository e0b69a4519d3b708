// A systemd service's execution environment, from its unit file, as a sandbox (sandbox.ts):
// the capability sets, NoNewPrivileges, ProtectSystem=strict with ReadWritePaths, the
// runtime and state directories, ProtectKernelTunables, UMask, LimitMEMLOCK, the
// environment systemd gives a system service, NOTIFY_SOCKET, and the seccomp filters of
// SystemCallFilter, RestrictAddressFamilies, RestrictNamespaces, ProtectClock,
// ProtectHostname, ProtectKernelModules/-Logs and PrivateDevices, whose system-call groups
// systemd-analyze expands. Not emulated: PrivateDevices' minimal /dev, ProtectProc,
// ProtectHome (nothing of /home or /root is in the sandbox anyway), RestrictRealtime,
// RestrictSUIDSGID, LockPersonality, SystemCallArchitectures, MemoryDenyWriteExecute.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { unitList, type Unit } from './manifests.js';
import type { SandboxSpec, SandboxVolume, SeccompSpec } from './sandbox.js';

const CLONE_FLAGS: Record<string, number> = {
  cgroup: 0x02000000,
  ipc: 0x08000000,
  net: 0x40000000,
  mnt: 0x00020000,
  pid: 0x20000000,
  user: 0x10000000,
  uts: 0x04000000,
};

/** The system calls of `@group` (or the name itself), as systemd-analyze lists them. */
export function expandSyscalls(item: string): string[] {
  if (!item.startsWith('@')) return [item];
  const r = spawnSync('systemd-analyze', ['syscall-filter', item], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`systemd-analyze syscall-filter ${item}: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith(item))
    .flatMap((l) => expandSyscalls(l));
}

function yes(unit: Unit, key: string): boolean {
  return ['yes', 'true', '1', 'on', 'strict', 'invisible'].includes(
    (unit.get(key)?.at(-1) ?? 'no').toLowerCase(),
  );
}

/** The namespace flags RestrictNamespaces= forbids. */
function deniedNamespaces(unit: Unit): number[] {
  const v = unit.get('RestrictNamespaces')?.at(-1) ?? 'no';
  if (['no', 'false', '0'].includes(v)) return [];
  if (['yes', 'true', '1'].includes(v)) return Object.values(CLONE_FLAGS);
  const inverted = v.startsWith('~');
  const named = new Set(v.replace(/^~/, '').split(/\s+/));
  return Object.entries(CLONE_FLAGS)
    .filter(([name]) => (inverted ? named.has(name) : !named.has(name)))
    .map(([, flag]) => flag);
}

export function unitSeccomp(unit: Unit): SeccompSpec {
  const filter = unitList(unit, 'SystemCallFilter');
  const deny = new Set<string>();
  if (filter.length > 0) {
    if (!filter[0]?.startsWith('~')) throw new Error('only deny-list SystemCallFilter is emulated');
    for (const item of [filter[0].slice(1), ...filter.slice(1)]) {
      for (const call of expandSyscalls(item)) deny.add(call);
    }
  }
  const implied: [string, string[]][] = [
    ['ProtectClock', ['@clock']],
    ['ProtectHostname', ['sethostname', 'setdomainname']],
    ['ProtectKernelModules', ['@module']],
    ['ProtectKernelLogs', ['syslog']],
    ['PrivateDevices', ['@raw-io']],
  ];
  for (const [key, items] of implied) {
    if (yes(unit, key)) for (const i of items) for (const c of expandSyscalls(i)) deny.add(c);
  }
  const families = unitList(unit, 'RestrictAddressFamilies');
  return {
    deny: [...deny].sort(),
    errno: unit.get('SystemCallErrorNumber')?.at(-1) ?? 'EPERM',
    ...(families.length > 0 ? { families } : {}),
    denyNamespaceFlags: deniedNamespaces(unit),
  };
}

export interface UnitSandboxParams {
  unit: Unit;
  netns: string;
  dir: string;
  /** Host paths for the unit's own paths (/usr/local, /etc/fibkeeper, the notify socket). */
  binds: SandboxVolume[];
  argv: string[];
  /** Capabilities added to both lists (the documented CAP_SYS_ADMIN for `netns`). */
  extraCaps?: string[];
  /** More environment (a test's FIBKEEPER_TEST_FAULTS). */
  extraEnv?: Record<string, string>;
}

/** A systemd time span ("30s", "2min", "500ms", "30") in microseconds. */
export function timespanUsec(v: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(us|ms|s|sec|m|min|h)?$/.exec(v.trim());
  if (!m) throw new Error(`time span ${v} is not emulated`);
  const unit = { us: 1, ms: 1e3, s: 1e6, sec: 1e6, m: 6e7, min: 6e7, h: 3.6e9 }[m[2] ?? 's'] ?? 1e6;
  return Math.round(Number(m[1]) * unit);
}

/** The sandbox systemd would give `argv` (an Exec*= command line) of `unit`. */
export function unitSandbox(p: UnitSandboxParams): SandboxSpec {
  const { unit } = p;
  const caps = [...unitList(unit, 'CapabilityBoundingSet'), ...(p.extraCaps ?? [])];
  const ambient = unitList(unit, 'AmbientCapabilities').length > 0;
  const volumes: SandboxVolume[] = [...p.binds];
  // RuntimeDirectory= and StateDirectory= (created by systemd with their modes, writable).
  for (const [key, root] of [
    ['RuntimeDirectory', '/run'],
    ['StateDirectory', '/var/lib'],
  ] as const) {
    for (const name of unitList(unit, key)) {
      const source = join(p.dir, key, name);
      const mode = parseInt(unit.get(`${key}Mode`)?.at(-1) ?? '0755', 8);
      mkdirSync(source, { recursive: true, mode });
      volumes.push({ target: `${root}/${name}`, source });
    }
  }
  const env: Record<string, string> = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin',
    NOTIFY_SOCKET: '/run/systemd/notify',
    HOME: '/root',
    USER: 'root',
    LOGNAME: 'root',
    SHELL: '/bin/sh',
    INVOCATION_ID: 'f1b0c0ffee0000000000000000000001',
  };
  // WatchdogSec=: systemd tells the service its interval (WATCHDOG_PID too, which the
  // sandbox's PID namespace would make wrong; the agent accepts its absence).
  const watchdog = unit.get('WatchdogSec')?.at(-1);
  if (watchdog !== undefined && timespanUsec(watchdog) > 0) {
    env.WATCHDOG_USEC = String(timespanUsec(watchdog));
  }
  Object.assign(env, p.extraEnv ?? {});
  for (const name of unitList(unit, 'RuntimeDirectory')) env.RUNTIME_DIRECTORY = `/run/${name}`;
  for (const name of unitList(unit, 'StateDirectory')) env.STATE_DIRECTORY = `/var/lib/${name}`;
  const memlock = unit.get('LimitMEMLOCK')?.at(-1);
  const readWrite = unitList(unit, 'ReadWritePaths');
  if (yes(unit, 'ProtectSystem') && unit.get('ProtectSystem')?.at(-1) !== 'strict') {
    throw new Error('only ProtectSystem=strict is emulated');
  }
  return {
    netns: p.netns,
    dir: p.dir,
    volumes,
    // systemd's sys-fs-bpf.mount: the node has a bpffs on /sys/fs/bpf.
    init: readWrite.includes('/sys/fs/bpf') ? [['mount', '-t', 'bpf', 'bpf', '/sys/fs/bpf']] : [],
    argv: p.argv,
    env,
    caps,
    ambient,
    noNewPrivs: yes(unit, 'NoNewPrivileges'),
    readOnlyRoot: unit.get('ProtectSystem')?.at(-1) === 'strict',
    readOnlyKernel: yes(unit, 'ProtectKernelTunables'),
    // Best effort: this machine lacks CAP_SYS_RESOURCE to raise the hard limit, and kernels
    // since 5.11 charge BPF maps to the memory cgroup instead.
    preExec: memlock === 'infinity' ? ['ulimit -l unlimited 2>/dev/null || true'] : [],
    seccomp: unitSeccomp(unit),
    ...(unit.get('UMask') ? { umask: unit.get('UMask')?.at(-1) as string } : {}),
    cwd: '/',
  };
}
