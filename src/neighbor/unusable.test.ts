import { describe, expect, it } from 'vitest';
import type { EventType } from '../events/index.js';
import { FakeClock } from '../sched/testing.js';
import { NeighborEvents } from './events.js';
import { unusableBetween, type UnusableSource } from './unusable.js';

/** Unresolved entries (ip → time of the first FAILED) on ifindex 2, all of them wanted. */
function source(unresolved: Map<string, number>): { s: UnusableSource; rowsMade: () => number } {
  let rows = 0;
  const s = {
    observed: {
      forEachUnresolved: (
        after: number,
        upTo: number,
        wanted: (i: number, ip: string) => boolean,
        fn: (i: number, ip: string, since: number) => void,
      ) => {
        for (const [ip, t] of unresolved) if (t > after && t <= upTo && wanted(2, ip)) fn(2, ip, t);
      },
      stateOf: () => {
        rows++;
        return 0x20; // NUD_FAILED
      },
    },
    devices: { isSelected: () => true, nameOf: () => 'eth0', selected: () => [{ name: 'eth0' }] },
    desired: { has: () => true, get: () => ({ refs: new Set(['198.51.100.1']) }) },
  } as unknown as UnusableSource;
  return { s, rowsMade: () => rows };
}

describe('unusable next hops', () => {
  it('counts every one and makes rows only for the oldest asked for', () => {
    const unresolved = new Map<string, number>();
    // 10,000 unresolved, FAILED at times in a scrambled order
    for (let i = 0; i < 10_000; i++)
      unresolved.set(`10.0.${i >> 8}.${i & 255}`, (i * 7919) % 10_000);
    const { s, rowsMade } = source(unresolved);
    const few = unusableBetween(s, -Infinity, 5_000, 20_000, 10);
    expect(few.count).toBe(5_001); // FAILED at 0..5000
    expect(few.entries.map((e) => e.forSeconds)).toEqual([20, 20, 20, 20, 20, 20, 20, 20, 20, 20]);
    expect(rowsMade()).toBe(10);
    const oldest = [...unresolved].sort((a, b) => a[1] - b[1]).slice(0, 10);
    expect(few.entries.map((e) => e.nexthop)).toEqual(oldest.map(([ip]) => ip));
    expect(few.entries[0]).toMatchObject({
      device: 'eth0',
      state: 'failed',
      forwardable: ['198.51.100.1'],
    });
    const all = unusableBetween(s, -Infinity, 5_000, 20_000);
    expect(all.entries).toHaveLength(5_001);
    expect(all.entries.map((e) => e.nexthop).slice(0, 10)).toEqual(
      few.entries.map((e) => e.nexthop),
    );
  });

  it('reports each next hop once, when it crosses neighbor.unusableAfter, and builds no rows for the rest', () => {
    const clock = new FakeClock();
    const unresolved = new Map<string, number>();
    const { s, rowsMade } = source(unresolved);
    const emitted: { type: EventType; summary: string }[] = [];
    const after = 2_000;
    const events = new NeighborEvents({
      sink: { emit: (type, summary) => void emitted.push({ type, summary }) },
      clock,
      nameOf: () => 'eth0',
      unresolved: () => unresolved.size,
      unusableUpTo: () => clock.now() - after,
      newlyUnusable: (a, upTo, max) => unusableBetween(s, a, upTo, clock.now(), max),
    });
    events.start();
    for (let i = 0; i < 1_000; i++) unresolved.set(`10.1.${i >> 8}.${i & 255}`, clock.now());
    clock.advance(5_000); // past unusableAfter: all 1,000 reported once
    unresolved.set('10.2.0.1', clock.now());
    clock.advance(10_000); // still unresolved: not again; 10.2.0.1 crosses
    events.stop();
    const unusable = emitted.filter((e) => e.type === 'neighbor.unusable').map((e) => e.summary);
    expect(unusable).toHaveLength(2);
    expect(unusable[0]).toMatch(
      /^1000 next hops unusable: no ARP\/NDP answer past neighbor\.unusableAfter: 10\.1\.0\.0 on eth0/,
    );
    expect(unusable[1]).toMatch(/^1 next hop unusable: .*10\.2\.0\.1 on eth0/);
    // rows for the examples only (5 and 1), not one per unusable next hop and look
    expect(rowsMade()).toBe(6);
  });
});
