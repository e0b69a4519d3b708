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
import { ip, ipJson, privileged, waitFor } from '../helpers/netns.js';

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
    expect(bad.err).toMatch(/-o xml: give one of text, wide, json, yaml/);
    expect(cli('extip', 'del', '10.88.6.9', '--socket', w.sock).code).toBe(0);
    expect(cli('forwardable', 'del', '10.88.0.2', '--owner', 'ops', '--socket', w.sock).code).toBe(
      0,
    );
  });

  it('-o wide: where each forwardable IP leads as the kernel has it, and who holds a refused external IP', async () => {
    expect(
      cli('forwardable', 'add', '10.88.0.2', '192.0.2.99', '--owner', 'ops', '--socket', w.sock)
        .code,
    ).toBe(0);
    // The peer answers ARP for 10.88.0.2; 192.0.2.99 has no route.
    const kernel = await waitFor(
      () =>
        ipJson<{ dst: string; state: string[] }[]>(w.ns, 'neigh', 'show', 'dev', w.dev).find(
          (n) =>
            n.dst === '10.88.0.2' && (n.state.includes('REACHABLE') || n.state.includes('STALE')),
        ),
      { what: 'the entry for 10.88.0.2' },
    );
    const wide = await waitFor(
      () => {
        const r = cli('forwardable', 'list', '-o', 'wide', '--socket', w.sock);
        return r.out.includes(kernel.state.join(',')) ? r : undefined;
      },
      { what: "-o wide showing the kernel's state" },
    );
    expect(wide.code, wide.err).toBe(0);
    const rows = wide.out
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s{2,}/));
    expect(rows[0]).toEqual(['IP', 'OWNERS', 'DEVICE', 'NEXTHOP', 'KERNEL', 'STATUS']);
    expect(rows).toContainEqual([
      '10.88.0.2',
      'ops',
      w.dev,
      '10.88.0.2',
      kernel.state.join(','),
      'done',
    ]);
    expect(rows.find((r) => r[0] === '192.0.2.99')?.slice(1, 5)).toEqual(['ops', '-', '-', '-']);
    expect(rows.find((r) => r[0] === '192.0.2.99')?.[5]).toMatch(/^\(no route/);
    expect(
      cli('forwardable', 'del', '10.88.0.2', '192.0.2.99', '--owner', 'ops', '--socket', w.sock)
        .code,
    ).toBe(0);

    // An external IP another host holds: refused, and -o wide names that host's MAC.
    ip(w.peer, 'addr', 'add', '10.88.0.3/16', 'dev', 'eth0');
    const peerMac = ipJson<{ address: string }[]>(w.peer, 'link', 'show', 'eth0')[0]!.address;
    expect(cli('extip', 'add', '10.88.0.3', '--socket', w.sock).code).not.toBe(0);
    const x = cli('extip', 'list', '-o', 'wide', '--socket', w.sock);
    expect(x.code, x.err).toBe(0);
    expect(x.out.split('\n')[0]).toMatch(/^IP\s+STATE\s+ANNOUNCED\s+CONFLICT\s+ERROR$/);
    expect(x.out).toMatch(
      new RegExp(`^10\\.88\\.0\\.3\\s+failed\\s+-\\s+${peerMac} \\(ARP reply\\)`, 'm'),
    );
    expect(cli('extip', 'list', '--socket', w.sock).out.split('\n')[0]).not.toContain('CONFLICT');
    cli('extip', 'del', '10.88.0.3', '--socket', w.sock);
    ip(w.peer, 'addr', 'del', '10.88.0.3/16', 'dev', 'eth0');
  });

  it('status --state: only the next hops in that state (as ip neigh shows it) and the IPs that lead to them', async () => {
    // 10.88.0.2 is the peer (answers ARP); nobody has 10.88.0.5: its entry goes FAILED.
    expect(
      cli('forwardable', 'add', '10.88.0.2', '10.88.0.5', '--owner', 'st', '--socket', w.sock).code,
    ).toBe(0);
    const neigh = (dst: string) =>
      ipJson<{ dst: string; state: string[] }[]>(w.ns, 'neigh', 'show', 'dev', w.dev).find(
        (n) => n.dst === dst,
      );
    await waitFor(() => neigh('10.88.0.5')?.state.includes('FAILED'), {
      timeoutMs: 15_000,
      what: '10.88.0.5 FAILED',
    });
    const live = await waitFor(() => neigh('10.88.0.2')?.state[0], {
      what: 'an entry for 10.88.0.2',
    });
    type Doc = {
      query: { state: string | null };
      neighbor: {
        desired: { nexthop: string; kernel: { state: string[] } | null }[];
        forwardable: { ip: string }[];
      };
    };
    const ask = (state: string) => {
      const r = cli('status', '--state', state, '-o', 'json', '--socket', w.sock);
      expect([0, 1]).toContain(r.code); // 1: degraded, an unusable next hop may be reported
      return JSON.parse(r.out) as Doc;
    };
    const failed = ask('failed');
    expect(failed.query.state).toBe('FAILED');
    expect(failed.neighbor.desired.map((d) => d.nexthop)).toEqual(['10.88.0.5']);
    expect(failed.neighbor.forwardable.map((f) => f.ip)).toEqual(['10.88.0.5']);
    // The state the kernel shows for the peer's entry now (the query is taken as ip neigh names it).
    const other = await waitFor(
      () => {
        const d = ask(live.toLowerCase());
        return neigh('10.88.0.2')?.state[0] === live ? d : undefined;
      },
      { what: `the peer's entry still ${live}` },
    );
    expect(other.neighbor.desired.map((d) => d.nexthop)).toContain('10.88.0.2');
    expect(other.neighbor.desired.map((d) => d.nexthop)).not.toContain('10.88.0.5');
    expect(ask('error').neighbor.desired).toEqual([]);
    const bad = cli('status', '--state', 'sleepy', '--socket', w.sock);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--state sleepy: give a kernel state/);
    expect(
      cli('forwardable', 'del', '10.88.0.2', '10.88.0.5', '--owner', 'st', '--socket', w.sock).code,
    ).toBe(0);
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
