// The agent never dies of its own limit: `fibkeeper run` (every node subsystem on: XDP,
// neighbors, external IPs, the API, the state file) in a memory cgroup of its own whose limit
// is the shipped DaemonSet's (deploy/kubernetes/daemonset.yaml), loaded through the bulk API
// with the largest table the README's sizing section says that limit holds. It must stay
// alive (the kernel's OOM killer would end it at the limit: the cgroup counts oom_kill), get
// every entry into the kernel (extern_learn, so gc_thresh3 does not apply) and answer status.
//
// The cgroup is made by hand under this process's own memory cgroup (cgroup v2: memory.max;
// a v1 memory hierarchy: memory.limit_in_bytes), only the agent's process is moved into it
// (the shell that starts it writes its PID, then execs the agent), and it is removed after.
// With neither hierarchy's memory controller at hand the test skips and says why.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, statfsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupLater } from '../helpers/cleanup.js';
import { ip, privileged, sysctl, waitFor } from '../helpers/netns.js';
import { BIN, baseConfig, call, makeWorld, writeConfig, type AgentWorld } from './harness.js';

const { skip } = privileged();

/** The shipped limit: `limits: { memory: NMi }` of the DaemonSet, in bytes. */
function shippedLimit(): number {
  const yaml = readFileSync(resolve('deploy/kubernetes/daemonset.yaml'), 'utf8');
  const m = /limits:\s*\{\s*memory:\s*(\d+)Mi\s*\}/.exec(yaml);
  if (!m) throw new Error('daemonset.yaml has no `limits: { memory: NMi }`');
  return Number(m[1]) * 2 ** 20;
}

/** What the README says the shipped limit holds: "(`memory: NMi`) holds N forwardable IPs". */
function claimedSize(limit: number): number {
  const readme = readFileSync(resolve('README.md'), 'utf8');
  const m = /limit \(`memory: (\d+)Mi`\) holds ([\d,]+) forwardable IPs/.exec(readme);
  if (!m)
    throw new Error('README.md does not say how many forwardable IPs the shipped limit holds');
  expect(Number(m[1]) * 2 ** 20, 'the README names the DaemonSet limit').toBe(limit);
  return Number(m[2]!.replace(/,/g, ''));
}

interface MemCgroup {
  path: string;
  version: 1 | 2;
  peak(): number;
  oomKills(): number;
}

/** A child memory cgroup of this process's own with `limit`, or why there can be none. */
function makeCgroup(limit: number): MemCgroup | string {
  const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const name = `fk-memlimit-${process.pid}-${Date.now().toString(36)}`;
  const v2root = '/sys/fs/cgroup';
  const v2 = own.find((l) => l.startsWith('0::'))?.slice(3);
  const isV2 = (() => {
    try {
      return statfsSync(v2root).type === 0x63677270; // CGROUP2_SUPER_MAGIC
    } catch {
      return false;
    }
  })();
  if (isV2 && v2 !== undefined) {
    const parent = join(v2root, v2);
    const controllers = readFileSync(join(parent, 'cgroup.subtree_control'), 'utf8');
    if (controllers.split(/\s+/).includes('memory')) {
      const path = join(parent, name);
      mkdirSync(path);
      spawnSync('sh', ['-c', `echo ${limit} > ${join(path, 'memory.max')}`]);
      const stat = (key: string) =>
        Number(
          new RegExp(`^${key} (\\d+)`, 'm').exec(
            readFileSync(join(path, 'memory.events'), 'utf8'),
          )?.[1] ?? 0,
        );
      return {
        path,
        version: 2,
        peak: () => Number(readFileSync(join(path, 'memory.peak'), 'utf8')),
        oomKills: () => stat('oom_kill'),
      };
    }
  }
  const v1 = own.find((l) => /^\d+:memory:/.test(l))?.split(':')[2];
  const v1root = '/sys/fs/cgroup/memory';
  if (v1 !== undefined && existsSync(join(v1root, v1, 'memory.limit_in_bytes'))) {
    const path = join(v1root, v1, name);
    mkdirSync(path);
    spawnSync('sh', ['-c', `echo ${limit} > ${join(path, 'memory.limit_in_bytes')}`]);
    return {
      path,
      version: 1,
      peak: () => Number(readFileSync(join(path, 'memory.max_usage_in_bytes'), 'utf8')),
      oomKills: () =>
        Number(
          /^oom_kill (\d+)/m.exec(readFileSync(join(path, 'memory.oom_control'), 'utf8'))?.[1] ?? 0,
        ),
    };
  }
  return isV2
    ? "cgroup v2 without the memory controller enabled for this process's children, and no v1 memory hierarchy"
    : 'no cgroup v2 with the memory controller and no v1 memory hierarchy';
}

const LIMIT = shippedLimit();
const cgroup = skip ? 'not root' : makeCgroup(LIMIT);
if (typeof cgroup === 'string') console.log(`memlimit: skipped: ${cgroup}`);
afterAll(() => {
  if (typeof cgroup !== 'string') rmdirSync(cgroup.path);
});

const ipOf = (v: number) => `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;

describe.skipIf(typeof cgroup === 'string')('the agent within the shipped memory limit', () => {
  it('holds the table the README claims for the DaemonSet limit, loaded through the bulk API', async () => {
    const cg = cgroup as MemCgroup;
    const n = claimedSize(LIMIT);
    const w: AgentWorld = makeWorld('mem');
    // The peer answers every ARP request (proxy ARP): the entries resolve as on a network.
    ip(w.ns, 'addr', 'add', '10.128.0.1/9', 'dev', w.dev);
    sysctl(w.peer, 'net.ipv4.ip_forward', 1);
    sysctl(w.peer, 'net.ipv4.conf.eth0.proxy_arp', 1);
    sysctl(w.peer, 'net.ipv4.neigh.eth0.proxy_delay', 0);
    ip(w.peer, 'link', 'add', 'fkq0', 'type', 'veth', 'peer', 'name', 'fkq1');
    for (const d of ['fkq0', 'fkq1']) ip(w.peer, 'link', 'set', d, 'up');
    ip(w.peer, 'route', 'add', '10.128.0.0/9', 'dev', 'fkq0');
    writeConfig(w, baseConfig(w, { xdp: true }));
    cleanupLater(() => spawnSync('umount', [join(w.dir, 'bpf')]));
    // Only the agent's process in the cgroup: the shell moves itself, then becomes the agent.
    const child = spawn(
      'sh',
      [
        '-c',
        `echo $$ > ${join(cg.path, 'cgroup.procs')} && exec "$0" "$@"`,
        process.execPath,
        BIN,
        'run',
        '--config',
        w.configFile,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    child.stderr.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-3000)));
    const exited = new Promise<string>((r) =>
      child.once('exit', (code, sig) => r(`${code ?? sig}`)),
    );
    cleanupLater(() => child.kill('SIGKILL'));
    const alive = () => child.exitCode === null && child.signalCode === null;
    await waitFor(
      async () => {
        if (!alive()) throw new Error(`agent exited: ${log}`);
        const r = await call(w.sock, 'GET', '/v1/status').catch(() => undefined);
        return r?.status === 200 && r.body.ready === true;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'agent ready' },
    );
    expect(readFileSync(join(cg.path, 'cgroup.procs'), 'utf8').trim()).toBe(String(child.pid));

    const lines = Array.from({ length: n }, (_, i) => ipOf(0x0a800100 + i)).join('\n');
    const put = await call(w.sock, 'PUT', '/v1/owners/mem/forwardable', undefined, {
      timeoutMs: 300_000,
      text: lines,
    }).catch((err: Error) => {
      throw new Error(
        `${err.message}; agent ${alive() ? 'alive' : `exited (${child.exitCode ?? child.signalCode})`}, cgroup oom kills ${cg.oomKills()}, peak ${cg.peak()}; log: ${log}`,
      );
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const entries = () =>
      Number(
        spawnSync('sh', ['-c', `ip -n ${w.ns} neigh show dev ${w.dev} proto 241 | wc -l`], {
          encoding: 'utf8',
        }).stdout.trim(),
      );
    await waitFor(
      () => {
        if (!alive()) throw new Error(`agent died: ${log}`);
        return entries() >= n;
      },
      { timeoutMs: 400_000, intervalMs: 3000, what: `${n} entries in the kernel` },
    );
    const status = await call(w.sock, 'GET', '/v1/status?limit=1').catch((err: Error) => {
      throw new Error(
        `${err.message}; agent ${alive() ? 'alive' : `exited (${child.exitCode ?? child.signalCode})`}, cgroup oom kills ${cg.oomKills()}, peak ${cg.peak()}; log: ${log}`,
      );
    });
    expect(status.status).toBe(200);
    expect(alive()).toBe(true);
    expect(cg.oomKills()).toBe(0);
    console.log(
      `memlimit: ${n} forwardable IPs in a v${cg.version} cgroup limited to ${LIMIT / 2 ** 20} MiB: peak ${Math.round(cg.peak() / 2 ** 20)} MiB`,
    );
    child.kill('SIGTERM');
    expect(await exited).toBe('0');
  }, 900_000);
});
