import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { registerClusterMetrics } from './metrics.js';
import { ClusterAdmin } from './admin.js';
import { findOverlaps } from './history.js';
import type { HoldSet } from './hold.js';
import { ClusterMember } from './member.js';
import type { ClusterOptions } from './options.js';
import { FakeClock, turns } from '../sched/testing.js';
import { FakeEtcd, memberLab } from './testing.js';

let running: { stop(): void } | undefined;
afterEach(() => {
  running?.stop();
  running = undefined;
});

function lab(names: string[], opts: Partial<ClusterOptions> = {}) {
  const l = memberLab(names, opts);
  running = l;
  return l;
}

async function addIps(admin: ClusterAdmin, n: number, base = 10): Promise<string[]> {
  const ips = Array.from({ length: n }, (_, i) => `192.0.2.${base + i}`);
  for (const ip of ips) await admin.add(ip);
  return ips;
}

describe('ClusterMember against a fake etcd', () => {
  it('reports the empty set first, then places 30 IPs 10/10/10 with one holder each', async () => {
    const { clock, nodes, admin, records, holders, held } = lab(['a', 'b', 'c']);
    const ips = await addIps(admin, 30);
    for (const n of nodes) await n.member.start();
    for (const n of nodes) expect(n.sets[0]).toMatchObject({ ips: [], reason: 'start' });
    await clock.advanceAsync(200);
    expect(nodes.map((n) => held(n).length)).toEqual([10, 10, 10]);
    for (const ip of ips) expect(holders(ip)).toHaveLength(1);
    // Placement stays put while nothing changes (renewals only move the deadline).
    const before = nodes.map((n) => [...held(n)]);
    await clock.advanceAsync(5000);
    expect(nodes.map((n) => [...held(n)])).toEqual(before);
    expect(findOverlaps(records)).toEqual([]);
  });

  it('fences a node cut off from etcd before its lease can expire, and others claim after', async () => {
    const { clock, nodes, admin, records, holders } = lab(['a', 'b', 'c']);
    const ips = await addIps(admin, 6);
    for (const n of nodes) await n.member.start();
    await clock.advanceAsync(300);
    const a = nodes[0]!;
    const mine = [...a.member.holdSet().ips];
    expect(mine.length).toBe(2);
    const lastDeadline = a.member.holdSet().deadline;
    a.store.setPartitioned(true);
    const cutAt = clock.now();
    // Within TTL − margin after the last answered keep-alive a stops holding.
    await clock.advanceAsync(800);
    expect(a.member.holdSet()).toMatchObject({ ips: [], reason: 'fence' });
    const fenceSet = a.sets.at(-1)!;
    expect(fenceSet.at).toBeLessThanOrEqual(lastDeadline + 150);
    expect(fenceSet.at - cutAt).toBeLessThan(1000);
    // The lease expires in etcd (TTL + the revoke loop), then b and c take a's IPs.
    await clock.advanceAsync(1500);
    for (const ip of ips) expect(holders(ip)).toHaveLength(1);
    for (const ip of mine) expect(holders(ip)).not.toContain('a');
    const overlaps = findOverlaps(records);
    expect(overlaps).toEqual([]);
  });

  it('nodes that lost their leases together come back to their own IPs, no one taking all', async () => {
    const { clock, etcd, nodes, admin, records, held } = lab(['a', 'b', 'c'], {
      rebalanceDelay: 1000,
    });
    await addIps(admin, 6);
    for (const n of nodes) await n.member.start();
    await clock.advanceAsync(3000);
    const before = nodes.map((n) => [...held(n)]);
    expect(before.map((ips) => ips.length)).toEqual([2, 2, 2]);
    // etcd expires every lease at once (it stalled); b and c hear of it 300 ms after a.
    const mark = clock.now();
    nodes[1]!.store.setPartitioned(true);
    nodes[2]!.store.setPartitioned(true);
    for (const id of [...etcd.leases.keys()]) etcd.revoke(id);
    await clock.advanceAsync(300);
    nodes[1]!.store.setPartitioned(false);
    nodes[2]!.store.setPartitioned(false);
    await clock.advanceAsync(4000);
    expect(nodes.map((n) => [...held(n)])).toEqual(before);
    const most = Math.max(...records.filter((r) => r.at >= mark).map((r) => r.ips.length));
    expect(most).toBe(2);
    expect(findOverlaps(records)).toEqual([]);
  });

  it('a hung process (no timers run) answers mayHold false once its deadline passed', async () => {
    const { clock, nodes, admin } = lab(['a']);
    const [ip] = await addIps(admin, 1);
    await nodes[0]!.member.start();
    await clock.advanceAsync(300);
    const m = nodes[0]!.member;
    expect(m.mayHold(ip!)).toBe(true);
    const deadline = m.holdSet().deadline;
    clock.jump(deadline - clock.now()); // SIGSTOP until the deadline: no timer has run
    expect(m.holdSet().ips).toEqual([ip]); // the published set is stale ...
    expect(m.mayHold(ip!)).toBe(false); // ... the synchronous check is not
  });

  it('records every set with onSet, also while the applying listener is busy with one', async () => {
    const clock = new FakeClock();
    const etcd = new FakeEtcd(clock);
    const admin = new ClusterAdmin(etcd.client());
    await addIps(admin, 2);
    const applied: HoldSet[] = [];
    const recorded: HoldSet[] = [];
    const member = new ClusterMember({
      store: etcd.client(),
      clock,
      options: { nodeName: 'a', nodeIPs: ['10.9.0.1'], rebalanceDelay: 0 },
      // busy for good with the first set that holds something (a removal that hangs)
      onHold: (set) => {
        applied.push(set);
        return set.ips.length > 0 ? new Promise<void>(() => undefined) : undefined;
      },
      onSet: (set) => recorded.push(set),
    });
    running = { stop: () => etcd.stop() };
    try {
      await member.start();
      await clock.advanceAsync(3000); // claims, then renewals that move the deadline
      const renewals = recorded.filter((s) => s.reason === 'renew').length;
      expect(renewals).toBeGreaterThan(2);
      expect(applied.filter((s) => s.ips.length > 0)).toHaveLength(1);
      // the record is the member's own sequence: each deadline is the one it computed
      expect(recorded.at(-1)!.deadline).toBe(member.holdSet().deadline);
      expect(recorded.map((s) => s.at)).toEqual(
        [...recorded.map((s) => s.at)].sort((x, y) => x - y),
      );
    } finally {
      void member.stop();
    }
  });

  it('a hung process woken by the watch before its fence timer drops with reason fence', async () => {
    const { clock, nodes, admin } = lab(['a']);
    const [ip] = await addIps(admin, 1);
    const a = nodes[0]!;
    await a.member.start();
    await clock.advanceAsync(300);
    expect(a.member.holdSet().ips).toEqual([ip]);
    clock.jump(a.member.holdSet().deadline - clock.now()); // SIGSTOP past the deadline
    // On SIGCONT, Node runs the poll phase (the watch's data) before the timers.
    const before = a.sets.length;
    await admin.add('192.0.2.99');
    await turns(10);
    expect(a.sets.length).toBeGreaterThan(before);
    expect(a.sets[before]).toMatchObject({ ips: [], reason: 'fence' });
  });

  it('claim races: only one of two members that both see themselves as owner gets the IP', async () => {
    const { clock, nodes, admin, records, holders } = lab(['a', 'b']);
    await addIps(admin, 1);
    // b joins while a is partitioned from the watch: both compute placements alone.
    nodes[0]!.store.latencyMs = 40;
    nodes[1]!.store.latencyMs = 40;
    await Promise.all(nodes.map((n) => n.member.start()));
    await clock.advanceAsync(1000);
    expect(holders('192.0.2.10')).toHaveLength(1);
    expect(findOverlaps(records)).toEqual([]);
    const creates = nodes.flatMap((n) =>
      n.store.ops.filter((o) => o.startsWith('create /fibkeeper/owners/')),
    );
    expect(creates.length).toBeGreaterThanOrEqual(1);
  });

  it('hands over on stop at once (no waiting for the TTL) after the set [] is applied', async () => {
    const { clock, nodes, admin, records, holders } = lab(['a', 'b']);
    const ips = await addIps(admin, 4);
    for (const n of nodes) await n.member.start();
    await clock.advanceAsync(300);
    const a = nodes[0]!;
    const mine = [...a.member.holdSet().ips];
    expect(mine.length).toBe(2);
    const stopped = clock.now();
    await a.member.stop();
    await clock.advanceAsync(10);
    expect(a.member.holdSet()).toMatchObject({ ips: [], reason: 'stop' });
    for (const ip of ips) expect(holders(ip)).toEqual(['b']);
    expect(clock.now() - stopped).toBeLessThan(50);
    expect(a.store.ops.some((o) => o.startsWith('revoke '))).toBe(true);
    expect(findOverlaps(records)).toEqual([]);
  });

  it('hands IPs back to a member that (re)joins, balanced again, never two holders', async () => {
    const { clock, nodes, admin, records, add, holders, held } = lab(['a', 'b']);
    const ips = await addIps(admin, 30);
    for (const n of nodes) await n.member.start();
    await clock.advanceAsync(300);
    expect(nodes.map((n) => held(n).length)).toEqual([15, 15]);
    const c = add('c', { rebalanceDelay: 0 });
    await c.member.start();
    await clock.advanceAsync(500);
    expect(nodes.map((n) => held(n).length)).toEqual([10, 10, 10]);
    for (const ip of ips) expect(holders(ip)).toHaveLength(1);
    expect(findOverlaps(records)).toEqual([]);
  });

  it('waits rebalanceDelay before handing IPs to a new member', async () => {
    const { clock, nodes, admin, add, held } = lab(['a'], { rebalanceDelay: 1000 });
    await addIps(admin, 4);
    await nodes[0]!.member.start();
    await clock.advanceAsync(300);
    const b = add('b');
    await b.member.start();
    await clock.advanceAsync(500);
    expect(held(b)).toEqual([]);
    await clock.advanceAsync(700);
    expect(held(b).length).toBe(2);
  });

  it('a deleted IP is dropped by its owner before its owner key goes', async () => {
    const { clock, nodes, admin, etcd } = lab(['a']);
    await addIps(admin, 2);
    const a = nodes[0]!;
    let keyAtDrop: boolean | undefined;
    a.member.subscribe((s) => {
      if (s.reason === 'release') keyAtDrop = etcd.data.has('/fibkeeper/owners/192.0.2.10');
    });
    await a.member.start();
    await clock.advanceAsync(300);
    await admin.del('192.0.2.10');
    await clock.advanceAsync(50);
    expect(a.member.holdSet().ips).toEqual(['192.0.2.11']);
    expect(keyAtDrop).toBe(true);
    expect(etcd.data.has('/fibkeeper/owners/192.0.2.10')).toBe(false);
  });

  it('re-reads everything after watch compaction and converges', async () => {
    const { clock, nodes, admin, etcd, held } = lab(['a', 'b']);
    await addIps(admin, 4);
    for (const n of nodes) await n.member.start();
    await clock.advanceAsync(300);
    // a misses changes, they are compacted away, then a's watch resumes from the old revision.
    const a = nodes[0]!;
    a.store.setPartitioned(true);
    await addIps(admin, 4, 100);
    await admin.del('192.0.2.10');
    etcd.compact(etcd.revision);
    a.store.setPartitioned(false);
    await clock.advanceAsync(1500);
    const all = [...held(a), ...held(nodes[1]!)].sort();
    expect(all).toEqual([
      '192.0.2.100',
      '192.0.2.101',
      '192.0.2.102',
      '192.0.2.103',
      '192.0.2.11',
      '192.0.2.12',
      '192.0.2.13',
    ]);
    expect(held(a).length + held(nodes[1]!).length).toBe(7);
    // a resumed its watch from its last revision, found it compacted and read everything.
    expect(a.store.ops.filter((o) => o.startsWith('get /fibkeeper/ ok'))).toHaveLength(2);
    expect(Math.abs(held(a).length - held(nodes[1]!).length)).toBe(1);
  });

  it('an etcd outage for everyone drops every IP; on recovery the same owners hold them again', async () => {
    const { clock, nodes, admin, etcd, records, held } = lab(['a', 'b']);
    await addIps(admin, 6);
    for (const n of nodes) await n.member.start();
    await clock.advanceAsync(300);
    const before = nodes.map((n) => [...held(n)]);
    const opsBefore = nodes.map((n) => n.store.ops.length);
    etcd.down = true;
    await clock.advanceAsync(3000);
    expect(nodes.map((n) => held(n))).toEqual([[], []]);
    etcd.recover(500); // like etcd's Promote: leases get TTL + election timeout
    await clock.advanceAsync(400);
    expect(nodes.map((n) => [...held(n)])).toEqual(before);
    // Nobody claimed or released anything during or after the outage.
    const moves = nodes.flatMap((n, i) =>
      n.store.ops.slice(opsBefore[i]).filter((o) => /^(create|release) .* ok$/.test(o)),
    );
    expect(moves).toEqual([]);
    expect(findOverlaps(records)).toEqual([]);
  });

  it('a lease lost in etcd is replaced: registered again, IPs claimed again', async () => {
    const { clock, nodes, admin, etcd, held } = lab(['a']);
    await addIps(admin, 2);
    const a = nodes[0]!;
    await a.member.start();
    await clock.advanceAsync(300);
    const first = a.member.status().lease.id;
    a.store.setPartitioned(true);
    await clock.advanceAsync(2000); // expired in etcd
    expect(etcd.leases.has(first!)).toBe(false);
    a.store.setPartitioned(false);
    await clock.advanceAsync(1200);
    expect(a.member.status().lease.id).not.toBe(first);
    expect(held(a)).toEqual(['192.0.2.10', '192.0.2.11']);
    expect(a.sets.some((s) => s.reason === 'lost' || s.reason === 'fence')).toBe(true);
  });

  it('waits for an earlier run of the same node to expire before registering', async () => {
    const { clock, etcd, add, admin } = lab([]);
    await addIps(admin, 1);
    const old = etcd.grant(1);
    etcd.write([{ key: '/fibkeeper/members/a', value: '{"labels":{},"ips":[]}', lease: old.id }]);
    etcd.write([{ key: '/fibkeeper/owners/192.0.2.10', value: '{"node":"a"}', lease: old.id }]);
    const a = add('a');
    await a.member.start();
    await clock.advanceAsync(500);
    expect(a.member.status().ready).toBe(false);
    expect(a.member.holdSet().ips).toEqual([]);
    await clock.advanceAsync(1500);
    expect(a.member.status().ready).toBe(true);
    expect(a.member.holdSet().ips).toEqual(['192.0.2.10']);
  });

  it("publishes the other members' node IPs", async () => {
    const clock = new FakeClock();
    const etcd = new FakeEtcd(clock);
    const seen: (readonly string[])[] = [];
    const mk = (name: string, ip: string, onPeers?: (ips: readonly string[]) => void) =>
      new ClusterMember({
        store: etcd.client(),
        clock,
        options: { nodeName: name, nodeIPs: [ip] },
        ...(onPeers ? { onPeers } : {}),
      });
    const a = mk('a', '10.9.0.1', (ips) => seen.push(ips));
    const b = mk('b', '10.9.0.2');
    const c = mk('c', '2001:db8::3');
    for (const m of [a, b, c]) await m.start();
    await clock.advanceAsync(300);
    expect(a.peerNodeIps()).toEqual(['10.9.0.2', '2001:db8::3']);
    await c.stop();
    await clock.advanceAsync(50);
    expect(seen.at(-1)).toEqual(['10.9.0.2']);
    for (const m of [a, b]) await m.stop();
    etcd.stop();
  });

  it('a claim whose answer is lost (the watch shows it won) is still timed as a failover', async () => {
    const registry = new Registry();
    const metrics = registerClusterMetrics(registry);
    const clock = new FakeClock();
    const etcd = new FakeEtcd(clock);
    await new ClusterAdmin(etcd.client()).add('192.0.2.10');
    const store = etcd.client();
    const m = new ClusterMember({ store, clock, metrics, options: { nodeName: 'a' } });
    await m.start();
    await clock.advanceAsync(900);
    store.loseAnswers = true; // the claim (at 1 s) is carried out; its answer times out
    await clock.advanceAsync(300);
    store.loseAnswers = false;
    await clock.advanceAsync(700);
    expect(store.ops.some((op) => /^create .* timeout$/.test(op))).toBe(true);
    expect(m.holdSet().ips).toEqual(['192.0.2.10']);
    const text = await registry.metrics();
    expect(text).toContain('fibkeeper_cluster_ownership_changes_total{change="acquired"} 1');
    expect(text).toContain('fibkeeper_cluster_failover_duration_seconds_count 1');
    await m.stop();
    etcd.stop();
  });

  it('counts ownership changes and etcd requests; every labelled counter starts at zero', async () => {
    const registry = new Registry();
    const metrics = registerClusterMetrics(registry);
    const text0 = await registry.metrics();
    for (const change of ['acquired', 'released', 'fenced', 'restored', 'lost']) {
      expect(text0).toContain(`fibkeeper_cluster_ownership_changes_total{change="${change}"} 0`);
    }
    expect(text0).toContain('fibkeeper_cluster_lease_renew_failures_total{reason="timeout"} 0');
    expect(text0).toContain(
      'fibkeeper_cluster_etcd_request_duration_seconds_count{op="keepalive"} 0',
    );
    const clock = new FakeClock();
    const etcd = new FakeEtcd(clock);
    const admin = new ClusterAdmin(etcd.client());
    await admin.add('192.0.2.10');
    const store = etcd.client();
    const m = new ClusterMember({ store, clock, metrics, options: { nodeName: 'a' } });
    await m.start();
    await clock.advanceAsync(1300); // a node that has just registered claims after 1 s
    store.setPartitioned(true);
    await clock.advanceAsync(1000);
    const text = await registry.metrics();
    expect(text).toContain('fibkeeper_cluster_ownership_changes_total{change="acquired"} 1');
    expect(text).toContain('fibkeeper_cluster_ownership_changes_total{change="fenced"} 1');
    expect(text).toMatch(/fibkeeper_cluster_lease_renew_failures_total\{reason="timeout"\} [1-9]/);
    expect(text).toContain('fibkeeper_cluster_failover_duration_seconds_count 1');
    store.setPartitioned(false);
    await m.stop();
    etcd.stop();
  });
});

describe('ClusterAdmin', () => {
  it('refuses bad input and writes nothing', async () => {
    const clock = new FakeClock();
    const etcd = new FakeEtcd(clock);
    const admin = new ClusterAdmin(etcd.client());
    await expect(admin.add('192.0.2.300')).rejects.toThrow(/192\.0\.2\.300/);
    await expect(admin.add('224.0.0.1')).rejects.toThrow(/multicast/i);
    await expect(admin.add('192.0.2.1', { nodes: ['bad name'] })).rejects.toThrow(/eligible node/);
    await expect(admin.add('192.0.2.1', { labels: { zone: 'a b' } })).rejects.toThrow(/label zone/);
    expect(etcd.data.size).toBe(0);
    expect(await admin.add('2001:DB8::0:1', { nodes: ['a'] })).toBe('2001:db8::1');
    expect(await admin.list()).toEqual([
      { ip: '2001:db8::1', eligible: { nodes: ['a'], labels: {} }, owner: undefined },
    ]);
    expect(await admin.del('2001:db8::1')).toBe(true);
    expect(await admin.del('2001:db8::1')).toBe(false);
    await turns(3);
    etcd.stop();
  });

  it('seeds only the IPs that are absent, keeping the eligibility of those present', async () => {
    const clock = new FakeClock();
    const etcd = new FakeEtcd(clock);
    const admin = new ClusterAdmin(etcd.client());
    await admin.add('192.0.2.1', { nodes: ['a'] });
    await expect(admin.seed(['192.0.2.1', '192.0.2.999'])).rejects.toThrow(/192\.0\.2\.999/);
    expect(await admin.seed(['192.0.2.1', '2001:DB8::2', '2001:db8::2'])).toEqual(['2001:db8::2']);
    expect(await admin.seed(['2001:db8::2'])).toEqual([]);
    expect(await admin.list()).toEqual([
      { ip: '192.0.2.1', eligible: { nodes: ['a'], labels: {} }, owner: undefined },
      { ip: '2001:db8::2', eligible: { nodes: [], labels: {} }, owner: undefined },
    ]);
    await turns(3);
    etcd.stop();
  });
});
