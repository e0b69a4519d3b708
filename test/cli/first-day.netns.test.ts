// First-day habits against a real agent in a namespace: the socket from FIBKEEPER_SOCKET,
// `extip del` of an IP the agent never had fails naming it (and removes the rest, as
// `ip addr` shows), a client's `cluster status` on an agent without cluster mode is not an
// agent error in its log, and a reason is prefixed with its subsystem once.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  BIN,
  baseConfig,
  call,
  cli,
  holderIps,
  makeWorld,
  startAgent,
  stopAgent,
  writeConfig,
  type AgentProc,
  type AgentWorld,
} from '../agent/harness.js';
import { ip, privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();

describe.skipIf(skip)('first-day habits against a running agent', () => {
  let w: AgentWorld;
  let agent: AgentProc;

  beforeAll(async () => {
    w = makeWorld('fday');
    writeConfig(w, baseConfig(w));
    agent = await startAgent(w);
  }, 60_000);
  afterAll(async () => {
    await stopAgent(agent);
  });

  it('finds the agent through FIBKEEPER_SOCKET', () => {
    const r = spawnSync('node', [BIN, 'extip', 'list', '--json'], {
      encoding: 'utf8',
      env: { ...process.env, FIBKEEPER_SOCKET: w.sock },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\[/);
  });

  it('-o json|yaml on the lists: the same data, YAML as a YAML parser reads it', () => {
    expect(cli('extip', 'add', '10.88.6.9', '--socket', w.sock).code).toBe(0);
    expect(cli('forwardable', 'add', '10.88.0.2', '--owner', 'ops', '--socket', w.sock).code).toBe(
      0,
    );
    for (const cmd of [
      ['extip', 'list'],
      ['forwardable', 'list'],
    ]) {
      const j = cli(...cmd, '-o', 'json', '--socket', w.sock);
      const y = cli(...cmd, '--output', 'yaml', '--socket', w.sock);
      expect([j.code, y.code], j.err + y.err).toEqual([0, 0]);
      expect(parseYaml(y.out)).toEqual(JSON.parse(j.out));
      expect(JSON.parse(j.out)).toEqual(JSON.parse(cli(...cmd, '--json', '--socket', w.sock).out));
    }
    expect(JSON.parse(cli('extip', 'list', '-o', 'json', '--socket', w.sock).out)).toMatchObject([
      { ip: '10.88.6.9', state: 'assigned' },
    ]);
    expect(holderIps(w.ns)).toEqual(['10.88.6.9']);
    const bad = cli('extip', 'list', '-o', 'xml', '--socket', w.sock);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/-o xml: give one of text, json, yaml/);
    expect(cli('extip', 'del', '10.88.6.9', '--socket', w.sock).code).toBe(0);
    expect(cli('forwardable', 'del', '10.88.0.2', '--owner', 'ops', '--socket', w.sock).code).toBe(
      0,
    );
  });

  it('extip del of an IP never assigned fails naming it; the assigned one is removed', () => {
    expect(cli('extip', 'add', '10.88.6.1', '--socket', w.sock).code).toBe(0);
    expect(holderIps(w.ns)).toEqual(['10.88.6.1']);
    const r = cli('extip', 'del', '10.88.6.1', '10.88.6.2', '--socket', w.sock);
    expect(r.code).toBe(1);
    expect(r.out).toBe('unassigned: 10.88.6.1\n');
    expect(r.err).toBe(
      'fibkeeper extip del: not an external IP of this agent, nothing to remove: 10.88.6.2 (fibkeeper extip list shows them)\n',
    );
    expect(holderIps(w.ns)).toEqual([]);
    // Deleting again what was just deleted is the same mistake.
    expect(cli('extip', 'del', '10.88.6.1', '--socket', w.sock).code).toBe(1);
  });

  it("a client's cluster status without cluster mode is refused, not logged as an agent error", async () => {
    const r = cli('cluster', 'status', '--socket', w.sock);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/cluster/);
    // The agent answered (501) and logged nothing at error level for it.
    const s = await call(w.sock, 'GET', '/v1/status');
    expect(s.status).toBe(200);
    const errors = agent
      .log()
      .split('\n')
      .filter((l) => /"level":50/.test(l) || /control API request failed/.test(l));
    expect(errors).toEqual([]);
  });

  it('names a subsystem once in a reason: "extip: …", never "extip: extip: …"', async () => {
    ip(w.ns, 'link', 'set', w.dev, 'down');
    try {
      const r = await waitFor(
        () => {
          const out = cli('status', '--socket', w.sock);
          return /external interface fk-a is down/.test(out.out) ? out : undefined;
        },
        { timeoutMs: 20_000, what: 'the external interface reported down' },
      );
      expect(r.code).toBe(1); // ready, degraded
      expect(r.out).toContain('extip: external interface fk-a is down; nothing can go out');
      expect(r.out).not.toContain('extip: extip:');
    } finally {
      ip(w.ns, 'link', 'set', w.dev, 'up');
    }
  });
});
