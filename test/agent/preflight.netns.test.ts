// Validate, lock, then act: a start that cannot succeed changes nothing in the namespace; a
// second agent on a namespace refuses with the first one's PID; a reload is all or nothing;
// SIGHUP during start waits; every API call answers within its deadline.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBpffs, unmount } from '../../src/native/index.js';
import { cleanupLater } from '../helpers/cleanup.js';
import { ip, ipJson, privileged, waitFor } from '../helpers/netns.js';
import {
  BIN,
  baseConfig,
  call,
  holderIps,
  makeWorld,
  ownedNeighbors,
  startAgent,
  stopAgent,
  writeConfig,
  type AgentProc,
  type AgentWorld,
  type ConfigOptions,
} from './harness.js';

const { skip } = privileged();

/** The namespace shows no trace of an agent: no holder, no owned entries, no XDP. */
function untouched(w: AgentWorld): void {
  const links = ipJson<{ ifname: string; xdp?: unknown }[]>(w.ns, '-d', 'link', 'show');
  expect(links.map((l) => l.ifname)).not.toContain('fibkeeper0');
  expect(links.filter((l) => l.xdp !== undefined)).toEqual([]);
  expect(ownedNeighbors(w.ns, w.dev)).toEqual([]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Adds `marker` (owner "marker") through the API and waits for its kernel entry: the
 * reconciler has then run past everything queued before. Returns the owned entries.
 */
async function markerRound(w: AgentWorld, marker: string): Promise<string[]> {
  const r = await call(w.sock, 'POST', '/v1/forwardable', { owner: 'marker', ips: [marker] });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await waitFor(() => ownedNeighbors(w.ns, w.dev).includes(marker), { what: `${marker} entry` });
  return ownedNeighbors(w.ns, w.dev);
}

async function exitsWithin(a: AgentProc, ms: number): Promise<number | null | 'running'> {
  return Promise.race([a.exited, sleep(ms).then(() => 'running' as const)]);
}

function xdpProgs(w: AgentWorld): Record<string, number> {
  const links = ipJson<{ ifname: string; xdp?: { prog?: { id: number } } }[]>(
    w.ns,
    '-d',
    'link',
    'show',
  );
  return Object.fromEntries(
    links.filter((l) => l.xdp?.prog).map((l) => [l.ifname, l.xdp?.prog?.id ?? 0]),
  );
}

describe.skipIf(skip)('validate, lock, then act', () => {
  let w: AgentWorld;
  beforeAll(() => {
    w = makeWorld('pre');
  });
  afterAll(() => {
    const bpf = join(w.dir, 'bpf');
    if (existsSync(bpf) && isBpffs(bpf)) unmount(bpf, { lazy: true });
  });

  it('refuses an unusable socket directory before any kernel change', async () => {
    const extra = { forwardableStatic: ['10.88.9.1'] };
    for (const [what, prepare, msg] of [
      ['open to others', (d: string) => chmodSync(d, 0o777), /accessible to others/],
      ['owned by another user', (d: string) => chownSync(d, 65534, 65534), /owned by uid 65534/],
    ] as const) {
      const dir = join(w.dir, `sockdir-${what.replace(/ /g, '-')}`);
      mkdirSync(dir, { mode: 0o750 });
      prepare(dir);
      writeConfig(w, baseConfig({ ...w, sock: join(dir, 'api.sock') }, extra));
      const a = await startAgent(w, { ready: false });
      expect(await exitsWithin(a, 20_000), what).toBe(1);
      expect(a.log(), what).toMatch(msg);
      untouched(w);
    }
  }, 60_000);

  it("refuses a static list with the node's own IP before any kernel change; config check says so too", async () => {
    /**
     * What `ip` shows of the namespace that an agent could have changed: its links (a holder,
     * XDP), their global addresses, and neighbor entries that the kernel did not learn itself
     * (the kernel's own IPv6 link-local activity goes on meanwhile and is left out).
     */
    const kernel = () => [
      ipJson<{ ifname: string; xdp?: unknown; master?: string }[]>(w.ns, '-d', 'link', 'show').map(
        (l) => [l.ifname, l.xdp !== undefined, l.master],
      ),
      ipJson(w.ns, 'addr', 'show', 'scope', 'global'),
      ipJson<{ dst: string; protocol?: string; flags?: string[]; state?: string[] }[]>(
        w.ns,
        'neigh',
        'show',
        'nud',
        'all',
      ).filter(
        (n) =>
          n.protocol !== undefined ||
          (n.flags ?? []).some((f) => f === 'extern_learn' || f === 'managed') ||
          (n.state ?? []).includes('PERMANENT'),
      ),
    ];
    const cases: [string, ConfigOptions][] = [
      ['extip.static', { forwardableStatic: ['10.88.9.1'], extipStatic: ['10.88.0.1'] }],
      ['forwardable.static', { forwardableStatic: ['10.88.9.1', '10.88.0.1'] }],
    ];
    for (const [list, extra] of cases) {
      const before = kernel();
      writeConfig(w, baseConfig(w, extra));
      const a = await startAgent(w, { ready: false });
      expect(await exitsWithin(a, 20_000), list).toBe(1);
      expect(a.log(), list).toMatch(
        new RegExp(
          `${list.replace('.', '\\.')}: .*10\\.88\\.0\\.1 is an address of this node \\(on fk-a\\)`,
        ),
      );
      untouched(w);
      expect(kernel(), list).toEqual(before);
      // `config check` sees the node too (it may enter the namespace: root).
      const check = spawnSync('node', [BIN, 'config', 'check', w.configFile], { encoding: 'utf8' });
      expect(check.status, list).toBe(1);
      expect(check.stderr, list).toMatch(/10\.88\.0\.1 is an address of this node/);
    }
  }, 60_000);

  it('refuses api.tcp on a non-loopback address without a token file, and binds nothing', async () => {
    // Inside the namespace, so that even a wrong bind is not on the host.
    writeConfig(w, baseConfig(w, { api: ['tcp: "0.0.0.0:47991"'] }));
    const a = await startAgent(w, { ready: false, wrap: ['ip', 'netns', 'exec', w.ns] });
    expect(await exitsWithin(a, 20_000)).toBe(1);
    expect(a.log()).toMatch(/api\.tcp.*0\.0\.0\.0.*api\.tokenFile/);
    const ss = spawnSync('ip', ['netns', 'exec', w.ns, 'ss', '-Hltn'], { encoding: 'utf8' });
    expect(ss.stdout).toBe('');
    untouched(w);
  }, 30_000);

  it('runs one agent per namespace: a second refuses with the PID of the first and changes nothing', async () => {
    writeConfig(
      w,
      baseConfig(w, { xdp: true, forwardableStatic: ['10.88.9.1'], extipStatic: ['10.89.9.1'] }),
    );
    const first = await startAgent(w);
    try {
      const progs = xdpProgs(w);
      expect(Object.keys(progs)).toEqual([w.dev]);
      const b: AgentWorld = {
        ...w,
        sock: join(w.dir, 'run2', 'api.sock'),
        stateFile: join(w.dir, 'state2', 'state.json'),
        configFile: join(w.dir, 'config2.yaml'),
      };
      // Another socket, state file and extip set: nothing is shared but the namespace.
      writeConfig(
        b,
        baseConfig(b, { xdp: true, forwardableStatic: ['10.88.9.2'], extipStatic: ['10.89.9.2'] }),
      );
      const second = await startAgent(b, { ready: false });
      expect(await exitsWithin(second, 20_000)).toBe(1);
      expect(second.log()).toContain(`pid ${first.pid}`);
      expect(second.log()).toMatch(/another fibkeeper agent/);
      expect(xdpProgs(w)).toEqual(progs);
      expect(holderIps(w.ns)).toEqual(['10.89.9.1']);
      // The first agent's reconciler ran after the refusal (a marker's entry came): the
      // refused agent's IP was never written.
      expect(await markerRound(w, '10.88.9.5')).toEqual(['10.88.9.1', '10.88.9.5']);
      expect((await call(w.sock, 'GET', '/v1/status')).body.ready).toBe(true);
      expect(existsSync(b.sock)).toBe(false);
    } finally {
      await stopAgent(first);
    }
  }, 90_000);

  it('waits for the start when SIGHUP comes during it', async () => {
    writeConfig(w, baseConfig(w, { forwardableStatic: ['10.88.9.1'] }));
    const a = await startAgent(w, { ready: false });
    try {
      // SIGHUP as soon as the agent has said anything: it is starting.
      await waitFor(() => a.log().length > 0, { what: 'first log line', intervalMs: 5 });
      a.child.kill('SIGHUP');
      await waitFor(
        async () => {
          if (a.child.exitCode !== null || a.child.signalCode !== null) {
            throw new Error(`agent died: ${a.child.signalCode ?? a.child.exitCode}`);
          }
          const r = await call(w.sock, 'GET', '/v1/status').catch(() => undefined);
          return r?.body.ready === true;
        },
        { timeoutMs: 30_000, what: 'ready after an early SIGHUP' },
      );
    } finally {
      await stopAgent(a);
    }
  }, 60_000);

  it('reloads all or nothing: a refused reload applies no part of the new file', async () => {
    writeConfig(w, baseConfig(w, { forwardableStatic: ['10.88.9.1'] }));
    const a = await startAgent(w);
    try {
      // A new static IP, plus an external IP that is an address of this node: refused whole.
      writeConfig(
        w,
        baseConfig(w, {
          forwardableStatic: ['10.88.9.1', '10.88.9.3'],
          extipStatic: ['10.88.0.1'],
        }),
      );
      a.child.kill('SIGHUP');
      await waitFor(() => /config reload refused/.test(a.log()), { what: 'refused reload' });
      // A marker added after the refusal: once its entry is in, the reconciler has run past
      // the reload, and no part of the refused file was applied.
      expect(await markerRound(w, '10.88.9.5')).toEqual(['10.88.9.1', '10.88.9.5']);
      const list = (await call(w.sock, 'GET', '/v1/forwardable')).body.forwardable as {
        ip: string;
      }[];
      expect(list.map((e) => e.ip).sort()).toEqual(['10.88.9.1', '10.88.9.5']);
      expect(holderIps(w.ns)).toEqual([]);
    } finally {
      await stopAgent(a);
    }
  }, 60_000);

  it('answers an external-IP request within its deadline while the holder is unusable', async () => {
    writeConfig(w, baseConfig(w));
    const a = await startAgent(w);
    try {
      // Replace the holder with a device fibkeeper cannot own, while the agent is paused
      // (else it recreates its holder first); it then retries forever.
      a.child.kill('SIGSTOP');
      try {
        ip(w.ns, 'link', 'del', 'fibkeeper0');
        ip(w.ns, 'link', 'add', 'fibkeeper0', 'type', 'veth', 'peer', 'name', 'fk-h');
      } finally {
        a.child.kill('SIGCONT');
      }
      const t0 = Date.now();
      const r = await call(
        w.sock,
        'POST',
        '/v1/extip',
        { ips: ['10.89.9.9'] },
        { timeoutMs: 30_000 },
      );
      const took = Date.now() - t0;
      expect(r.status).toBe(503);
      expect(JSON.stringify(r.body)).toMatch(/fibkeeper0/);
      expect(took).toBeLessThan(15_000);
      // Other calls still answer meanwhile.
      expect((await call(w.sock, 'GET', '/v1/forwardable')).status).toBe(200);
      ip(w.ns, 'link', 'del', 'fibkeeper0');
    } finally {
      await stopAgent(a);
    }
  }, 60_000);
});

describe.skipIf(skip)('a verifier refusal fails the start', () => {
  it('names the refusal and the fix, and nothing else was changed', async () => {
    const w = makeWorld('verif');
    mkdirSync(join(w.dir, 'bpf'), { recursive: true });
    // The agent without CAP_PERFMON, told it has every capability (the pre-check passes):
    // the kernel's verifier refuses the program, as an older kernel would.
    const script = join(w.dir, 'start.mjs');
    writeFileSync(
      script,
      [
        `import { Agent } from '${resolve('dist/agent/index.js')}';`,
        `import { buildConfig } from '${resolve('dist/config/index.js')}';`,
        `import { createLogger } from '${resolve('dist/log/index.js')}';`,
        `const cfg = buildConfig(${JSON.stringify(baseConfig(w, { xdp: true, forwardableStatic: ['10.88.9.1'] }))});`,
        "const agent = new Agent({ config: { ...cfg, netns: '' }, version: 't', log: createLogger('error'), capabilities: (1n << 64n) - 1n });",
        'agent.start().then(() => process.exit(0), (err) => { console.error(`REFUSED ${err.code}: ${err.message}`); process.exit(1); });',
      ].join('\n'),
    );
    const set = '-all,+net_admin,+bpf,+net_raw';
    const r = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        w.ns,
        'sh',
        '-c',
        `mount -t bpf bpf ${join(w.dir, 'bpf')} && exec setpriv --inh-caps=${set} --ambient-caps=${set} --bounding-set=${set} node ${script}`,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /REFUSED FIBKEEPER_ERR_NOT_SUPPORTED: the kernel's verifier refused the XDP program \(.*prohibited.*\); fix: .*xdp\.enabled: false/,
    );
    untouched(w);
  }, 40_000);
});

describe.skipIf(skip)('capabilities are checked before anything is changed', () => {
  const CAPS = ['net_admin', 'bpf', 'perfmon', 'net_raw'];
  for (const drop of ['perfmon', 'bpf', 'net_admin']) {
    it(`refuses to start without CAP_${drop.toUpperCase()}, naming it and the real fix`, async () => {
      const w = makeWorld(`cap${drop.slice(0, 3)}`);
      mkdirSync(join(w.dir, 'bpf'), { recursive: true });
      const keep = CAPS.filter((c) => c !== drop);
      const set = `-all,${keep.map((c) => `+${c}`).join(',')}`;
      const script = [
        `mount -t bpf bpf ${join(w.dir, 'bpf')}`,
        `exec setpriv --inh-caps=${set} --ambient-caps=${set} --bounding-set=${set} node ${BIN} run` +
          ` --devices=${w.dev} --extip-enabled=true --extip-holder-kind=bridge --extip-interface=${w.dev}` +
          ` --xdp-pin-dir=${join(w.dir, 'bpf')} --api-socket=${w.sock} --state-file=${w.stateFile}` +
          ` --metrics-address= --forwardable-static=10.88.9.1`,
      ].join(' && ');
      const child = spawn('ip', ['netns', 'exec', w.ns, 'sh', '-c', script], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      cleanupLater(() => child.exitCode === null && child.kill('SIGKILL'));
      let log = '';
      child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
      const code = await Promise.race([
        new Promise((r) => child.once('exit', r)),
        sleep(20_000).then(() => 'running'),
      ]);
      expect(code).toBe(1);
      const lastLine = log.trim().split('\n').pop() ?? '';
      expect(lastLine).toMatch(new RegExp(`CAP_${drop.toUpperCase()}`, 'i'));
      expect(lastLine).toMatch(/AmbientCapabilities|capabilities\.add/);
      expect(log).not.toMatch(/use Linux/);
      untouched(w);
    }, 40_000);
  }
});
