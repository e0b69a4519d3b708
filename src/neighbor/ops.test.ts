import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { NeighborMetrics } from './metrics.js';
import {
  NTF_EXT_LEARNED,
  NTF_EXT_MANAGED,
  NTF_USE,
  NUD_PERMANENT,
  NUD_REACHABLE,
} from '../netlink/index.js';
import { FakeKernel, neigh } from './testing.js';
import { ObservedNeighbors } from './observed.js';
import { NeighborOps, type NeighborOpsParams } from './ops.js';
import type { RequeueCause } from './reactor.js';
import { neighKey, type DesiredNeighbor, type RefreshMode } from './types.js';

const P = 241;
const want = (ifindex: number, nexthop: string): DesiredNeighbor => ({
  key: neighKey(ifindex, nexthop),
  ifindex,
  nexthop,
  family: nexthop.includes(':') ? 6 : 4,
  refs: new Set<string>(),
});

function setup(
  mode: RefreshMode = 'managed',
  twoStep = false,
  pace: Pick<NeighborOpsParams, 'backlog' | 'reading' | 'eventsRead'> = { backlog: 0 },
) {
  const kernel = new FakeKernel();
  const observed = new ObservedNeighbors();
  const metrics = new NeighborMetrics();
  const causes = new Map<string, RequeueCause>();
  const missing: string[] = [];
  /** What prune takes as desired (the subsystem asks its desired table). */
  const wanted = new Set<string>();
  const ops = new NeighborOps({
    kernel,
    mode: () => mode,
    protocol: P,
    observed,
    metrics,
    log: silentLogger(),
    twoStep,
    ...pace,
    causes,
    missing: (keys) => missing.push(...keys),
    wanted: (ifindex, ip) => wanted.has(neighKey(ifindex, ip)),
  });
  /** Puts an entry in the kernel and in the observed table, as an event would. */
  const present = (n: ReturnType<typeof neigh>) => {
    kernel.entries.set(neighKey(n.ifindex, n.dst!), n);
    observed.apply('new', n);
  };
  return { kernel, observed, metrics, causes, missing, ops, present, wanted };
}

describe('neighbor ops', () => {
  it('paces a large delete as it paces writes: its events are read before it returns', async () => {
    // The fake event socket: while reading is on, whatever the deletes caused is read.
    const run = async (backlog: number) => {
      const reads: boolean[] = [];
      let on = true;
      let read = 0;
      let owed = 0;
      const s = setup('legacy', false, {
        backlog,
        eventsRead: () => (on ? (read = owed) : read),
        reading: (x) => {
          reads.push(x);
          on = x;
        },
      });
      const rows = Array.from({ length: 2048 }, (_, i) => want(2, `10.0.${i >> 8}.${i & 255}`));
      for (const r of rows) {
        s.present(
          neigh(2, r.nexthop, { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED, protocol: P }),
        );
      }
      const del = s.kernel.neighDelMany.bind(s.kernel);
      s.kernel.neighDelMany = async (e) => {
        owed += e.length; // one RTM_DELNEIGH each
        return del(e);
      };
      const t0 = Date.now();
      const out = await s.ops.deleteBatch(rows);
      expect(out.filter((e) => e !== undefined)).toEqual([]);
      expect(s.kernel.entries.size).toBe(0);
      return { reads, read: () => (on ? owed : read), ms: Date.now() - t0 };
    };
    // Over the budget (1000): read as it is deleted, never paused; nothing is left owed.
    const over = await run(1000);
    expect(over.reads).toEqual([]);
    expect(over.read()).toBe(2048);
    expect(over.ms).toBeLessThan(150); // not the wait's limit (PACE_MAX_MS)
    // Within it: reading paused for the burst, resumed once the burst is over.
    const within = await run(10_000);
    expect(within.reads).toEqual([false]);
    await new Promise((r) => setImmediate(r));
    expect(within.reads).toEqual([false, true]);
    expect(within.read()).toBe(2048);
  });

  it('writes extern_learn + managed + the mark, without a link-layer address', async () => {
    const s = setup('managed');
    await s.ops.update(want(2, '10.0.0.1'));
    expect(s.kernel.entries.get('2|10.0.0.1')).toMatchObject({
      state: 0,
      flags: NTF_EXT_LEARNED,
      flagsExt: NTF_EXT_MANAGED,
      protocol: P,
    });
    expect(s.kernel.entries.get('2|10.0.0.1')?.lladdr).toBeUndefined();
    expect(s.metrics.counters().inserts).toBe(1);
  });

  it('legacy: NTF_USE instead of managed; two steps for new entries on old kernels', async () => {
    const s = setup('legacy', true);
    s.present(neigh(2, '10.0.0.2', { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED, protocol: P }));
    await s.ops.updateBatch([want(2, '10.0.0.1'), want(2, '10.0.0.2')]);
    expect(s.kernel.take()).toEqual(['set 2|10.0.0.1', 'set 2|10.0.0.1', 'set 2|10.0.0.2']);
    expect(s.kernel.entries.get('2|10.0.0.1')).toMatchObject({
      flags: NTF_EXT_LEARNED | NTF_USE,
      flagsExt: 0,
      protocol: P,
    });
  });

  it('leaves an entry someone else owns, and counts re-inserts and refreshes by cause', async () => {
    const s = setup();
    s.present(neigh(2, '10.0.0.1', { state: NUD_PERMANENT, lladdr: '02:00:00:00:00:01' }));
    s.causes.set('2|10.0.0.2', 'deleted');
    s.causes.set('2|10.0.0.3', 'refresh');
    const res = await s.ops.updateBatch([
      want(2, '10.0.0.1'),
      want(2, '10.0.0.2'),
      want(2, '10.0.0.3'),
    ]);
    expect(res).toEqual([undefined, undefined, undefined]);
    expect(s.kernel.take()).toEqual(['set 2|10.0.0.2', 'set 2|10.0.0.3']);
    expect(s.kernel.entries.get('2|10.0.0.1')?.protocol).toBeUndefined();
    const c = s.metrics.counters();
    expect([c.inserts, c.reinserts.deleted, c.refreshes]).toEqual([0, 1, 1]);
    expect(s.causes.size).toBe(0);
  });

  it('reports per-entry write failures', async () => {
    const s = setup();
    s.kernel.failKeys.set('2|10.0.0.2', 'ENODEV');
    const res = await s.ops.updateBatch([want(2, '10.0.0.1'), want(2, '10.0.0.2')]);
    expect(res[0]).toBeUndefined();
    expect(res[1]?.message).toMatch(/ENODEV/);
  });

  it('deletes only its own entries; gone ones are success', async () => {
    const s = setup();
    await s.ops.update(want(2, '10.0.0.1'));
    s.present(neigh(2, '10.0.0.2', { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED })); // an operator's
    s.kernel.take();
    const res = await s.ops.deleteBatch([
      want(2, '10.0.0.1'),
      want(2, '10.0.0.2'),
      want(2, '10.0.0.3'),
    ]);
    expect(res).toEqual([undefined, undefined, undefined]);
    expect(s.kernel.take()).toEqual(['del 2|10.0.0.1']);
    expect(s.kernel.entries.has('2|10.0.0.2')).toBe(true);
    expect(s.metrics.counters().deletes.reconcile).toBe(1);
  });

  it('judges a large delete from the observed table instead of asking entry by entry', async () => {
    const s = setup();
    const many = Array.from({ length: 300 }, (_, i) => want(2, `10.0.1.${i % 250}`)).slice(0, 250);
    many.push(...Array.from({ length: 50 }, (_, i) => want(3, `10.0.2.${i}`)));
    for (const d of many)
      s.present(
        neigh(d.ifindex, d.nexthop, { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED, protocol: P }),
      );
    s.present(neigh(3, '10.0.2.0', { state: NUD_PERMANENT })); // replaced by an operator
    const res = await s.ops.deleteBatch(many);
    expect(res.every((e) => e === undefined)).toBe(true);
    expect(s.kernel.entries.size).toBe(1);
    expect(s.kernel.entries.get('3|10.0.2.0')?.state).toBe(NUD_PERMANENT);
  });

  it('prunes its own stale entries only, and reports desired entries the kernel lacks', async () => {
    const s = setup();
    s.present(neigh(2, '10.0.0.1', { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED, protocol: P })); // desired
    s.present(neigh(2, '10.0.0.9', { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED, protocol: P })); // stale
    s.present(neigh(2, '10.0.0.8', { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED })); // operator
    s.present(neigh(2, '10.0.0.7', { state: NUD_REACHABLE, protocol: 186 })); // another agent
    const desired = [want(2, '10.0.0.1'), want(2, '10.0.0.5')];
    for (const d of desired) s.wanted.add(d.key);
    await s.ops.prune(desired);
    expect(s.kernel.take()).toEqual(['del 2|10.0.0.9']);
    expect([...s.kernel.entries.keys()].sort()).toEqual(['2|10.0.0.1', '2|10.0.0.7', '2|10.0.0.8']);
    expect(s.missing).toEqual(['2|10.0.0.5']);
    expect(s.metrics.counters().deletes.prune).toBe(1);
  });
});
