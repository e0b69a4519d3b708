// The deployment files promise that the agent needs only CAP_NET_ADMIN, CAP_BPF,
// CAP_PERFMON and CAP_NET_RAW when it runs in the namespace it manages and bpffs is mounted
// (deploy/systemd/fibkeeper.service). Run it exactly so, and check that it does its jobs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labDown, labUp, type Lab } from '../../src/lab/index.js';
import { ipJson, privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();
const CAPS = ['net_admin', 'bpf', 'perfmon', 'net_raw'];

let lab: Lab | undefined;
let agent: ChildProcess | undefined;
let dir = '';

afterAll(async () => {
  if (agent && agent.exitCode === null) {
    const done = new Promise((r) => agent?.once('exit', r));
    agent.kill('SIGTERM');
    await done;
  }
  if (lab) labDown(lab.prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(skip)('least privilege', () => {
  it('runs with exactly CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON and CAP_NET_RAW', async () => {
    const prefix = `fkc${randomBytes(2).toString('hex')}`;
    lab = labUp(prefix);
    dir = join(tmpdir(), `fibkeeper-caps-${prefix}`);
    mkdirSync(join(dir, 'bpf'), { recursive: true });
    const sock = join(dir, 'run', 'api.sock');
    const set = `-all,${CAPS.map((c) => `+${c}`).join(',')}`;
    // The mount happens in the private mount namespace of `ip netns exec`, before the
    // capabilities are dropped (as systemd mounts /sys/fs/bpf before starting the unit).
    const script = [
      `mount -t bpf bpf ${join(dir, 'bpf')}`,
      `exec setpriv --inh-caps=${set} --ambient-caps=${set} --bounding-set=${set} node bin/fibkeeper.js run` +
        ` --devices=${lab.routerDevices.join(',')} --extip-enabled=true --extip-holder-kind=bridge --extip-interface=${lab.routerExternal}` +
        ` --xdp-pin-dir=${join(dir, 'bpf')} --api-socket=${sock} --state-file=${join(dir, 'state.json')} --metrics-address=`,
    ].join(' && ');
    agent = spawn('ip', ['netns', 'exec', lab.hosts.router, 'sh', '-c', script], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    agent.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const status = () => {
      const r = spawnSync('node', ['bin/fibkeeper.js', 'status', '--json', '--socket', sock], {
        encoding: 'utf8',
      });
      return r.status === 0
        ? (JSON.parse(r.stdout) as { ready: boolean; xdp: { devices: { attached: string }[] } })
        : undefined;
    };
    await waitFor(
      () => {
        if (agent?.exitCode !== null) throw new Error(`agent exited: ${log.slice(-800)}`);
        return status()?.ready;
      },
      { timeoutMs: 20_000, what: 'agent ready' },
    );
    const pid = Number(
      spawnSync('pgrep', ['-f', `api-socket=${sock}`], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n')[0],
    );
    const capEff = /CapEff:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    // bits 12 NET_ADMIN, 13 NET_RAW, 38 PERFMON, 39 BPF
    expect(capEff).toBe('000000c000003000');
    expect(status()?.xdp.devices.every((d) => d.attached === 'ours')).toBe(true);
    const cli = (...a: string[]) =>
      spawnSync('node', ['bin/fibkeeper.js', ...a, '--socket', sock], { encoding: 'utf8' });
    expect(cli('forwardable', 'add', lab.addr.server1, '--owner', 'caps').status).toBe(0);
    expect(cli('extip', 'add', lab.addr.extip).status).toBe(0);
    await waitFor(
      () =>
        ipJson<{ dst: string; protocol?: string }[]>(lab?.hosts.router ?? '', 'neigh', 'show').some(
          (n) => n.dst === lab?.addr.server1 && n.protocol === '241',
        ),
      { what: 'neighbor entry written without CAP_SYS_ADMIN' },
    );
    const addrs = ipJson<{ addr_info: { local: string }[] }[]>(
      lab.hosts.router,
      'addr',
      'show',
      'dev',
      'fibkeeper0',
    );
    expect(addrs[0]?.addr_info.map((a) => a.local)).toContain(lab.addr.extip);
    // The probe could not build its scratch namespace, so it went by the kernel version.
    // (stderr arrives through a pipe: wait for it rather than read it once.)
    await waitFor(() => /assuming .* from kernel/.test(log), {
      what: 'the probe warning in the log',
    });
  }, 60_000);
});
