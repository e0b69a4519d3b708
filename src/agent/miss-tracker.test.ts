import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { FakeClock } from '../sched/testing.js';
import { MISS_OWNER, MissTracker } from './miss-tracker.js';

describe('XDP miss tracker', () => {
  it('learns next hops, keeps them while misses recur, and expires them after the TTL', async () => {
    let now = 0;
    let misses: { nexthop: string }[] = [];
    const owned = new Set<string>();
    const history: string[] = [];
    const registry = new Registry();
    const t = new MissTracker({
      source: { takeMisses: () => misses.splice(0) },
      sink: {
        upsert: (owner, ips) => {
          expect(owner).toBe(MISS_OWNER);
          ips.forEach((ip) => owned.add(ip));
          history.push(`+${ips.join(',')}`);
        },
        delete: (_o, ips) => {
          ips.forEach((ip) => owned.delete(ip));
          history.push(`-${ips.join(',')}`);
        },
      },
      ttlMs: 10_000,
      intervalMs: 1000,
      registry,
      log: silentLogger(),
      now: () => now,
    });
    misses = [{ nexthop: '10.0.0.1' }, { nexthop: '10.0.0.2' }, { nexthop: '10.0.0.1' }];
    await t.tick();
    expect([...owned]).toEqual(['10.0.0.1', '10.0.0.2']);
    now = 6000;
    misses = [{ nexthop: '10.0.0.2' }];
    await t.tick();
    now = 10_000;
    await t.tick();
    expect([...owned]).toEqual(['10.0.0.2']);
    now = 16_000;
    await t.tick();
    expect([...owned]).toEqual([]);
    expect(history).toEqual(['+10.0.0.1,10.0.0.2', '-10.0.0.1', '-10.0.0.2']);
    const text = await registry.metrics();
    expect(text).toContain('fibkeeper_xdp_miss_tracker_learned_total 2');
    expect(text).toContain('fibkeeper_xdp_miss_tracker_expired_total 2');
  });

  it('forgets next hops the neighbor subsystem refuses', async () => {
    const t = new MissTracker({
      source: { takeMisses: () => [{ nexthop: '127.0.0.1' }] },
      sink: {
        upsert: () => {
          throw new Error('loopback');
        },
        delete: () => {},
      },
      ttlMs: 1000,
      intervalMs: 1000,
      log: silentLogger(),
    });
    await t.tick();
    expect(t.tracked).toBe(0);
  });

  it('ticks every intervalMs on its clock, skips a tick while one runs, and stops', async () => {
    const clock = new FakeClock();
    let reads = 0;
    let release: (() => void) | undefined;
    const t = new MissTracker({
      source: {
        takeMisses: async () => {
          reads++;
          await new Promise<void>((r) => (release = r));
          return [];
        },
      },
      sink: { upsert: () => {}, delete: () => {} },
      ttlMs: 10_000,
      intervalMs: 1000,
      log: silentLogger(),
      clock,
    });
    t.start();
    await clock.advanceAsync(999);
    expect(reads).toBe(0);
    await clock.advanceAsync(1);
    expect(reads).toBe(1);
    await clock.advanceAsync(3000); // the first read still runs: no second one
    expect(reads).toBe(1);
    release!();
    await clock.advanceAsync(1000);
    expect(reads).toBe(2);
    release!();
    await t.stop();
    await clock.advanceAsync(5000);
    expect(reads).toBe(2);
    expect(clock.pending).toBe(0);
  });
});
