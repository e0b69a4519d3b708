import { describe, expect, it } from 'vitest';
import type { MissEntry } from '../fib/index.js';
import { RecentMisses } from './misses.js';

const S = 1_000_000_000n;
const miss = (dst: string, hits: number, atS: bigint, ifindex = 3): MissEntry => ({
  dst,
  egressIfindex: ifindex,
  family: 4,
  nexthop: '10.0.0.1',
  nexthopFamily: 4,
  hits,
  lastSeenNs: atS * S,
});

describe('RecentMisses', () => {
  it('adds up what the tracker took and what the map still holds, most hits first', () => {
    let now = 100n * S;
    const m = new RecentMisses({ keepMs: 60_000, nowNs: () => now });
    m.record([miss('10.1.0.1', 5, 90n), miss('10.1.0.2', 1, 95n)]);
    m.record([miss('10.1.0.2', 10, 99n)]);
    const top = m.top(10, [miss('10.1.0.1', 2, 100n)], (i) => `eth${i}`);
    expect(top).toEqual([
      {
        dst: '10.1.0.2',
        nexthop: '10.0.0.1',
        device: 'eth3',
        ifindex: 3,
        hits: 11,
        lastSeenAgoMs: 1000,
      },
      {
        dst: '10.1.0.1',
        nexthop: '10.0.0.1',
        device: 'eth3',
        ifindex: 3,
        hits: 7,
        lastSeenAgoMs: 0,
      },
    ]);
    // Not seen for keepMs: forgotten.
    now = 200n * S;
    expect(m.top(10, [], String)).toEqual([]);
  });

  it('remembers at most `capacity` destinations, dropping the least recently taken', () => {
    const m = new RecentMisses({ capacity: 2, nowNs: () => 10n * S });
    m.record([miss('10.1.0.1', 1, 1n), miss('10.1.0.2', 1, 1n), miss('10.1.0.3', 1, 1n)]);
    expect(
      m
        .top(10, [], String)
        .map((r) => r.dst)
        .sort(),
    ).toEqual(['10.1.0.2', '10.1.0.3']);
  });
});
