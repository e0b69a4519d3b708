// Conformance of deploy/systemd/fibkeeper.service: ExecStartPre and ExecStart exactly as
// written, on what `make install` installs (into a DESTDIR mounted on /usr/local), in the
// execution environment the unit describes (systemd.ts, sandbox.ts), with the config
// `fibkeeper config example` prints, in a namespace lab. The agent must tell systemd when it
// is ready (Type=notify), forward in XDP, reload on ExecReload and stop on KillSignal; with
// the documented CAP_SYS_ADMIN it manages another namespace (`netns`), which the unit's
// RestrictNamespaces= must allow.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, trackChild } from '../helpers/cleanup.js';
import { ipJson, makeNetns, privileged, waitFor } from '../helpers/netns.js';
import { notifyReceiver, type NotifyReceiver } from '../helpers/notify.js';
import { expectForwardingInXdp, httpIn, nodeLabUp, type NodeLab } from './lab.js';
import { makeInstall } from './install.js';
import { execLine, readUnit, type Unit } from './manifests.js';
import { startSandbox, type SandboxVolume } from './sandbox.js';
import { unitSandbox } from './systemd.js';

const { skip } = privileged();
const METRICS = 'http://127.0.0.1:9470';

let agent: ChildProcess | undefined;
let node: NodeLab | undefined;
let dir = '';

// Each test's agent, lab and temp dir go when it ends (trackChild, nodeLabUp, tempDir).

const log = () => {
  try {
    return readFileSync(join(dir, 'agent.log'), 'utf8').slice(-1500);
  } catch {
    return '';
  }
};

/** /etc/fibkeeper/config.yaml: what `fibkeeper config example` prints, plus `extra` lines. */
function etc(extra = ''): string {
  const out = join(dir, 'etc');
  mkdirSync(out, { recursive: true });
  const example = spawnSync(process.execPath, ['bin/fibkeeper.js', 'config', 'example'], {
    encoding: 'utf8',
  }).stdout;
  writeFileSync(join(out, 'config.yaml'), example.replace(/^netns: ""$/m, extra || 'netns: ""'));
  return out;
}

/** Runs one Exec*= line of `unit` as systemd would; returns the process. */
function exec(
  unit: Unit,
  key: string,
  netns: string,
  notify: NotifyReceiver,
  extraCaps: string[] = [],
  extraEnv: Record<string, string> = {},
): ChildProcess {
  const line = unit.get(key)?.at(-1);
  expect(line, key).toBeDefined();
  const { prefix, argv } = execLine(line as string);
  expect(prefix).toBe('');
  // What `make install` puts under /usr/local (the unit runs /usr/local/bin/fibkeeper).
  const usrLocal = join(dir, 'install', 'usr', 'local');
  if (!existsSync(usrLocal)) makeInstall({ DESTDIR: join(dir, 'install') });
  const binds: SandboxVolume[] = [
    { target: '/usr/local', source: usrLocal, readOnly: true },
    { target: '/etc/fibkeeper', source: join(dir, 'etc'), readOnly: true },
    { target: '/run/systemd/notify', source: notify.socket },
  ];
  const sub = join(dir, key);
  mkdirSync(sub, { recursive: true });
  return startSandbox(
    unitSandbox({ unit, netns, dir: sub, binds, argv, extraCaps, extraEnv }),
    openSync(join(dir, 'agent.log'), 'a'),
  );
}

const exitOf = (p: ChildProcess) =>
  new Promise<number | null>((r) =>
    p.exitCode !== null ? r(p.exitCode) : p.once('exit', (code) => r(code)),
  );

describe.skipIf(skip)('deploy/systemd/fibkeeper.service as shipped', () => {
  it('runs ExecStartPre and ExecStart in its sandbox, notifies readiness, forwards, reloads and stops', async () => {
    const unit = readUnit();
    expect(unit.get('Type')).toEqual(['notify']);
    node = nodeLabUp(`fks${randomBytes(2).toString('hex')}`);
    dir = tempDir('fkt-unit-');
    etc();
    const notify = await notifyReceiver(join(dir, 'notify.sock'));

    const pre = exec(unit, 'ExecStartPre', node.router, notify);
    expect(await exitOf(pre), log()).toBe(0);

    agent = trackChild(exec(unit, 'ExecStart', node.router, notify));
    const ready = await notify
      .next((m) => /^READY=1$/m.test(m), { timeoutMs: 30_000 })
      .catch((err: Error) => {
        throw new Error(`${err.message}; agent log: ${log()}`);
      });
    // READY=1 only once the agent is ready, with a STATUS= that says so.
    expect(ready).toMatch(/^STATUS=ready$/m);
    expect(httpIn(node.router, `${METRICS}/readyz`).status).toBe(200);
    const pid = agent.pid as number;
    // The control socket is where the unit's RuntimeDirectory puts it, with the right modes.
    const cli = (...a: string[]) =>
      spawnSync(
        process.execPath,
        [
          'bin/fibkeeper.js',
          ...a,
          '--socket',
          join(dir, 'ExecStart', 'RuntimeDirectory', 'fibkeeper', 'fibkeeper.sock'),
        ],
        { encoding: 'utf8' },
      );
    const add = cli(
      'forwardable',
      'add',
      node.lab.addr.server1,
      node.lab.addr.server1v6,
      node.lab.addr.server2,
      '--owner',
      'unit',
    );
    expect(add.stderr).toBe('');
    expectForwardingInXdp(node, METRICS);
    // Writes only where the unit allows: the state file in StateDirectory.
    expect(
      readFileSync(join(dir, 'ExecStart', 'StateDirectory', 'fibkeeper', 'state.json'), 'utf8'),
    ).toContain(node.lab.addr.server1);

    // ExecReload=/bin/kill -HUP $MAINPID
    const reload = execLine(unit.get('ExecReload')?.at(-1) as string).argv.map((a) =>
      a === '$MAINPID' ? String(pid) : a,
    );
    const from = notify.messages.length;
    expect(spawnSync(reload[0] as string, reload.slice(1)).status).toBe(0);
    await notify.next((m) => /^RELOADING=1$/m.test(m), { from });
    await notify.next((m) => /^READY=1$/m.test(m), { from: from + 1 });

    // KillSignal=SIGTERM: STOPPING=1 and a clean exit.
    const exited = exitOf(agent);
    agent.kill((unit.get('KillSignal')?.at(-1) ?? 'SIGTERM') as NodeJS.Signals);
    expect(await exited).toBe(0);
    expect(notify.messages.some((m) => /^STOPPING=1$/m.test(m))).toBe(true);
  }, 90_000);

  it('pings the watchdog while every kernel socket answers; a socket that stays deaf stops the pings, and the restart heals it', async () => {
    const unit = readUnit();
    // The shipped interval; the test runs a copy with a shorter one (the agent pings at a
    // quarter of whatever systemd asks for) so that a restart comes within seconds.
    expect(unit.get('WatchdogSec')).toEqual(['30s']);
    expect(unit.get('Restart')).toEqual(['on-failure']);
    const fast: Unit = new Map(unit);
    fast.set('WatchdogSec', ['6s']);
    node = nodeLabUp(`fkw${randomBytes(2).toString('hex')}`);
    dir = tempDir('fkt-unitwd-');
    etc();
    const notify = await notifyReceiver(join(dir, 'notify.sock'));
    // From 8 s on, every netlink receive begins a deaf period of 10 minutes (reopened sockets
    // too): nothing the agent does can cure it. Health timings shortened for the test.
    const faults =
      'classes=timeout,rate=1,sockets=netlink,deafMs=600000,delayMs=8000,probeMs=500,silentMs=1500,liveMs=4000';
    agent = trackChild(
      exec(fast, 'ExecStart', node.router, notify, [], { FIBKEEPER_TEST_FAULTS: faults }),
    );
    await notify.next((m) => /^READY=1$/m.test(m), { timeoutMs: 30_000 });
    const pings = () => notify.messages.filter((m) => /^WATCHDOG=1$/m.test(m)).length;
    const first = pings();
    await waitFor(() => pings() >= first + 2, {
      timeoutMs: 10_000,
      what: 'WATCHDOG=1 while alive',
    });
    // The faults begin; /livez fails once the sockets stayed silent for liveMs.
    await waitFor(() => httpIn(node!.router, `${METRICS}/livez`).status === 503, {
      timeoutMs: 30_000,
      what: '/livez 503',
    });
    expect(httpIn(node.router, `${METRICS}/livez`).body).toMatch(/socket has not answered/);
    // As systemd would: no WATCHDOG=1 for WatchdogSec, then SIGABRT (WatchdogSignal's default).
    let last = pings();
    let since = Date.now();
    await waitFor(
      () => {
        if (pings() !== last) [last, since] = [pings(), Date.now()];
        return Date.now() - since >= 6000;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'WatchdogSec without WATCHDOG=1' },
    );
    const killed = exitOf(agent);
    agent.kill('SIGABRT');
    await killed;
    // Restart=on-failure: the same ExecStart, without the faults this time.
    const from = notify.messages.length;
    agent = trackChild(exec(fast, 'ExecStart', node.router, notify));
    await notify.next((m) => /^READY=1$/m.test(m), { from, timeoutMs: 30_000 });
    await notify.next((m) => /^WATCHDOG=1$/m.test(m), { from, timeoutMs: 10_000 });
    expect(httpIn(node.router, `${METRICS}/livez`).status).toBe(200);
    const exited = exitOf(agent);
    agent.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 120_000);

  it('manages another network namespace (`netns`) with CAP_SYS_ADMIN added as documented', async () => {
    const unit = readUnit();
    node = nodeLabUp(`fkn${randomBytes(2).toString('hex')}`);
    dir = tempDir('fkt-unitns-');
    // The service runs in the node's own namespace (a fresh one here) and manages the router.
    const host = makeNetns('sdhost');
    etc(`netns: ${node.router}`);
    const notify = await notifyReceiver(join(dir, 'notify.sock'));
    // The comment in the unit says which capability the netns option needs.
    expect(readFileSync('deploy/systemd/fibkeeper.service', 'utf8')).toMatch(
      /CAP_SYS_ADMIN is NOT granted\. It is needed only \(a\) to manage another network namespace/,
    );
    agent = trackChild(exec(unit, 'ExecStart', host, notify, ['CAP_SYS_ADMIN']));
    await notify
      .next((m) => /^READY=1$/m.test(m), { timeoutMs: 30_000 })
      .catch((err: Error) => {
        throw new Error(`${err.message}; agent log: ${log()}`);
      });
    expect(httpIn(host, `${METRICS}/readyz`).status).toBe(200);
    const xdpOn = ipJson<{ ifname: string; xdp?: unknown }[]>(node.router, '-d', 'link', 'show')
      .filter((l) => l.xdp !== undefined)
      .map((l) => l.ifname)
      .sort();
    expect(xdpOn).toEqual(['eth0', 'eth1', 'eth2']);
    const exited = exitOf(agent);
    agent.kill('SIGTERM');
    expect(await exited).toBe(0);

    // The filter is real: RestrictNamespaces=yes (the unit's old setting) forbids the setns().
    const strict: Unit = new Map(unit);
    strict.set('RestrictNamespaces', ['yes']);
    agent = trackChild(exec(strict, 'ExecStart', host, notify, ['CAP_SYS_ADMIN']));
    expect(await exitOf(agent)).toBe(1);
    expect(log()).toMatch(/setns.*EPERM|EPERM.*setns/);
  }, 90_000);
});

describe.skipIf(skip)('the systemd sandbox emulation', () => {
  it('applies the unit: filtered system calls, namespaces, read-only paths, capabilities', async () => {
    const unit = readUnit();
    dir = tempDir('fkt-unitsb-');
    const ns = makeNetns('sdsb');
    const notify = await notifyReceiver(join(dir, 'notify.sock'));
    /** Runs `script` in the unit's sandbox (CAP_SYS_ADMIN added, so that only the filters refuse). */
    const sh = async (script: string, extraCaps = ['CAP_SYS_ADMIN']) => {
      const p = startSandbox(
        unitSandbox({
          unit,
          netns: ns,
          dir: join(dir, `sb${randomBytes(3).toString('hex')}`),
          binds: [{ target: '/run/systemd/notify', source: notify.socket }],
          argv: ['/bin/sh', '-c', script],
          extraCaps,
        }),
        openSync(join(dir, 'agent.log'), 'a'),
      );
      return exitOf(p);
    };
    // @mount is filtered (EPERM although CAP_SYS_ADMIN is there).
    expect(await sh('mount -t tmpfs none /tmp')).not.toBe(0);
    // RestrictNamespaces=net: a network namespace yes, any other no.
    expect(await sh('unshare --net true')).toBe(0);
    expect(await sh('unshare --uts true')).not.toBe(0);
    expect(await sh('unshare --user true')).not.toBe(0);
    // RestrictAddressFamilies: netlink yes, bluetooth no.
    expect(
      await sh("python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)'"),
    ).toBe(0);
    expect(
      await sh(
        "python3 -c 'import socket; socket.socket(socket.AF_BLUETOOTH, socket.SOCK_RAW, 1)'",
      ),
    ).not.toBe(0);
    // ProtectSystem=strict with ReadWritePaths, ProtectKernelTunables.
    expect(await sh('touch /etc/x')).not.toBe(0);
    expect(await sh('touch /usr/x')).not.toBe(0);
    expect(await sh('echo 1 > /proc/sys/net/ipv4/ip_forward')).not.toBe(0);
    expect(
      await sh('touch /run/fibkeeper/x /var/lib/fibkeeper/x /sys/fs/bpf/x || mkdir /sys/fs/bpf/d'),
    ).toBe(0);
    // The capability sets of the unit (bits 12 NET_ADMIN, 13 NET_RAW, 38 PERFMON, 39 BPF).
    const caps =
      'grep -q "^CapBnd:.000000c000003000" /proc/self/status && grep -q "^CapAmb:.000000c000003000" /proc/self/status';
    expect(await sh(caps, [])).toBe(0);
    expect(await sh('grep -q "^NoNewPrivs:.1" /proc/self/status', [])).toBe(0);
    // Refused by the filter with the unit's errno, not by a missing capability.
    expect(log()).toMatch(/unshare failed: Operation not permitted/);
    expect(log()).toMatch(/Errno 97\] Address family not supported/);
  }, 60_000);
});
