// Cluster mode around the failovers (see failover.netns.test.ts for the lab): duplicate
// address detection before a cluster IP is taken (the client's own address is refused with
// the client's MAC, and never announced or defended), `fibkeeper cluster drain` and
// `uncordon` as an operator runs them, and a holder whose link goes (its bridge port down:
// no carrier on its ext0): the IP moves at once, the node holds nothing until the link is
// back. Checked in the kernels, on the segment (tcpdump, and the IP-level answer probe) and
// in the agents' own histories.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../agent/harness.js';
import { ip, privileged } from '../helpers/netns.js';
import { ClusterWorld, now, until, type AgentNode, type MemberStatusDoc } from './world.js';

const { skip } = privileged();
const run = promisify(execFile);
let w: ClusterWorld;

function cli(n: AgentNode, ...args: string[]) {
  return run(process.execPath, ['bin/fibkeeper.js', ...args, '--socket', n.sock], {
    encoding: 'utf8',
  }).catch((err: { code: number; stdout: string; stderr: string }) => err);
}

async function holder(ipText: string): Promise<AgentNode> {
  await until(() => w.holdersOf(ipText).length === 1, 15_000, `one holder of ${ipText}`);
  return w.node(w.holdersOf(ipText)[0] as string);
}

describe.skipIf(skip)('cluster mode: DAD, drain, a lost link', () => {
  beforeAll(async () => {
    w = await ClusterWorld.create('m');
    await Promise.all(w.nodes.map((n) => w.start(n)));
  }, 90_000);

  it("refuses the client's own address as a cluster IP, naming its MAC; nothing is announced", async () => {
    const client = w.lab.client;
    const mark = now();
    const r = await call(w.node('n1').sock, 'POST', '/v1/cluster/extip', { ips: [client.v4] });
    expect(r.status).toBe(409);
    const err = (r.body as { error: { message: string; details?: { mac: string } } }).error;
    expect(err.message).toContain(client.mac);
    expect(err.details?.mac).toBe(client.mac);
    const list = (await w.api(w.node('n2'), 'GET', '/v1/cluster/extip')) as {
      extip: { ip: string }[];
    };
    expect(list.extip.map((e) => e.ip)).not.toContain(client.v4);
    // The CLI says the same and exits non-zero.
    const out = await cli(w.node('n2'), 'cluster', 'extip', 'add', client.v6);
    expect((out as { code?: number }).code).not.toBe(0);
    expect((out as { stderr: string }).stderr).toContain(client.mac);
    // A free address is taken (after the detection: no other host answered), and its holder's
    // announcement is seen on the segment: the capture ran past the refusals.
    await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips: ['10.78.0.230'] });
    const free = await holder('10.78.0.230');
    await until(() => w.spoke(free.mac, '10.78.0.230', mark).length > 0, 5000, 'its announcement');
    // Not a word from any node for the refused ones on the segment: no GARP, no NA, no answer.
    for (const n of w.nodes) {
      expect(w.spoke(n.mac, client.v4, mark)).toEqual([]);
      expect(w.spoke(n.mac, client.v6, mark)).toEqual([]);
    }
    await w.api(w.node('n1'), 'DELETE', '/v1/cluster/extip', { ips: ['10.78.0.230'] });
  });

  it('drain moves every IP off a node with handovers and keeps it off until uncordon', async () => {
    const ips = [
      '10.78.0.231',
      '10.78.0.232',
      '10.78.0.233',
      'fd78::231',
      'fd78::232',
      'fd78::233',
    ];
    await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips });
    await until(() => w.nodes.every((n) => w.held(n).length === 2), 20_000, 'two IPs on each node');
    const n2 = w.node('n2');
    w.probeAnswers(ips, 20);
    const drained = await cli(w.node('n3'), 'cluster', 'drain', 'n2', '--wait', '--timeout', '10');
    expect((drained as { stdout: string }).stdout).toMatch(
      /n2 drained.*\n.*n2 holds no cluster IP/,
    );
    expect(w.held(n2)).toEqual([]);
    for (const x of ips) expect(w.holdersOf(x)).toHaveLength(1);
    const st = await cli(w.node('n1'), 'cluster', 'status');
    expect((st as { stdout: string }).stdout).toMatch(/^ +n2 +cordoned /m);
    // Kept off: its agent restarted, it still takes nothing.
    await w.signal(n2, 'SIGTERM');
    const from = await w.roundsNow();
    await w.start(n2);
    // Every agent has decided on n2's return (a placement round since it registered again,
    // cordoned), and every IP is where placement puts it: on the others.
    const back = (st: MemberStatusDoc) => st.members.some((m) => m.name === 'n2' && m.cordoned);
    await w.decided(from, back, 'n2 back, cordoned');
    await until(() => w.placed(ips), 10_000, 'every IP placed');
    for (const x of ips) expect(w.holdersOf(x)).not.toContain('n2');
    expect(w.held(n2)).toEqual([]);
    await cli(w.node('n1'), 'cluster', 'uncordon', 'n2');
    await until(() => w.held(n2).length === 2, 10_000, 'n2 holds its share again');
    w.probe?.stop();
    w.expectNeverTwoHolders();
    await w.api(w.node('n1'), 'DELETE', '/v1/cluster/extip', { ips });
    await until(() => w.nodes.every((n) => w.held(n).length === 0), 10_000, 'all released');
  });

  it("a holder's link lost: the IP moves at once, the node holds nothing until it is back", async () => {
    const X = '10.78.0.234';
    await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips: [X] });
    const old = await holder(X);
    const probe = w.probeAnswers([X]);
    await until(() => probe.firstAnswer(X, old.mac, -Infinity) !== undefined, 5000, 'an answer');
    const t0 = now();
    const from = await w.roundsNow();
    ip(w.lab.bridge, 'link', 'set', old.port, 'down');
    await until(() => w.holdersOf(X).some((h) => h !== old.name), 5000, 'another holder');
    const next = w.node(w.holdersOf(X).find((h) => h !== old.name) as string);
    await until(() => probe.firstAnswer(X, next.mac, t0) !== undefined, 5000, 'its answer');
    // Handed over (the node still reached etcd): fast, not a lease expiry.
    expect(probe.firstAnswer(X, next.mac, t0)!.at - t0).toBeLessThan(1000);
    expect(w.held(old)).toEqual([]);
    const st = (await w.api(old, 'GET', '/v1/cluster/status')) as { able: boolean };
    expect(st.able).toBe(false);
    // Every agent has decided on it being unable (a round since it said so): placement passes
    // it over, so nothing comes back to it.
    const unable = (s: MemberStatusDoc) => s.members.some((m) => m.name === old.name && !m.able);
    await w.decided(from, unable, `${old.name} unable`);
    await until(() => w.placed([X]), 10_000, 'the IP placed');
    expect(w.holdersOf(X)).not.toContain(old.name);
    expect(w.held(old)).toEqual([]);
    ip(w.lab.bridge, 'link', 'set', old.port, 'up');
    await until(() => w.held(old).includes(X), 10_000, 'the IP back on its home node');
    probe.stop();
    w.expectNeverTwoHolders();
  });
});
