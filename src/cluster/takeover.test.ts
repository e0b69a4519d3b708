// Cluster members that hear each other (peer heartbeat on a fake segment) against a fake
// etcd: a dead peer's IPs move at once (its lease revoked, nothing waits for the TTL); a
// silent one's after a cool-down that outlasts its fence; an etcd outage shared by every
// member leaves every holder holding (grace); a node cut off from etcd and from its peers
// drops its IPs before anyone could claim them; IPs without a proven fibkeeper holder are
// probed first (a conflict is not taken); drain and a lost link hand IPs over. The history
// check (no two nodes' hold intervals of one IP overlap) runs on every test.
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterAdmin } from './admin.js';
import { findOverlaps, type HoldRecord } from './history.js';
import type { HoldSet } from './hold.js';
import { ClusterMember } from './member.js';
import type { ClusterOptions } from './options.js';
import { Timer } from '../sched/index.js';
import { FakeClock } from '../sched/testing.js';
import { FakeEtcd, FakePeerNet, type FakeStoreClient } from './testing.js';

interface Node {
  name: string;
  store: FakeStoreClient;
  member: ClusterMember;
  sets: HoldSet[];
  probes: string[];
}

let running: { etcd: FakeEtcd; nodes: Node[] } | undefined;
afterEach(() => {
  if (!running) return;
  for (const n of running.nodes) void n.member.stop();
  running.etcd.stop();
  running = undefined;
});

function lab(names: string[], opts: Partial<ClusterOptions> = {}) {
  const clock = new FakeClock();
  const etcd = new FakeEtcd(clock);
  const net = new FakePeerNet();
  const records: HoldRecord[] = [];
  const nodes: Node[] = [];
  /** IPs another host on the segment answers for (with its MAC). */
  const taken = new Map<string, string>();
  for (const name of names) {
    const store = etcd.client();
    const sets: HoldSet[] = [];
    const probes: string[] = [];
    const member = new ClusterMember({
      store,
      clock,
      options: {
        nodeName: name,
        nodeIPs: [`10.9.0.${nodes.length + 1}`],
        rebalanceDelay: 0,
        ...opts,
      },
      peers: net.transport(name),
      defer: (fn) => fn(),
      probe: (ip) => {
        probes.push(ip);
        const mac = taken.get(ip);
        return new Promise((resolve, reject) =>
          new Timer(clock).start(150, () =>
            mac ? reject(Object.assign(new Error('dup'), { mac, what: 'ARP reply' })) : resolve(),
          ),
        );
      },
      onSet: (s) => {
        sets.push(s);
        records.push({ node: name, at: clock.now(), ips: s.ips, deadline: s.deadline });
      },
    });
    nodes.push({ name, store, member, sets, probes });
  }
  const admin = new ClusterAdmin(etcd.client());
  const holders = (ip: string) => nodes.filter((n) => n.member.mayHold(ip)).map((n) => n.name);
  /** The node's process ends: its sockets refuse, its holder is gone (its last set: empty). */
  const crash = (n: Node): void => {
    n.store.setPartitioned(true);
    net.kill(n.name);
    void n.member.stop();
  };
  running = { etcd, nodes };
  return { clock, etcd, net, nodes, records, admin, holders, crash, taken };
}

async function started(names: string[], ips: string[], opts: Partial<ClusterOptions> = {}) {
  const l = lab(names, opts);
  for (const ip of ips) await l.admin.add(ip);
  for (const n of l.nodes) await n.member.start();
  await l.clock.advanceAsync(1000);
  for (const ip of ips) expect(l.holders(ip)).toHaveLength(1);
  return l;
}

const owner = (l: { nodes: Node[] }, ip: string) => l.nodes.find((n) => n.member.mayHold(ip))!;

describe('members that hear each other', () => {
  it("a dead peer's IPs are held elsewhere within 100 ms, not after its lease's TTL", async () => {
    const l = await started(['a', 'b', 'c'], ['192.0.2.10', '192.0.2.11', '192.0.2.12']);
    const victim = owner(l, '192.0.2.10');
    const t0 = l.clock.now();
    l.crash(victim);
    let movedAt = Infinity;
    while (l.clock.now() - t0 < 2000) {
      await l.clock.advanceAsync(5);
      if (l.holders('192.0.2.10').length === 1 && movedAt === Infinity) movedAt = l.clock.now();
    }
    expect(movedAt - t0).toBeLessThan(100);
    for (const ip of ['192.0.2.10', '192.0.2.11', '192.0.2.12']) {
      expect(l.holders(ip)).toHaveLength(1);
      expect(l.holders(ip)).not.toContain(victim.name);
    }
    expect(l.nodes.flatMap((n) => n.probes).sort()).toEqual([
      '192.0.2.10',
      '192.0.2.11',
      '192.0.2.12',
    ]);
    expect(findOverlaps(l.records)).toEqual([]);
  });

  it('a hung peer is fenced: its IPs cool down past its own fence deadline, then move', async () => {
    const l = await started(['a', 'b', 'c'], ['192.0.2.10']);
    const victim = owner(l, '192.0.2.10');
    const t0 = l.clock.now();
    // Hung, as its peers see it: no heartbeat, no keep-alive (and its own timers, which
    // still run here, find no peer and no etcd).
    l.net.cut(victim.name);
    victim.store.setPartitioned(true);
    let movedAt = Infinity;
    while (l.clock.now() - t0 < 3000) {
      await l.clock.advanceAsync(10);
      const others = l.holders('192.0.2.10').filter((h) => h !== victim.name);
      if (others.length > 0 && movedAt === Infinity) movedAt = l.clock.now();
    }
    // peerTimeout (400) + cool-down (TTL 1000 − margin 250 + 50) ≈ 1.2 s, before the TTL-
    // based expiry could even start (the victim kept its lease alive).
    expect(movedAt - t0).toBeGreaterThan(1150);
    expect(movedAt - t0).toBeLessThan(1400);
    // peerTimeout (400) + cool-down (TTL 1000 − margin 250 + 50): 1.2 s, whatever etcd's
    // revoke loop would have made of the TTL; the fenced key says so to every member.
    expect(movedAt - t0).toBeGreaterThanOrEqual(1200);
    expect(movedAt - t0).toBeLessThan(1300);
    expect(l.etcd.snapshot('/fibkeeper/fenced/').map((kv) => kv.key)).toEqual([
      `/fibkeeper/fenced/${victim.name}`,
    ]);
    // The victim's own deadline (the kernel fence's) passed before the move.
    const lastHold = victim.sets.filter((s) => s.ips.includes('192.0.2.10')).at(-1)!;
    expect(lastHold.deadline).toBeLessThan(movedAt);
    expect(findOverlaps(l.records)).toEqual([]);
  });

  it('a peer cut off from the segment (etcd still answering) hands its IPs over and holds none', async () => {
    const l = await started(['a', 'b', 'c'], ['192.0.2.10', '192.0.2.11', '192.0.2.12']);
    const victim = owner(l, '192.0.2.10');
    const t0 = l.clock.now();
    l.net.cut(victim.name); // it hears no one, no one hears it; its lease stays alive
    await l.clock.advanceAsync(3000);
    expect(victim.member.holdSet().ips).toEqual([]);
    expect(victim.member.status().able).toBe(false);
    for (const ip of ['192.0.2.10', '192.0.2.11', '192.0.2.12']) {
      expect(l.holders(ip)).toHaveLength(1);
    }
    const moved = l.records.find((r) => r.node !== victim.name && r.ips.includes('192.0.2.10'));
    expect(moved!.at - t0).toBeLessThan(1300);
    // Back on the segment, it takes its share again.
    l.net.heal(victim.name);
    await l.clock.advanceAsync(2000);
    expect(victim.member.holdSet().ips.length).toBe(1);
    expect(findOverlaps(l.records)).toEqual([]);
  });

  it('etcd gone for everyone: every holder keeps its IPs past its lease; back, nothing moved', async () => {
    const ips = ['192.0.2.10', '192.0.2.11', '192.0.2.12', '192.0.2.13'];
    const l = await started(['a', 'b', 'c'], ips);
    const before = new Map(ips.map((ip) => [ip, owner(l, ip).name]));
    l.etcd.down = true;
    for (let t = 0; t < 5000; t += 50) {
      await l.clock.advanceAsync(50);
      for (const ip of ips) expect(l.holders(ip)).toEqual([before.get(ip)]);
    }
    expect(l.nodes.some((n) => n.member.holdSet().reason === 'grace')).toBe(true);
    l.etcd.recover(2000);
    await l.clock.advanceAsync(3000);
    for (const ip of ips) expect(l.holders(ip)).toEqual([before.get(ip)]);
    expect(findOverlaps(l.records)).toEqual([]);
  });

  it('cut off from etcd and from its peers, a node drops its IPs before another claims them', async () => {
    const l = await started(['a', 'b', 'c'], ['192.0.2.10']);
    const victim = owner(l, '192.0.2.10');
    const t0 = l.clock.now();
    victim.store.setPartitioned(true);
    l.net.cut(victim.name);
    await l.clock.advanceAsync(4000);
    expect(l.holders('192.0.2.10')).toHaveLength(1);
    expect(l.holders('192.0.2.10')).not.toContain(victim.name);
    const dropped = victim.sets.find((s) => s.ips.length === 0 && s.at > t0)!;
    const claimed = l.records.find((r) => r.node !== victim.name && r.ips.includes('192.0.2.10'))!;
    expect(dropped.at).toBeLessThan(claimed.at);
    expect(findOverlaps(l.records)).toEqual([]);
  });

  it('an IP another host answers for is not taken; one whose holder was a fibkeeper node is not probed', async () => {
    const l = lab(['a', 'b']);
    l.taken.set('192.0.2.66', '02:00:00:00:00:66');
    await l.admin.add('192.0.2.66');
    await l.admin.add('192.0.2.10');
    for (const n of l.nodes) await n.member.start();
    await l.clock.advanceAsync(1000);
    expect(l.holders('192.0.2.66')).toEqual([]);
    expect(l.holders('192.0.2.10')).toHaveLength(1);
    const st = l.nodes.map((n) => n.member.status().ips.find((i) => i.ip === '192.0.2.66'));
    expect(st.some((i) => i?.conflict?.mac === '02:00:00:00:00:66')).toBe(true);
    // The address is freed: taken at the next try (10 s).
    l.taken.delete('192.0.2.66');
    await l.clock.advanceAsync(11_000);
    expect(l.holders('192.0.2.66')).toHaveLength(1);
    // A failover of a held IP needs no detection (its holder was fibkeeper, fenced by its lease).
    const before = l.nodes.flatMap((n) => n.probes).length;
    l.crash(owner(l, '192.0.2.10'));
    await l.clock.advanceAsync(500);
    expect(l.holders('192.0.2.10')).toHaveLength(1);
    expect(l.nodes.flatMap((n) => n.probes).length).toBe(before);
    expect(findOverlaps(l.records)).toEqual([]);
  });

  it('drain hands every IP over and keeps the node empty until uncordon; a lost link does the same', async () => {
    const ips = [
      '192.0.2.10',
      '192.0.2.11',
      '192.0.2.12',
      '192.0.2.13',
      '192.0.2.14',
      '192.0.2.15',
    ];
    const l = await started(['a', 'b', 'c'], ips);
    const a = l.nodes[0]!;
    expect(a.member.holdSet().ips.length).toBe(2);
    await l.admin.cordon('a');
    await l.clock.advanceAsync(300);
    expect(a.member.holdSet().ips).toEqual([]);
    for (const ip of ips) expect(l.holders(ip)).toHaveLength(1);
    expect(a.member.status().members.find((m) => m.name === 'a')?.cordoned).toBe(true);
    await l.clock.advanceAsync(3000);
    expect(a.member.holdSet().ips).toEqual([]);
    await l.admin.uncordon('a');
    await l.clock.advanceAsync(1000);
    expect(a.member.holdSet().ips.length).toBe(2);
    const b = l.nodes[1]!;
    b.member.setAble(false);
    await l.clock.advanceAsync(300);
    expect(b.member.holdSet().ips).toEqual([]);
    for (const ip of ips) expect(l.holders(ip)).toHaveLength(1);
    b.member.setAble(true);
    await l.clock.advanceAsync(1000);
    expect(b.member.holdSet().ips.length).toBe(2);
    expect(findOverlaps(l.records)).toEqual([]);
  });
});
