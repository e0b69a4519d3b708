// `fibkeeper events` against a real agent in a namespace: a change made behind the agent's
// back (`ip neigh del`, `ip addr del`) and one made through the CLI (`extip add`) each arrive
// on a running `fibkeeper events -f`, and the kernel shows the repair the event reports.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  baseConfig,
  cli,
  holderIps,
  makeWorld,
  ownedNeighbors,
  startAgent,
  stopAgent,
  writeConfig,
  type AgentProc,
  type AgentWorld,
} from '../agent/harness.js';
import type { StatusDocument } from '../../src/agent/index.js';
import { ip, privileged, waitFor } from '../helpers/netns.js';
import { freePort } from '../helpers/ports.js';

const { skip } = privileged();

/** A running `fibkeeper events ...`: its output so far, and how to end it (by its PID). */
function follow(...args: string[]): { child: ChildProcess; out: () => string; err: () => string } {
  return spawnCli('events', ...args);
}

function spawnCli(...args: string[]): {
  child: ChildProcess;
  out: () => string;
  err: () => string;
} {
  const child = spawn('node', [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (err += c));
  return { child, out: () => out, err: () => err };
}

describe.skipIf(skip)('fibkeeper events', () => {
  let w: AgentWorld;
  let agent: AgentProc;
  let port: number;
  const followers: ChildProcess[] = [];

  beforeAll(async () => {
    w = makeWorld('ev');
    writeConfig(w, baseConfig(w, { forwardableStatic: ['10.88.0.2'] }));
    port = await freePort();
    agent = await startAgent(w, { args: [`--metrics-address=127.0.0.1:${port}`] });
    await waitFor(() => ownedNeighbors(w.ns, w.dev).includes('10.88.0.2'), {
      timeoutMs: 15_000,
      what: 'the entry for 10.88.0.2',
    });
  }, 60_000);
  afterAll(async () => {
    for (const f of followers) if (f.exitCode === null) f.kill('SIGTERM');
    await stopAgent(agent);
  });

  it('shows the repair of an entry deleted with `ip neigh del` as it happens', async () => {
    const f = follow('-f', '--socket', w.sock);
    followers.push(f.child);
    // The events kept come first: the agent started, the entry written at start.
    await waitFor(
      () => /neighbor\.written +1 neighbor entry written: 10\.88\.0\.2 on fk-a/.test(f.out()),
      {
        timeoutMs: 10_000,
        what: () => `the start's events, got: ${f.out()} ${f.err()}`,
      },
    );
    const before = f.out().length;
    ip(w.ns, 'neigh', 'del', '10.88.0.2', 'dev', 'fk-a');
    const line = await waitFor(
      () =>
        f
          .out()
          .slice(before)
          .split('\n')
          .find((l) => l.includes('neighbor.repaired')),
      { timeoutMs: 10_000, what: () => `a neighbor.repaired line, got: ${f.out().slice(before)}` },
    );
    expect(line).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z neighbor\.repaired +1 neighbor entry written again after the kernel lost them: 10\.88\.0\.2 on fk-a \(deleted\)$/,
    );
    // The entry the event reports is back in the kernel, as fibkeeper's (proto 241).
    expect(ownedNeighbors(w.ns, w.dev)).toContain('10.88.0.2');
    // The agent counts its follower; gone, it no longer does.
    const followersNow = async () =>
      /^fibkeeper_events_followers (\d+)$/m.exec(
        await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
      )?.[1];
    expect(await followersNow()).toBe('1');
    f.child.kill('SIGTERM');
    await waitFor(async () => (await followersNow()) === '0', { what: 'the follower gone' });
  });

  it('-o json: one JSON object a line; an external IP assigned and repaired', async () => {
    const f = follow('--follow', '-o', 'json', '--type', 'extip', '--socket', w.sock);
    followers.push(f.child);
    // No race with the follower's connection: what happened before it came is in the kept
    // events, which the agent sends first.
    expect(cli('extip', 'add', '10.88.7.7', '--socket', w.sock)).toMatchObject({ code: 0 });
    expect(holderIps(w.ns)).toContain('10.88.7.7');
    ip(w.ns, 'addr', 'del', '10.88.7.7/32', 'dev', 'fibkeeper0');
    const events = await waitFor(
      () => {
        const lines = f.out().split('\n').filter(Boolean);
        const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
        return parsed.some((e) => e.type === 'extip.repaired') ? parsed : undefined;
      },
      { timeoutMs: 10_000, what: () => `extip events, got: ${f.out()} ${f.err()}` },
    );
    expect(events.map((e) => e.type)).toEqual(['extip.assigned', 'extip.repaired']);
    expect(events[0]).toMatchObject({
      ip: '10.88.7.7',
      summary: expect.stringContaining('assigned'),
    });
    expect(typeof events[0]!.seq).toBe('number');
    expect(holderIps(w.ns)).toContain('10.88.7.7');
    f.child.kill('SIGTERM');
  });

  it('an IP made forwardable and released: its entry written and deleted, as `ip neigh` shows', async () => {
    const f = follow('-f', '-o', 'json', '--type', 'neighbor,forwardable', '--socket', w.sock);
    followers.push(f.child);
    const seen = (type: string, what: string) =>
      f
        .out()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; summary: string; sample?: string[] })
        .some((e) => e.type === type && (e.sample ?? []).some((x) => x.startsWith(what)));
    expect(cli('forwardable', 'add', '10.88.0.3', '--owner', 'ev', '--socket', w.sock).code).toBe(
      0,
    );
    await waitFor(() => seen('neighbor.written', '10.88.0.3 on fk-a'), {
      timeoutMs: 10_000,
      what: () => `neighbor.written for 10.88.0.3, got ${f.out()}`,
    });
    expect(seen('forwardable.added', '10.88.0.3')).toBe(true);
    expect(ownedNeighbors(w.ns, w.dev)).toContain('10.88.0.3');
    expect(cli('forwardable', 'del', '10.88.0.3', '--owner', 'ev', '--socket', w.sock).code).toBe(
      0,
    );
    await waitFor(() => seen('neighbor.deleted', '10.88.0.3 on fk-a'), {
      timeoutMs: 10_000,
      what: () => `neighbor.deleted for 10.88.0.3, got ${f.out()}`,
    });
    expect(seen('forwardable.removed', '10.88.0.3')).toBe(true);
    expect(ownedNeighbors(w.ns, w.dev)).not.toContain('10.88.0.3');
    f.child.kill('SIGTERM');
  });

  it('status --watch prints the document again when a change happens, driven by the events', async () => {
    const wt = spawnCli('status', '--watch', '-o', 'json', '--socket', w.sock);
    followers.push(wt.child);
    const docs = () =>
      wt
        .out()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as StatusDocument);
    await waitFor(() => docs().length === 1, { what: () => `the first document: ${wt.err()}` });
    const has = (d: StatusDocument) => d.neighbor!.forwardable.some((f) => f.ip === '10.88.0.5');
    expect(has(docs()[0]!)).toBe(false);
    expect(
      cli('forwardable', 'add', '10.88.0.5', '--owner', 'watch', '--socket', w.sock).code,
    ).toBe(0);
    const later = await waitFor(() => docs().slice(1).find(has), {
      timeoutMs: 10_000,
      what: () => `a document with 10.88.0.5, got ${docs().length}: ${wt.err()}`,
    });
    expect(later.neighbor!.forwardable.find((f) => f.ip === '10.88.0.5')!.owners).toEqual([
      'watch',
    ]);
    await waitFor(() => ownedNeighbors(w.ns, w.dev).includes('10.88.0.5'), { what: 'its entry' });
    wt.child.kill('SIGTERM');
    expect(
      cli('forwardable', 'del', '10.88.0.5', '--owner', 'watch', '--socket', w.sock).code,
    ).toBe(0);
  });

  it('without --follow prints the kept events and exits; a bad --type is a usage error', () => {
    const r = cli('events', '--type', 'neighbor', '--socket', w.sock);
    expect(r.code).toBe(0);
    expect(
      r.out
        .split('\n')
        .filter(Boolean)
        .every((l) => / neighbor\.\w+ /.test(l)),
    ).toBe(true);
    expect(r.out).toMatch(/neighbor\.repaired/);
    const bad = cli('events', '--type', 'Neigh bor', '--socket', w.sock);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--type Neigh bor: give types or subsystems/);
  });
});

describe.skipIf(skip)('fibkeeper events: kernel sockets reopened', () => {
  it('an injected EBUSY on netlink receives: one event per reopen the agent logs', async () => {
    const w = makeWorld('evs');
    writeConfig(w, baseConfig(w, { forwardableStatic: ['10.88.0.2'] }));
    const agent = await startAgent(w, {
      env: {
        FIBKEEPER_TEST_FAULTS:
          'classes=EBUSY,rate=0.02,sockets=netlink,seed=7,phase=ready,probeMs=200,silentMs=2000',
      },
    });
    try {
      const events = await waitFor(
        () => {
          const r = cli('events', '--type', 'socket', '-o', 'json', '--socket', w.sock);
          const e = r.out
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as Record<string, unknown>);
          return e.length > 0 ? e : undefined;
        },
        {
          timeoutMs: 20_000,
          what: () => `a socket.reopened event; log: ${agent.log().slice(-800)}`,
        },
      );
      expect(events[0]).toMatchObject({ type: 'socket.reopened', cause: 'EBUSY', ok: true });
      // As many events as the agent's log has reopen lines: counted between two reads of
      // the log (more reopens may come meanwhile).
      const logged = () =>
        agent
          .log()
          .split('\n')
          .filter((l) => / reopened after EBUSY/.test(l)).length;
      const before = logged();
      const n = cli('events', '--type', 'socket.reopened', '-o', 'json', '--socket', w.sock)
        .out.split('\n')
        .filter(Boolean).length;
      expect(before).toBeGreaterThan(0);
      expect(n).toBeGreaterThanOrEqual(before);
      expect(n).toBeLessThanOrEqual(logged());
    } finally {
      await stopAgent(agent);
    }
  }, 60_000);
});
