import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ApiServer, type ControlHandlers } from '../api/index.js';
import { silentLogger } from '../log/index.js';
import { main } from './index.js';

async function run(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('cli', () => {
  it('prints help with exit 0, and usage errors with exit 2', async () => {
    expect((await run('--help')).code).toBe(0);
    expect((await run()).code).toBe(2);
    const unknown = await run('frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown command "frobnicate"/);
    const group = await run('forwardable');
    expect(group.code).toBe(2);
    expect(group.err).toMatch(/fibkeeper forwardable add IP\.\.\. --owner NAME/);
    expect((await run('forwardable', '--help')).code).toBe(0);
    const bad = await run('probe', '--bogus');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/Unknown option '--bogus'/);
    expect(bad.err).toMatch(/Usage: fibkeeper probe/);
    const noOwner = await run('forwardable', 'add', '10.0.0.1', '--socket', '/nonexistent.sock');
    expect(noOwner.code).toBe(2);
    expect(noOwner.err).toMatch(/--owner NAME is required/);
    for (const cmd of [
      'run',
      'status',
      'extip',
      'cluster',
      'xdp',
      'lab',
      'demo',
      'config',
      'version',
    ]) {
      const h = await run(...cmd.split(' '), '--help');
      expect(h.code, cmd).toBe(0);
      expect(h.out, cmd).toMatch(/Usage: fibkeeper/);
    }
  });

  it('reports the version', async () => {
    const v = await run('version');
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(v.code).toBe(0);
    expect(v.out).toBe(`fibkeeper ${version} (node ${process.version})\n`);
  });

  it('checks config files: exit 1 with the option named, 0 with the result', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fk-cli-'));
    try {
      writeFileSync(join(dir, 'bad.yaml'), 'xdp:\n  mode: warp\n');
      const bad = await run('config', 'check', join(dir, 'bad.yaml'));
      expect(bad.code).toBe(1);
      expect(bad.err).toMatch(/xdp\.mode: must be one of auto, native, generic/);
      const state = join(dir, 'state.json');
      writeFileSync(
        join(dir, 'ok.yaml'),
        `api:\n  socketMode: "0600"\nextip:\n  interface: eth0\nstateFile: ${state}\n`,
      );
      const ok = await run('config', 'check', join(dir, 'ok.yaml'));
      expect(ok.code, ok.err).toBe(0);
      expect(JSON.parse(ok.out).api.socketMode).toBe('0600');
      expect((await run('config', 'check')).code).toBe(2);
      // What `run` refuses, `config check` refuses (finding 5).
      for (const [text, msg] of [
        ['forwardable:\n  static: ["300.1.1.1"]\n', /forwardable\.static: "300\.1\.1\.1"/],
        ['neighbor:\n  resyncInterval: 1000h\n', /above the maximum 24h/],
        ['extip:\n  enabled: true\n', /extip\.enabled: external IPs need the interface/],
        ['api:\n  tcp: "0.0.0.0:9471"\nextip:\n  enabled: false\n', /api\.tokenFile/],
        [`extip:\n  enabled: false\nstateFile: ${state}\n`, /state file .* not valid JSON/],
      ] as const) {
        writeFileSync(state, '{"version": 1,');
        writeFileSync(join(dir, 'bad.yaml'), text);
        const r = await run('config', 'check', join(dir, 'bad.yaml'));
        expect(r.code, text).toBe(1);
        expect(r.err, text).toMatch(msg);
      }
      // Entries the agent would skip are listed, the file passes.
      writeFileSync(
        state,
        JSON.stringify({ version: 1, forwardable: { ops: ['10.0.0.1', '224.0.0.1'] }, extip: [] }),
      );
      const warn = await run('config', 'check', join(dir, 'ok.yaml'));
      expect(warn.code).toBe(0);
      expect(warn.err).toMatch(/forwardable ops 224\.0\.0\.1 would be skipped: .*multicast/);
      // bypassing the node's policy takes the word itself, and is called out
      writeFileSync(state, '{"version": 1}');
      for (const v of ['false', 'off', 'Bypass', 'skip']) {
        writeFileSync(join(dir, 'np.yaml'), `extip:\n  enabled: false\nxdp:\n  nodePolicy: ${v}\n`);
        const r = await run('config', 'check', join(dir, 'np.yaml'));
        expect(r.code, v).toBe(1);
        expect(r.err, v).toMatch(/xdp\.nodePolicy: must be one of respect, bypass/);
      }
      writeFileSync(join(dir, 'np.yaml'), 'extip:\n  enabled: false\nxdp:\n  nodePolicy: bypass\n');
      const bypass = await run('config', 'check', join(dir, 'np.yaml'));
      expect(bypass.code, bypass.err).toBe(0);
      expect(JSON.parse(bypass.out).xdp.nodePolicy).toBe('bypass');
      expect(bypass.err).toMatch(/warning: xdp\.nodePolicy: bypass: frames forwarded in XDP skip/);
      expect(bypass.err).not.toMatch(/neighbor\.refresh/);
      // a forced managed path is called out (auto, the default, is not)
      writeFileSync(
        join(dir, 'nm.yaml'),
        'extip:\n  enabled: false\nneighbor:\n  refresh: managed\n  rateLimit: 500\n',
      );
      const managed = await run('config', 'check', join(dir, 'nm.yaml'));
      expect(managed.code, managed.err).toBe(0);
      expect(managed.err).toMatch(
        /warning: neighbor\.refresh: managed: above neighbor\.rateLimit \(500\) desired entries/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits quietly when the reader of its output goes away (EPIPE)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fk-cli-'));
    const entries = Array.from({ length: 20_000 }, (_, i) => ({
      ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`,
      owners: ['ops'],
    }));
    const server = new ApiServer({
      socketPath: join(dir, 'run', 'api.sock'),
      socketMode: 0o600,
      handlers: {
        forwardableList: async () => entries,
        status: async () => ({ ready: true, healthy: true, neighbor: { forwardable: entries } }),
      } as unknown as ControlHandlers,
      log: silentLogger(),
    });
    await server.start();
    try {
      for (const cmd of ['forwardable list', 'forwardable list --json', 'status --json']) {
        // Not spawnSync: the server answers from this process's event loop.
        const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>(
          (resolve) => {
            const child = spawn('bash', [
              '-o',
              'pipefail',
              '-c',
              `node bin/fibkeeper.js ${cmd} --socket ${join(dir, 'run', 'api.sock')} | head -1`,
            ]);
            let stdout = '';
            let stderr = '';
            child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
            child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
            child.on('close', (status) => resolve({ status, stdout, stderr }));
          },
        );
        expect(r.stderr, cmd).toBe('');
        expect(r.status, cmd).toBe(0);
        expect(r.stdout.split('\n').length, cmd).toBe(2);
      }
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('forwardable add/del/set --file send the file as one bulk request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fk-cli-'));
    const sock = join(dir, 'run', 'api.sock');
    const seen: string[] = [];
    const text = (ips: unknown[]) => ips.map((ip) => (typeof ip === 'string' ? ip : '?'));
    const server = new ApiServer({
      socketPath: sock,
      socketMode: 0o600,
      handlers: {
        forwardableAdd: async (o: string, ips: unknown[]) => {
          seen.push(`add ${o} ${text(ips).join(',')}`);
          return { added: ips.length - 1, removed: 0 };
        },
        forwardableDelete: async (o: string, ips: unknown[]) =>
          void seen.push(`del ${o} ${text(ips).join(',')}`),
        forwardableSetOwner: async (o: string, ips: unknown[]) => {
          seen.push(`set ${o} ${text(ips).join(',')}`);
          return { added: ips.length, removed: 0 };
        },
      } as unknown as ControlHandlers,
      log: silentLogger(),
    });
    await server.start();
    try {
      const file = join(dir, 'ips.txt');
      writeFileSync(file, '# lb backends\n10.0.0.1\n\n10.0.0.2\r\n 10.0.0.3 \n');
      const add = await run(
        'forwardable',
        'add',
        '--file',
        file,
        '--owner',
        'lb',
        '--socket',
        sock,
      );
      expect(add.code, add.err).toBe(0);
      expect(add.out).toBe('added: 2 of 3 IP(s) for owner lb (1 already held)\n');
      const set = await run(
        'forwardable',
        'set',
        '--owner',
        'o/1',
        '--file',
        file,
        '--socket',
        sock,
      );
      expect(set.out).toBe('replaced: owner o/1 now holds 3 IP(s) (+3, -0)\n');
      await run('forwardable', 'del', '--file', file, '--owner', 'lb', '--socket', sock);
      expect(seen).toEqual([
        'add lb 10.0.0.1,10.0.0.2,10.0.0.3',
        'set o/1 10.0.0.1,10.0.0.2,10.0.0.3',
        'del lb 10.0.0.1,10.0.0.2,10.0.0.3',
      ]);
      writeFileSync(file, '10.0.0.1\n10.0.0.999\n');
      const bad = await run(
        'forwardable',
        'add',
        '--file',
        file,
        '--owner',
        'lb',
        '--socket',
        sock,
      );
      expect(bad.code).toBe(1);
      expect(bad.err).toMatch(/line 2 "10\.0\.0\.999".*nothing was changed/);
      const both = await run('forwardable', 'add', '10.0.0.4', '--file', file, '--owner', 'lb');
      expect(both.code).toBe(2);
      const missing = await run('forwardable', 'add', '--file', join(dir, 'none'), '--owner', 'x');
      expect(missing.code).toBe(2);
      expect(missing.err).toMatch(/--file .*none.*ENOENT/);
      expect(seen).toHaveLength(3);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('cluster extip add/del/list and cluster status talk to the agent and print the answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fk-cli-'));
    const sock = join(dir, 'run', 'api.sock');
    const seen: unknown[] = [];
    const server = new ApiServer({
      socketPath: sock,
      socketMode: 0o600,
      handlers: {
        clusterExtipAdd: async (ips: string[], eligible: unknown) =>
          void seen.push({ ips, eligible }),
        clusterExtipDelete: async (ips: string[]) => ips.slice(1),
        clusterExtipList: async () => [
          { ip: '192.0.2.10', nodes: ['a', 'b'], labels: {}, mode: 'single', owner: 'b' },
          { ip: '2001:db8::10', nodes: [], labels: { zone: 'x' }, mode: 'single', owner: null },
          { ip: '192.0.2.60', nodes: [], labels: {}, mode: 'active-active', owner: null },
        ],
        clusterStatus: async () => ({
          node: 'a',
          ready: true,
          lease: { id: '7', ttlMs: 1000, ageMs: 12_345, holdForMs: 640 },
          members: [
            { name: 'a', labels: { zone: 'x' }, ips: ['10.0.0.1'], seenForMs: 900, bgp: true },
          ],
          ips: [
            { ip: '192.0.2.10', owner: 'b', placement: 'b', lastMoveAgoMs: 1500, heldHere: false },
            {
              ip: '192.0.2.60',
              mode: 'active-active',
              announcers: ['a', 'c'],
              heldHere: true,
            },
          ],
          sysctls: [{ key: 'net.ipv4.conf.eth0.arp_ignore', effective: 1, want: 1 }],
          problems: [],
        }),
      } as unknown as ControlHandlers,
      log: silentLogger(),
    });
    await server.start();
    try {
      const add = await run(
        'cluster',
        'extip',
        'add',
        '192.0.2.10',
        '2001:db8::10',
        '--node',
        'a',
        '--node',
        'b',
        '--label',
        'zone=x',
        '--socket',
        sock,
      );
      expect(add.code, add.err).toBe(0);
      expect(add.out).toBe('added to the cluster: 192.0.2.10 2001:db8::10\n');
      expect(seen).toEqual([
        {
          ips: ['192.0.2.10', '2001:db8::10'],
          eligible: { nodes: ['a', 'b'], labels: { zone: 'x' } },
        },
      ]);
      const aa = await run(
        'cluster',
        'extip',
        'add',
        '192.0.2.60',
        '--active-active',
        '--socket',
        sock,
      );
      expect(aa.out).toBe('added to the cluster (active-active): 192.0.2.60\n');
      expect(seen.at(-1)).toEqual({
        ips: ['192.0.2.60'],
        eligible: { nodes: [], labels: {}, mode: 'active-active' },
      });
      const badLabel = await run(
        'cluster',
        'extip',
        'add',
        '192.0.2.1',
        '--label',
        'zone',
        '--socket',
        sock,
      );
      expect(badLabel.code).toBe(2);
      expect(badLabel.err).toMatch(/--label zone: write it as KEY=VALUE/);
      const del = await run('cluster', 'extip', 'del', '192.0.2.9', '192.0.2.10', '--socket', sock);
      expect(del.out).toBe('removed from the cluster: 192.0.2.10 (1 not in the desired set)\n');
      const list = await run('cluster', 'extip', 'list', '--socket', sock);
      expect(list.out.split('\n')).toEqual([
        'IP            MODE           OWNER  NODES  LABELS',
        '192.0.2.10    single         b      a,b    *',
        '2001:db8::10  single         -      *      zone=x',
        '192.0.2.60    active-active  (all)  *      *',
        '',
      ]);
      const st = await run('cluster', 'status', '--socket', sock);
      expect(st.out).toMatch(/^Cluster: node a, registered; lease 7 \(TTL 1000 ms, age 12s/);
      expect(st.out).toMatch(/net\.ipv4\.conf\.eth0\.arp_ignore=1/);
      expect(st.out).toMatch(/192\.0\.2\.10 +b +b +1500ms ago/);
      expect(st.out).toMatch(/^ +192\.0\.2\.60 +all: a,c +active-active +- +held$/m);
      expect(st.out).toMatch(/^ +a +ok bgp /m);
      const group = await run('cluster');
      expect(group.code).toBe(2);
      expect(group.err).toMatch(
        /^Usage: fibkeeper cluster <extip\|status\|drain\|uncordon\|prepare> \.\.\./,
      );
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('cluster prepare does nothing when cluster mode is off', async () => {
    const r = await run('cluster', 'prepare');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe('cluster mode is off (cluster.enabled: false): nothing to set\n');
  });

  it('tells the user when no agent answers', async () => {
    const r = await run('status', '--socket', '/nonexistent/fibkeeper.sock');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/cannot reach the agent at \/nonexistent\/fibkeeper\.sock/);
    const q = await run('status', '-q', '--socket', '/nonexistent/fibkeeper.sock');
    expect(q).toEqual({ code: 2, out: '', err: '' });
  });

  it('status exits 0 ready and healthy, 1 degraded, 2 not ready or unanswered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fk-cli-'));
    let doc: Record<string, unknown> | Error = {};
    const server = new ApiServer({
      socketPath: join(dir, 'api.sock'),
      socketMode: 0o600,
      handlers: {
        status: async () => {
          if (doc instanceof Error) throw doc;
          return doc;
        },
      } as unknown as ControlHandlers,
      log: silentLogger(),
    });
    await server.start();
    try {
      const sock = ['--socket', join(dir, 'api.sock')];
      const cases: [Record<string, unknown> | Error, number][] = [
        [{ ready: true, notReady: [], healthy: true, unhealthy: [] }, 0],
        [{ ready: true, notReady: [], healthy: false, unhealthy: ['neighbor: 2 unusable'] }, 1],
        [{ ready: false, notReady: ['initial dumps'], healthy: true, unhealthy: [] }, 2],
        [{ ready: false, notReady: ['initial dumps'], healthy: false, unhealthy: ['x'] }, 2],
        [Object.assign(new Error('agent is stopping'), { code: 'FIBKEEPER_ERR_CLOSED' }), 2],
      ];
      for (const [d, code] of cases) {
        doc = d;
        const r = await run('status', ...sock);
        expect(r.code, JSON.stringify(d)).toBe(code);
        const q = await run('status', '--quiet', ...sock);
        expect(q, JSON.stringify(d)).toEqual({ code, out: '', err: '' });
        const j = await run('status', '--json', ...sock);
        expect(j.code).toBe(code);
        if (!(d instanceof Error)) expect(JSON.parse(j.out)).toEqual(d);
      }
      doc = { ready: true, notReady: [], healthy: false, unhealthy: ['neighbor: 2 unusable'] };
      expect((await run('status', ...sock)).out).toMatch(/neighbor: 2 unusable/);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
