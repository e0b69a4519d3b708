// What the control API acknowledged is kept: concurrent requests, a disk that fills up, a
// state file with one bad entry, owner names that are also JavaScript property names. Each
// case runs the built agent in a namespace of its own and checks the state file, the API and
// the kernel (`ip`).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupLater } from '../helpers/cleanup.js';
import { privileged, waitFor } from '../helpers/netns.js';
import {
  baseConfig,
  call,
  holderIps,
  makeWorld,
  ownedNeighbors,
  readState,
  startAgent,
  stopAgent,
  writeConfig,
  type AgentProc,
  type AgentWorld,
} from './harness.js';

const { skip } = privileged();

const extips = (n: number, third = 0) =>
  Array.from({ length: n }, (_, i) => `10.89.${third + Math.floor(i / 250)}.${(i % 250) + 1}`);

describe.skipIf(skip)('acknowledged control-plane changes are kept', () => {
  let w: AgentWorld;
  let agent: AgentProc | undefined;

  beforeAll(async () => {
    w = makeWorld('dur');
    writeConfig(w, baseConfig(w));
    agent = await startAgent(w);
  }, 60_000);
  afterAll(async () => {
    if (agent) await stopAgent(agent);
  });

  const restart = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (agent) await stopAgent(agent, signal);
    agent = await startAgent(w);
  };

  it('keeps every external IP of 200 concurrent adds and 100 concurrent deletes', async () => {
    const ips = extips(200);
    const adds = await Promise.all(
      ips.map((ip) => call(w.sock, 'POST', '/v1/extip', { ips: [ip] })),
    );
    expect(adds.filter((r) => r.status !== 200)).toEqual([]);
    expect(readState(w).extip.sort()).toEqual([...ips].sort());
    expect(holderIps(w.ns)).toEqual([...ips].sort());
    const gone = ips.filter((_, i) => i % 2 === 0);
    const kept = ips.filter((_, i) => i % 2 === 1).sort();
    const dels = await Promise.all(
      gone.map((ip) => call(w.sock, 'DELETE', '/v1/extip', { ips: [ip] })),
    );
    expect(dels.filter((r) => r.status !== 200)).toEqual([]);
    expect(readState(w).extip.sort()).toEqual(kept);
    await restart('SIGKILL');
    expect(holderIps(w.ns)).toEqual(kept);
    const list = await call(w.sock, 'GET', '/v1/extip');
    expect((list.body.extip as { ip: string }[]).map((e) => e.ip).sort()).toEqual(kept);
    const last = await call(w.sock, 'DELETE', '/v1/extip', { ips: kept });
    expect(last.status, JSON.stringify(last.body) + agent?.log().slice(-3000)).toBe(200);
    expect(holderIps(w.ns)).toEqual([]);
  }, 60_000);

  it('serves owners named like JavaScript properties, and refuses a bad path escape with 400', async () => {
    const owners = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'];
    for (const [i, owner] of owners.entries()) {
      const r = await call(w.sock, 'POST', '/v1/forwardable', { owner, ips: [`10.88.6.${i + 1}`] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const set = await call(w.sock, 'PUT', '/v1/owners/constructor/forwardable', {
      ips: ['10.88.6.10'],
    });
    expect(set.status).toBe(200);
    const bad = await call(w.sock, 'PUT', '/v1/owners/%ZZ/forwardable', { ips: ['10.88.6.20'] });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toMatch(/percent-encoding|%ZZ/);
    await restart('SIGKILL');
    const list = (await call(w.sock, 'GET', '/v1/forwardable')).body.forwardable as {
      ip: string;
      owners: string[];
    }[];
    const mine = list.filter((e) => e.ip.startsWith('10.88.6.'));
    expect(mine.sort((a, b) => a.ip.localeCompare(b.ip))).toEqual([
      { ip: '10.88.6.10', owners: ['constructor'] },
      { ip: '10.88.6.2', owners: ['toString'] },
      { ip: '10.88.6.3', owners: ['valueOf'] },
      { ip: '10.88.6.4', owners: ['hasOwnProperty'] },
      { ip: '10.88.6.5', owners: ['isPrototypeOf'] },
    ]);
    expect(list.some((e) => e.ip === '10.88.6.20')).toBe(false);
    for (const owner of owners) {
      await call(w.sock, 'PUT', `/v1/owners/${owner}/forwardable`, { ips: [] });
    }
  }, 60_000);

  it('refuses an external IP that is forwardable, and skips only the bad entries of a state file', async () => {
    const add = await call(w.sock, 'POST', '/v1/forwardable', {
      owner: 'ops',
      ips: ['10.88.3.1', '10.88.3.2'],
    });
    expect(add.status).toBe(200);
    const clash = await call(w.sock, 'POST', '/v1/extip', { ips: ['10.88.3.1'] });
    expect(clash.status).toBe(409);
    expect(JSON.stringify(clash.body)).toMatch(/10\.88\.3\.1.*forwardable.*ops/);
    expect(holderIps(w.ns)).toEqual([]);
    await waitFor(() => ownedNeighbors(w.ns, w.dev).includes('10.88.3.2'), {
      what: 'the kernel entry of 10.88.3.2',
    });
    // A state file as an older agent (or a hand edit) could leave it: one malformed IP, one
    // IP that is both forwardable and external, one external IP that is loopback.
    if (agent) await stopAgent(agent, 'SIGTERM');
    agent = undefined;
    const st = readState(w);
    st.forwardable.ops = ['10.88.3.1', '10.88.3.2', '300.1.1.1'];
    st.extip = ['10.88.3.1', '127.0.0.1', '10.89.3.3'];
    writeFileSync(w.stateFile, JSON.stringify(st));
    agent = await startAgent(w);
    const list = (await call(w.sock, 'GET', '/v1/forwardable')).body.forwardable as {
      ip: string;
      owners: string[];
    }[];
    expect(list.filter((e) => e.owners.includes('ops')).map((e) => e.ip)).toEqual(['10.88.3.2']);
    expect(ownedNeighbors(w.ns, w.dev)).toContain('10.88.3.2');
    expect(holderIps(w.ns)).toEqual(['10.88.3.1', '10.89.3.3']);
    const log = agent.log();
    expect(log).toMatch(/300\.1\.1\.1/);
    expect(log).toMatch(/127\.0\.0\.1/);
    expect(log).not.toMatch(/extip\.static/);
    expect(log).toContain(w.stateFile);
    const status = (await call(w.sock, 'GET', '/v1/status')).body as {
      stateFile?: { skipped: { entry: string; reason: string }[] };
    };
    expect(status.stateFile?.skipped.map((s) => s.entry).sort()).toEqual([
      'extip 127.0.0.1',
      'forwardable ops 10.88.3.1',
      'forwardable ops 300.1.1.1',
    ]);
    await call(w.sock, 'PUT', '/v1/owners/ops/forwardable', { ips: [] });
    await call(w.sock, 'DELETE', '/v1/extip', { ips: ['10.88.3.1', '10.89.3.3'] });
  }, 60_000);
});

describe.skipIf(skip)('a state file on a disk that fills up', () => {
  it('answers 507 and leaves the file and the kernel as they were; never acknowledges a truncated file', async () => {
    // A mount namespace of our own that outlives agent restarts, with a 64 KiB tmpfs in it
    // (made after the network namespaces, so that their /run/netns mounts are seen in it).
    const w = makeWorld('full');
    const holder = spawn('unshare', ['-m', '--propagation', 'private', 'sleep', 'infinity'], {
      stdio: 'ignore',
    });
    cleanupLater(() => holder.kill('SIGKILL'));
    const mnt = (...args: string[]) => {
      const r = spawnSync('nsenter', ['-t', String(holder.pid), '-m', ...args], {
        encoding: 'utf8',
      });
      if (r.status !== 0 && args[0] !== 'dd') throw new Error(`${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    await waitFor(
      () =>
        readFileSync(`/proc/${holder.pid}/mountinfo`, 'utf8') !==
        readFileSync('/proc/self/mountinfo', 'utf8'),
      { what: 'private mount namespace' },
    );
    const small = join(w.dir, 'small');
    mnt('mkdir', '-p', small);
    mnt('mount', '-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', small);
    const w2: AgentWorld = { ...w, stateFile: join(small, 'state.json') };
    writeConfig(w2, baseConfig(w2));
    const seen = (p: string) => `/proc/${holder.pid}/root${p}`;
    const wrap = ['nsenter', '-t', String(holder.pid), '-m'];
    let agent = await startAgent(w2, { wrap });
    try {
      const first = ['10.88.4.1', '10.88.4.2'];
      expect(
        (await call(w.sock, 'POST', '/v1/forwardable', { owner: 'ops', ips: first })).status,
      ).toBe(200);
      await waitFor(() => ownedNeighbors(w.ns, w.dev).length === 2, { what: 'two entries' });
      const before = readFileSync(seen(w2.stateFile));
      // Fill the tmpfs, then free exactly one page: a bigger state file fits only in part.
      mnt('dd', 'if=/dev/zero', `of=${join(small, 'fill')}`, 'bs=4096');
      mnt('truncate', '-s', '-4096', join(small, 'fill'));
      const many = Array.from(
        { length: 400 },
        (_, i) => `10.88.${5 + Math.floor(i / 250)}.${(i % 250) + 1}`,
      );
      const r = await call(w.sock, 'POST', '/v1/forwardable', { owner: 'ops', ips: many });
      expect(r.status, JSON.stringify(r.body)).toBe(507);
      expect(JSON.stringify(r.body)).toMatch(/ENOSPC|no space/i);
      expect(readFileSync(seen(w2.stateFile))).toEqual(before);
      const list = (await call(w.sock, 'GET', '/v1/forwardable')).body.forwardable as {
        ip: string;
      }[];
      expect(list.map((e) => e.ip).sort()).toEqual(first);
      // Space again. A marker IP added after the refusal proves the reconciler has run past
      // it: its entry comes, and the refused IPs' do not.
      mnt('rm', join(small, 'fill'));
      const marker = '10.88.4.9';
      expect(
        (await call(w.sock, 'POST', '/v1/forwardable', { owner: 'marker', ips: [marker] })).status,
      ).toBe(200);
      await waitFor(() => ownedNeighbors(w.ns, w.dev).includes(marker), { what: 'marker entry' });
      expect(ownedNeighbors(w.ns, w.dev)).toEqual([...first, marker].sort());
      // The same request goes through now, and a restart loads the file.
      expect(
        (await call(w.sock, 'POST', '/v1/forwardable', { owner: 'ops', ips: many })).status,
      ).toBe(200);
      await stopAgent(agent, 'SIGKILL');
      agent = await startAgent(w2, { wrap });
      const after = (await call(w.sock, 'GET', '/v1/forwardable')).body.forwardable as {
        ip: string;
      }[];
      expect(after.length).toBe(403);
      await call(w.sock, 'PUT', '/v1/owners/ops/forwardable', { ips: [] });
    } finally {
      await stopAgent(agent);
    }
  }, 90_000);
});
