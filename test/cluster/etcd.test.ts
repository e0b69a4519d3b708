// Cluster members in their own processes against a real etcd (Debian's etcd-server, started
// here on loopback with random ports, a temp data dir and 50/500 ms raft timers). Every
// test checks the history of hold sets the members published: no IP ever had two holders
// (each holder's interval ends at its drop or at the deadline it promised, whichever is
// first), whatever was done to a member or to etcd.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterAdmin,
  EtcdStore,
  LocalEtcd,
  findOverlaps,
  place,
  type WatchEvent,
} from '../../src/cluster/index.js';
import { CompactedError } from '../../src/cluster/index.js';
import { TimeoutError } from '../../src/errors/index.js';
import { FakeClock } from '../../src/sched/testing.js';
import { cleanupLater } from '../helpers/cleanup.js';
import { eventually, holders, MemberProc, reaper } from './harness.js';
import { CutProxy } from './proxy.js';

let etcd: LocalEtcd;
let admin: ClusterAdmin;
let store: EtcdStore;
let prefixN = 0;

beforeAll(async () => {
  etcd = await LocalEtcd.start({
    onSpawn: (pid, dataDir) => (reaper.process(pid), reaper.dir(dataDir)),
  });
  store = new EtcdStore({ endpoints: [etcd.endpoint], requestTimeoutMs: 2000 });
});
afterAll(async () => {
  store?.close();
  await etcd?.destroy();
});

/** A fresh key prefix (one cluster per test) with `n` desired IPs. */
async function cluster(n: number): Promise<{ prefix: string; ips: string[] }> {
  const prefix = `/fk-test-${process.pid}-${prefixN++}/`;
  admin = new ClusterAdmin(store, prefix);
  const ips = Array.from({ length: n }, (_, i) => `192.0.2.${10 + i}`);
  for (const ip of ips) await admin.add(ip);
  return { prefix, ips };
}

function start(names: string[], prefix: string, endpoint = etcd.endpoint): MemberProc[] {
  return names.map((n) => new MemberProc(endpoint, n, { prefix, rebalanceDelay: 300 }));
}

/** Waits until the live members hold exactly the placement (one holder per IP). */
async function settled(
  members: MemberProc[],
  ips: string[],
  what: string,
): Promise<Map<string, string[]>> {
  const live = members.filter((m) => !m.exited);
  const want = place(
    ips.map((ip) => ({ ip })),
    live.map((m) => ({ name: m.name, labels: {} })),
  );
  const same = (h: Map<string, string[]>): boolean =>
    h.size === want.size &&
    [...want].every(([ip, node]) => h.get(ip)?.length === 1 && h.get(ip)![0] === node);
  await eventually(() => same(holders(live)), 20_000, what);
  return holders(live);
}

function noOverlaps(members: MemberProc[]): void {
  expect(findOverlaps(members.flatMap((m) => m.records()))).toEqual([]);
}

/** When `m` first held `ip` at or after `since` (monotonic ms). */
function claimedAt(m: MemberProc, ip: string, since: number): number | undefined {
  return m.holds().find((h) => h.at >= since && h.ips.includes(ip))?.at;
}

describe('cluster members against a real etcd', () => {
  it('places 30 IPs 10/10/10 over 3 processes, and the same way again after restarts', async () => {
    const { prefix, ips } = await cluster(30);
    let ms = start(['a', 'b', 'c'], prefix);
    const first = await settled(ms, ips, 'first placement');
    await eventually(() => ms.every((m) => m.held().length === 10), 10_000, '10 each');
    expect(ms.map((m) => m.held().length)).toEqual([10, 10, 10]);
    // Restart every member, one after the other (graceful stop, then a new process).
    const all = [...ms];
    for (let i = 0; i < 3; i++) {
      ms[i]!.kill('SIGTERM');
      await ms[i]!.exit();
      ms[i] = new MemberProc(etcd.endpoint, ms[i]!.name, { prefix, rebalanceDelay: 300 });
      all.push(ms[i]!);
      await ms[i]!.until(() => ms[i]!.held().length === 10, 20_000, 'its 10 IPs back');
    }
    const again = await settled(ms, ips, 'placement after restarts');
    expect(again).toEqual(first);
    noOverlaps(all);
    for (const m of ms) m.kill('SIGTERM');
  });

  it('SIGKILL: the IPs move after the lease expires, never before the old deadline', async () => {
    const { prefix, ips } = await cluster(6);
    const ms = start(['a', 'b', 'c'], prefix);
    await settled(ms, ips, 'placement');
    const victim = ms[0]!;
    const lost = victim.held();
    expect(lost.length).toBe(2);
    const lastDeadline = victim.holds().at(-1)!.deadline!;
    const t0 = Number(process.hrtime.bigint()) / 1e6;
    victim.kill('SIGKILL');
    await victim.exit();
    const after = await settled(ms.slice(1), ips, 'failover');
    for (const ip of lost) {
      const newOwner = ms.find((m) => m.name === after.get(ip)![0])!;
      const at = claimedAt(newOwner, ip, t0)!;
      expect(at).toBeGreaterThan(lastDeadline);
      console.log(
        `SIGKILL failover ${ip}: ${(at - t0).toFixed(0)} ms after the kill, ${(at - lastDeadline).toFixed(0)} ms after the old deadline`,
      );
    }
    noOverlaps(ms);
    for (const m of ms) m.kill('SIGTERM');
  });

  it('SIGSTOP (a hung member): others take over; on SIGCONT it drops before anything else', async () => {
    const { prefix, ips } = await cluster(4);
    const ms = start(['a', 'b'], prefix);
    await settled(ms, ips, 'placement');
    const hung = ms[0]!;
    const lost = hung.held();
    hung.kill('SIGSTOP');
    const rest = await settled([ms[1]!], ips, 'takeover from the hung member');
    expect(rest.size).toBe(4);
    const resumedAt = Number(process.hrtime.bigint()) / 1e6;
    hung.kill('SIGCONT');
    await hung.until(
      () => hung.holds().some((h) => h.at >= resumedAt),
      5000,
      'a hold set after SIGCONT',
    );
    const firstAfter = hung.holds().find((h) => h.at >= resumedAt)!;
    expect(firstAfter.ips).toEqual([]);
    expect(['fence', 'lost']).toContain(firstAfter.reason);
    expect(lost.length).toBe(2);
    // It rejoins and gets its share back, by handover.
    await hung.until(() => hung.held().length === 2, 20_000, 'its share back');
    noOverlaps(ms);
    for (const m of ms) m.kill('SIGTERM');
  });

  it('a member cut off from etcd drops its IPs before anyone else claims them', async () => {
    const { prefix, ips } = await cluster(4);
    const proxy = await CutProxy.start(etcd.clientPort);
    cleanupLater(() => void proxy.close());
    const cut = new MemberProc(proxy.endpoint, 'a', { prefix, rebalanceDelay: 300 });
    const other = new MemberProc(etcd.endpoint, 'b', { prefix, rebalanceDelay: 300 });
    const ms = [cut, other];
    await settled(ms, ips, 'placement');
    const lost = cut.held();
    expect(lost.length).toBe(2);
    const t0 = Number(process.hrtime.bigint()) / 1e6;
    proxy.cut();
    await cut.until(() => cut.held().length === 0, 5000, 'fenced');
    const dropAt = cut.holds().at(-1)!.at;
    await settled([other], ips, 'takeover');
    for (const ip of lost) expect(claimedAt(other, ip, t0)!).toBeGreaterThan(dropAt);
    noOverlaps(ms);
    proxy.heal();
    await cut.until(() => cut.held().length === 2, 20_000, 'rejoined with its share');
    noOverlaps(ms);
    for (const m of ms) m.kill('SIGTERM');
  });

  it('graceful stop hands over before the stopped lease could have expired', async () => {
    const { prefix, ips } = await cluster(4);
    const ms = start(['a', 'b'], prefix);
    await settled(ms, ips, 'placement');
    const leaving = ms[0]!;
    const lost = leaving.held();
    const t0 = Number(process.hrtime.bigint()) / 1e6;
    leaving.kill('SIGTERM');
    await leaving.exit();
    const lastDeadline = Math.max(...leaving.holds().map((h) => h.deadline ?? -Infinity));
    await settled([ms[1]!], ips, 'handover');
    for (const ip of lost) {
      const at = claimedAt(ms[1]!, ip, t0)!;
      // Before the old lease could have expired (deadline + fence margin), so by handover.
      expect(at).toBeLessThan(lastDeadline + 250);
      console.log(`handover ${ip}: ${(at - t0).toFixed(0)} ms after SIGTERM`);
    }
    expect(leaving.lines.some((l) => l.type === 'stopped')).toBe(true);
    noOverlaps(ms);
    ms[1]!.kill('SIGTERM');
  });

  it('etcd restart and a full etcd outage: IPs dropped while etcd is away, same owners after', async () => {
    const { prefix, ips } = await cluster(6);
    const ms = start(['a', 'b', 'c'], prefix);
    const before = await settled(ms, ips, 'placement');
    await etcd.restart('SIGTERM');
    expect(await settled(ms, ips, 'after etcd restart')).toEqual(before);
    const failed = (m: MemberProc) => m.lines.filter((l) => l.type === 'renew-failure').length;
    const failedBefore = ms.map(failed);
    await etcd.stop('SIGKILL');
    const downAt = Number(process.hrtime.bigint()) / 1e6;
    await eventually(() => ms.every((m) => m.held().length === 0), 5000, 'everyone fenced');
    // The outage lasts until every member has tried etcd (and failed) 3 more times.
    await eventually(
      () => ms.every((m, i) => failed(m) >= failedBefore[i]! + 3),
      10_000,
      'every member kept trying etcd',
    );
    await etcd.resume();
    expect(await settled(ms, ips, 'after the outage')).toEqual(before);
    // No flapping: after the outage each member held only its own IPs, dropped once.
    for (const m of ms) {
      const sets = m.holds().filter((h) => h.at >= downAt);
      for (const s of sets) for (const ip of s.ips) expect(before.get(ip)).toEqual([m.name]);
    }
    noOverlaps(ms);
    for (const m of ms) m.kill('SIGTERM');
  });

  it('watch compaction: a member that missed compacted changes reads everything and converges', async () => {
    const { prefix, ips } = await cluster(2);
    const proxy = await CutProxy.start(etcd.clientPort);
    cleanupLater(() => void proxy.close());
    const a = new MemberProc(proxy.endpoint, 'a', { prefix, rebalanceDelay: 300 });
    const b = new MemberProc(etcd.endpoint, 'b', { prefix, rebalanceDelay: 300 });
    await settled([a, b], ips, 'placement');
    proxy.cut();
    await a.until(() => a.held().length === 0, 5000, 'fenced');
    const more = ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4'];
    for (const ip of more) await admin.add(ip);
    await admin.del(ips[0]!);
    const { revision } = await store.getPrefix(prefix);
    await store.compact(revision);
    proxy.heal();
    const want = [...ips.slice(1), ...more];
    await settled([a, b], want, 'converged after compaction');
    await eventually(
      () => a.held().length + b.held().length === want.length,
      10_000,
      'no extra IPs',
    );
    expect(a.lines.some((l) => l.type === 'resync' && l.reason === 'compacted')).toBe(true);
    noOverlaps([a, b]);
    for (const m of [a, b]) m.kill('SIGTERM');
  });

  it('EtcdStore maps a watch from a compacted revision to CompactedError', async () => {
    const prefix = `/fk-test-${process.pid}-compact/`;
    await store.put(`${prefix}x`, '1');
    const r = await store.put(`${prefix}x`, '2');
    await store.compact(r);
    const err = await new Promise<Error>((resolve) => {
      store.watchPrefix(prefix, r - 1, {
        onEvents: (_e: readonly WatchEvent[]) => undefined,
        onEnd: resolve,
      });
    });
    expect(err).toBeInstanceOf(CompactedError);
    expect((err as CompactedError).compactRevision).toBe(r);
  });

  it('EtcdStore times a keep-alive on its injected clock: unanswered, it fails when that clock says', async () => {
    const proxy = await CutProxy.start(etcd.clientPort);
    cleanupLater(() => void proxy.close());
    const clock = new FakeClock();
    // a request timeout no test waits for in real time: only the fake clock can end the wait
    const s = new EtcdStore({
      endpoints: [proxy.endpoint],
      requestTimeoutMs: 600_000,
      keepAliveTimeoutMs: 1000,
      clock,
    });
    cleanupLater(() => s.close());
    const { id } = await s.grantLease(5);
    expect(await s.keepAlive(id)).toBeGreaterThan(0);
    proxy.cut();
    let outcome: unknown;
    const kept = s.keepAlive(id).then(
      (ttl) => (outcome = ttl),
      (err: unknown) => (outcome = err),
    );
    await clock.advanceAsync(999);
    expect(outcome).toBeUndefined();
    await clock.advanceAsync(1);
    expect(outcome).toBeInstanceOf(TimeoutError);
    await kept;
  });
});
