// End to end, as a user runs it: the built CLI starts the agent from a config file in a
// namespace lab, is driven only through the CLI, and the outcome is checked in the kernel
// (`ip`), on the wire (a packet capture) and in the metrics (a scrape + promtool).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_SCHEMA_VERSION } from '../../src/agent/index.js';
import { OPTIONS } from '../../src/config/index.js';
import { decodeFrame } from '../../src/extip/index.js';
import { labDown, labUp, type Lab } from '../../src/lab/index.js';
import { PacketSocket, isBpffs, unmount } from '../../src/native/index.js';
import { NetlinkHandle, type Subscription } from '../../src/netlink/index.js';
import { ipJson, privileged, waitFor } from '../helpers/netns.js';
import { documentFields, documentedFields, undocumented } from '../helpers/status-doc.js';
import { freePort } from '../helpers/ports.js';

const { skip } = privileged();
const BIN = 'bin/fibkeeper.js';

/** `ip -j neigh` prints each flag as a key of its own (`"extern_learn": null`). */
interface NeighJson {
  dst: string;
  dev: string;
  state: string[];
  protocol?: string;
  extern_learn?: null;
  managed?: null;
}

let lab: Lab;
let dir: string;
let port: number;
let agent: ChildProcess | undefined;

function cli(...args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync('node', [BIN, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

const sock = () => join(dir, 'run', 'api.sock');
const api = (...args: string[]) => cli(...args, '--socket', sock());

function writeConfig(extra: string, xdpExtra = ''): string {
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    [
      `netns: ${lab.hosts.router}`,
      `devices: [${lab.routerDevices.map((d) => `"${d}"`).join(', ')}]`,
      `stateFile: ${join(dir, 'state.json')}`,
      'xdp:',
      `  pinDir: ${join(dir, 'bpf')}`,
      ...(xdpExtra ? [xdpExtra] : []),
      'extip:',
      '  enabled: true',
      '  holderKind: bridge',
      `  interface: ${lab.routerExternal}`,
      'api:',
      `  socket: ${sock()}`,
      'metrics:',
      `  address: 127.0.0.1:${port}`,
      extra,
    ].join('\n') + '\n',
  );
  return path;
}

async function startAgent(): Promise<ChildProcess> {
  const log = openSync(join(dir, 'agent.log'), 'a');
  const child = spawn('node', [BIN, 'run', '--config', join(dir, 'config.yaml')], {
    stdio: ['ignore', log, log],
  });
  await waitFor(
    async () => {
      if (child.exitCode !== null)
        throw new Error(
          `agent exited: ${readFileSync(join(dir, 'agent.log'), 'utf8').slice(-600)}`,
        );
      return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok;
    },
    { timeoutMs: 20_000, what: 'agent ready' },
  );
  return child;
}

async function stopAgent(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const a = agent;
  agent = undefined;
  if (!a || a.exitCode !== null) return;
  const exited = new Promise((r) => a.once('exit', r));
  a.kill(signal);
  await exited;
}

const owned = (): NeighJson[] =>
  ipJson<NeighJson[]>(lab.hosts.router, 'neigh', 'show', 'nud', 'all').filter(
    (n) => n.protocol === '241',
  );

describe.skipIf(skip)('the agent end to end, through the CLI', () => {
  beforeAll(async () => {
    const prefix = `fke${randomBytes(2).toString('hex')}`;
    dir = join(tmpdir(), `fibkeeper-e2e-${prefix}`);
    mkdirSync(dir, { recursive: true });
    port = await freePort();
    lab = labUp(prefix);
    writeConfig('forwardable:\n  static: ["10.77.4.2"]\n');
    agent = await startAgent();
  }, 60_000);

  afterAll(async () => {
    await stopAgent();
    if (lab) labDown(lab.prefix);
    const bpf = join(dir, 'bpf');
    if (existsSync(bpf) && isBpffs(bpf)) unmount(bpf);
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the control socket with the documented permissions', () => {
    expect(statSync(sock()).mode & 0o777).toBe(0o660);
    expect(statSync(join(dir, 'run')).mode & 0o007).toBe(0);
  });

  it('keeps neighbor entries for forwardable IPs added through the CLI', async () => {
    const r = api('forwardable', 'add', '10.77.2.2', 'FD77:2::0:2', '--owner', 'e2e');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    await waitFor(() => owned().length >= 3, { what: 'three owned entries', timeoutMs: 10_000 });
    const byDst = new Map(owned().map((n) => [`${n.dst} ${n.dev}`, n]));
    for (const key of ['10.77.2.2 r-server1', 'fd77:2::2 r-server1', '10.77.3.2 r-gw']) {
      const n = byDst.get(key);
      expect(n && 'extern_learn' in n && 'managed' in n, `${key}: ${JSON.stringify(n)}`).toBe(true);
    }
    const list = JSON.parse(api('forwardable', 'list', '--json').out) as {
      ip: string;
      owners: string[];
    }[];
    expect(list).toEqual(
      expect.arrayContaining([
        { ip: '10.77.2.2', owners: ['e2e'] },
        { ip: 'fd77:2::2', owners: ['e2e'] },
        { ip: '10.77.4.2', owners: ['config'] },
      ]),
    );
    const status = api('status');
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/ready: yes/);
    expect(status.out).toMatch(/10\.77\.2\.2\s+e2e\s+r-server1\s+10\.77\.2\.2\s+done\s+REACHABLE/);
  });

  it('status --json is the document docs/status.md describes, field by field', async () => {
    // An external IP, so that the extip section has rows (the announcement is awaited).
    expect(api('extip', 'add', '10.77.1.99').code).toBe(0);
    await waitFor(() => JSON.parse(api('status', '--json').out).extip?.ips?.[0]?.announcedAt, {
      what: 'the external IP announced',
      timeoutMs: 10_000,
    });
    const doc = JSON.parse(api('status', '--json').out) as Record<string, unknown>;
    expect(doc.schemaVersion).toBe(STATUS_SCHEMA_VERSION);
    // Every section but cluster's is on here, and the lists it checks have rows.
    for (const s of ['kernel', 'xdp', 'neighbor', 'extip', 'missTracker', 'stateFile'])
      expect(doc[s], s).toBeTypeOf('object');
    const documented = documentedFields();
    const real = documentFields(doc, documented);
    for (const p of [
      'xdp.devices[].progId',
      'xdp.counters[].results.*.packets',
      'neighbor.forwardable[].devices[].nexthops[].kernel.state[]',
      'neighbor.desired[].refsSample[]',
      'extip.ips[].announcedAt',
    ])
      expect(real.has(p), p).toBe(true);
    expect(undocumented(real, documented)).toEqual([]);
    expect(api('extip', 'del', '10.77.1.99').code).toBe(0);
  });

  it('forwardable add/del report what changed: only the IPs the owner took or gave up', () => {
    // Another owner's IP and one nobody holds: nothing of them is removed.
    const del = api('forwardable', 'del', '10.77.2.2', '10.77.9.9', '--owner', 'e2e-other');
    expect(del.code, del.err).toBe(0);
    expect(del.out).toBe('removed: 0 of 2 IP(s) for owner e2e-other (2 not held by it)\n');
    const add = api('forwardable', 'add', '10.77.2.2', '10.77.2.9', '--owner', 'e2e-other');
    expect(add.out).toBe('added: 2 IP(s) for owner e2e-other\n');
    const again = api('forwardable', 'add', '10.77.2.9', '--owner', 'e2e-other');
    expect(again.out).toBe('added: 0 of 1 IP(s) for owner e2e-other (1 already held)\n');
    const gone = api('forwardable', 'del', '10.77.2.2', '10.77.2.9', '--owner', 'e2e-other');
    expect(gone.out).toBe('removed: 2 IP(s) for owner e2e-other\n');
    const list = JSON.parse(api('forwardable', 'list', '--json').out) as { ip: string }[];
    expect(list.some((f) => f.ip === '10.77.2.2')).toBe(true); // e2e still holds it
    expect(list.some((f) => f.ip === '10.77.2.9')).toBe(false);
  });

  it('refuses bad input with a clear error and changes nothing', () => {
    const before = api('forwardable', 'list', '--json').out;
    // Not an IP at all: a usage error (2), refused by the CLI; an IP the rules or the node
    // refuse: the agent's error (1).
    for (const [args, msg, code] of [
      [['forwardable', 'add', '10.77.2.3', '300.1.1.1', '--owner', 'e2e'], /300\.1\.1\.1/, 2],
      [['forwardable', 'add', '224.0.0.5', '--owner', 'e2e'], /multicast/, 1],
      [['forwardable', 'add', '10.77.1.1', '--owner', 'e2e'], /address of this node/, 1],
      [['forwardable', 'add', 'fe80::1%eth0', '--owner', 'e2e'], /zone/, 2],
      [['forwardable', 'add', '10.77.2.3', '--owner', 'config'], /managed by the agent itself/, 1],
      [['extip', 'add', '127.0.0.1'], /loopback/, 1],
    ] as const) {
      const r = api(...args);
      expect(r.code, r.err).toBe(code);
      expect(r.err).toMatch(msg);
    }
    expect(api('forwardable', 'add', '--owner', 'x').code).toBe(2);
    expect(api('forwardable', 'list', '--json').out).toBe(before);
  });

  it('assigns and announces an external IP: on the holder, and a gratuitous ARP on the wire', async () => {
    const ifindex =
      ipJson<{ ifindex: number }[]>(lab.hosts.client, 'link', 'show', 'dev', 'eth0')[0]?.ifindex ??
      0;
    const frames: string[] = [];
    const cap = PacketSocket.open({ ifindex, netns: lab.hosts.client });
    cap.receive({
      onFrame(f) {
        const d = decodeFrame(f);
        if (d.kind === 'arp' && d.gratuitous) frames.push(`${d.op} ${d.senderIp} ${d.senderMac}`);
      },
      onError() {},
    });
    try {
      const r = api('extip', 'add', '10.77.1.100');
      expect(r.code, r.err).toBe(0);
      const addrs = ipJson<{ addr_info: { local: string; prefixlen: number }[] }[]>(
        lab.hosts.router,
        'addr',
        'show',
        'dev',
        'fibkeeper0',
      );
      expect(addrs[0]?.addr_info).toEqual(
        expect.arrayContaining([expect.objectContaining({ local: '10.77.1.100', prefixlen: 32 })]),
      );
      await waitFor(() => frames.length >= 2, { what: 'GARP request and reply' });
      expect(frames).toEqual(
        expect.arrayContaining([
          '1 10.77.1.100 02:fb:00:00:01:01',
          '2 10.77.1.100 02:fb:00:00:01:01',
        ]),
      );
    } finally {
      cap.close();
    }
    const list = JSON.parse(api('extip', 'list', '--json').out) as { ip: string; state: string }[];
    expect(list).toEqual([expect.objectContaining({ ip: '10.77.1.100', state: 'assigned' })]);
  });

  it('exposes metrics that promtool accepts, and health', async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.stdout + check.stderr).toBe('');
    expect(check.status).toBe(0);
    for (const name of [
      'fibkeeper_agent_ready 1',
      'fibkeeper_xdp_attached{device="r-client",mode="native"} 1',
      'fibkeeper_neighbor_forwardable_ips',
      'fibkeeper_extip_assigned',
    ]) {
      expect(text).toContain(name);
    }
    expect(text).not.toMatch(/"10\.77\./); // IPs never become label values
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });

  it('reloads static forwardable IPs on SIGHUP; a bad file changes nothing', async () => {
    writeConfig('forwardable:\n  static: ["10.77.4.2", "10.77.2.5"]\n');
    agent?.kill('SIGHUP');
    await waitFor(
      () =>
        (JSON.parse(api('forwardable', 'list', '--json').out) as { ip: string }[]).some(
          (e) => e.ip === '10.77.2.5',
        ),
      { what: 'reloaded static IP' },
    );
    const before = api('forwardable', 'list', '--json').out;
    const refusals = () =>
      readFileSync(join(dir, 'agent.log'), 'utf8').split('config reload refused').length - 1;
    const refused = refusals();
    writeConfig('xdp:\n  mode: warp\n');
    agent?.kill('SIGHUP');
    // the reload ran (and was refused) before anything is compared
    await waitFor(() => refusals() > refused || undefined, { what: 'the refused reload' });
    expect(agent?.exitCode).toBe(null);
    expect(api('forwardable', 'list', '--json').out).toBe(before);
    // xdp.nodePolicy applies at once, both ways
    const mode = () =>
      (JSON.parse(api('status', '--json').out) as { xdp: { nodePolicy: string } }).xdp.nodePolicy;
    expect(mode()).toBe('respect');
    writeConfig('forwardable:\n  static: ["10.77.4.2", "10.77.2.5"]\n', '  nodePolicy: bypass');
    agent?.kill('SIGHUP');
    await waitFor(() => mode() === 'bypass', { what: 'nodePolicy bypass after SIGHUP' });
    writeConfig('forwardable:\n  static: ["10.77.4.2", "10.77.2.5"]\n');
    agent?.kill('SIGHUP');
    await waitFor(() => mode() === 'respect', { what: 'nodePolicy respect after SIGHUP' });
    // What a reload applies and what it leaves for a restart is the option table's `reload`
    // column (README): a live option and a restart-only one changed together.
    writeConfig(
      'forwardable:\n  static: ["10.77.4.2", "10.77.2.5"]\nlog:\n  level: debug\nneighbor:\n  rateLimit: 900\n',
    );
    agent?.kill('SIGHUP');
    const reloaded = await waitFor(
      () =>
        readFileSync(join(dir, 'agent.log'), 'utf8')
          .split('\n')
          .filter((l) => l.includes('"config reloaded"'))
          .map((l) => JSON.parse(l) as { applied: string[]; needRestart: string[] })
          .find((r) => r.needRestart.includes('neighbor.rateLimit')),
      { what: 'the reload with neighbor.rateLimit' },
    );
    expect(reloaded.applied).toEqual(['log.level']);
    expect(reloaded.needRestart).toEqual(['neighbor.rateLimit']);
    // Every reload of this test: applied only live options, left only restart ones.
    const live = new Set(OPTIONS.filter((o) => o.reload === 'live').map((o) => o.path));
    const reloads = readFileSync(join(dir, 'agent.log'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"config reloaded"'))
      .map((l) => JSON.parse(l) as { applied: string[]; needRestart: string[] });
    expect(reloads.length).toBeGreaterThanOrEqual(4);
    expect(reloads.flatMap((r) => r.applied).filter((k) => !live.has(k))).toEqual([]);
    expect(reloads.flatMap((r) => r.needRestart).filter((k) => live.has(k))).toEqual([]);
    // Back to the file the other tests expect (and the log level with it).
    writeConfig('forwardable:\n  static: ["10.77.4.2", "10.77.2.5"]\n');
    agent?.kill('SIGHUP');
    await waitFor(
      () =>
        readFileSync(join(dir, 'agent.log'), 'utf8')
          .split('\n')
          .filter((l) => l.includes('"config reloaded"')).length > reloads.length,
      { what: 'the reload back' },
    );
  });

  it('survives SIGKILL mid-operation: restart restores everything and flushes nothing', async () => {
    // Watch the router's neighbor table for deletions while the agent dies and restarts.
    const nl = NetlinkHandle.open({ netns: lab.hosts.router });
    const deleted: string[] = [];
    const sub: Subscription = nl.subscribe(['neigh'], {
      onEvent(e) {
        if (e.kind === 'del' && e.object === 'neigh' && e.msg.protocol === 241)
          deleted.push(String(e.msg.dst));
      },
    });
    try {
      const entriesBefore = owned()
        .map((n) => `${n.dst} ${n.dev}`)
        .sort();
      // A request in flight when the agent is killed: all of it lands, or none.
      const ips = Array.from({ length: 200 }, (_, i) => `10.77.2.${i + 20}`);
      const pending = spawn(
        'node',
        [BIN, 'forwardable', 'add', ...ips, '--owner', 'burst', '--socket', sock()],
        { stdio: 'ignore' },
      );
      // Listen at once: the CLI may fail fast (ECONNREFUSED) before the agent is even killed.
      const pendingDone = new Promise((r) => pending.once('exit', r));
      await new Promise((r) => setTimeout(r, 150));
      await stopAgent('SIGKILL');
      await pendingDone;
      agent = await startAgent();
      const list = JSON.parse(api('forwardable', 'list', '--json').out) as {
        ip: string;
        owners: string[];
      }[];
      const burst = list.filter((e) => e.owners.includes('burst')).length;
      expect([0, 200]).toContain(burst);
      expect(list).toEqual(expect.arrayContaining([{ ip: '10.77.2.2', owners: ['e2e'] }]));
      expect(JSON.parse(api('extip', 'list', '--json').out)).toEqual([
        expect.objectContaining({ ip: '10.77.1.100' }),
      ]);
      for (const e of entriesBefore) expect(owned().map((n) => `${n.dst} ${n.dev}`)).toContain(e);
      expect(deleted).toEqual([]);
      // No duplicates: one row per IP, one kernel entry per (dst, dev).
      expect(new Set(list.map((e) => e.ip)).size).toBe(list.length);
      const keys = owned().map((n) => `${n.dst} ${n.dev}`);
      expect(new Set(keys).size).toBe(keys.length);
      if (burst > 0) api('forwardable', 'set', '--owner', 'burst');
    } finally {
      sub.close();
      nl.close();
    }
  }, 60_000);

  it('xdp detach: through the running agent, and from the pins when no agent runs', async () => {
    const xdpOn = () =>
      ipJson<{ ifname: string; xdp?: unknown }[]>(lab.hosts.router, '-d', 'link', 'show')
        .filter((l) => l.xdp !== undefined)
        .map((l) => l.ifname)
        .sort();
    expect(xdpOn()).toEqual([...lab.routerDevices].sort());
    let r = api('xdp', 'detach');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/detached by the agent: .*r-client/);
    expect(xdpOn()).toEqual([]);
    // A restart attaches again; a normal stop leaves XDP in place (xdp.keepOnStop).
    await stopAgent();
    agent = await startAgent();
    expect(xdpOn()).toEqual([...lab.routerDevices].sort());
    await stopAgent();
    expect(xdpOn()).toEqual([...lab.routerDevices].sort());
    r = cli('xdp', 'detach', '--config', join(dir, 'config.yaml'));
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/no agent running; detached from the pins: .*r-server1/);
    expect(xdpOn()).toEqual([]);
    agent = await startAgent();
  }, 60_000);

  it('refuses to start on a bad config with an error naming the option, and binds nothing', () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'neighbor:\n  refresh: sometimes\n');
    const r = cli('run', '--config', bad, '--api-socket', join(dir, 'bad.sock'));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /neighbor\.refresh: must be one of auto, managed, legacy, got "sometimes"/,
    );
    expect(existsSync(join(dir, 'bad.sock'))).toBe(false);
  });
});
