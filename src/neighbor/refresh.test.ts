import { describe, expect, it } from 'vitest';
import { NTF_EXT_LEARNED, NUD_PERMANENT, NUD_REACHABLE, NUD_STALE } from '../netlink/index.js';
import { Table } from '../statedb/index.js';
import { DeviceTracker } from './devices.js';
import { FakeClock } from '../sched/testing.js';
import { link, neigh } from './testing.js';
import { ObservedNeighbors } from './observed.js';
import { Refresher } from './refresh.js';
import { DesiredRow } from './refset.js';
import { neighKey, type DesiredNeighbor, type RefreshMode } from './types.js';

const P = 241;

function setup(n: number, opts: { mode?: RefreshMode; outstanding?: number } = {}) {
  const clock = new FakeClock();
  const desired = new Table<DesiredNeighbor>({ name: 'desired', primaryKey: (d) => d.key });
  const observed = new ObservedNeighbors(P);
  const devices = new DeviceTracker({ devices: ['eth*'], holderName: 'x' });
  devices.applyLink('new', link(2, 'eth0'));
  const ip = (i: number) => `10.0.${i >> 8}.${i & 255}`;
  for (let i = 0; i < n; i++) {
    desired.upsert(new DesiredRow(neighKey(2, ip(i)), 2, ip(i), 4));
    observed.apply(
      'new',
      neigh(2, ip(i), { state: NUD_STALE, flags: NTF_EXT_LEARNED, protocol: P }),
    );
  }
  const handed: string[] = [];
  const written = new Set<string>();
  let mode: RefreshMode = opts.mode ?? 'legacy';
  const r = new Refresher({
    desired,
    observed,
    devices,
    protocol: P,
    mode: () => mode,
    clock,
    requeue: (key) => handed.push(key),
    written: (key) => written.has(key),
    outstanding: opts.outstanding ?? 3,
    scanPerTick: 100,
    tickMs: 50,
  });
  return {
    r,
    clock,
    handed,
    observed,
    ip,
    write: (keys: string[]) => keys.forEach((k) => written.add(k)),
    setMode: (m: RefreshMode) => (mode = m),
  };
}

describe('legacy refresh sweep', () => {
  it('hands over STALE entries no faster than they are written, each once per pass', () => {
    const { r, clock, handed, write, ip } = setup(10);
    r.start();
    clock.advance(50);
    expect(handed).toEqual([0, 1, 2].map((i) => `2|${ip(i)}`)); // three outstanding at most
    clock.advance(200);
    expect(handed).toHaveLength(3); // nothing written yet: nothing more
    write(handed.slice(0, 2));
    clock.advance(50);
    expect(handed.slice(3)).toEqual([3, 4].map((i) => `2|${ip(i)}`));
    write(handed);
    clock.advance(50);
    write(handed);
    clock.advance(50);
    write(handed);
    clock.advance(50);
    // A whole pass: every entry exactly once, in table order.
    expect(handed.slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `2|${ip(i)}`));
  });

  it('passes over entries that are not STALE or not its own, and does nothing on the managed path', () => {
    const { r, handed, observed, ip, setMode } = setup(4, { outstanding: 10 });
    observed.apply(
      'new',
      neigh(2, ip(0), { state: NUD_REACHABLE, flags: NTF_EXT_LEARNED, protocol: P }),
    );
    observed.apply('new', neigh(2, ip(1), { state: NUD_PERMANENT, protocol: P })); // pinned
    observed.apply('new', neigh(2, ip(2), { state: NUD_STALE })); // the kernel's, not ours
    r.turn();
    expect(handed).toEqual([`2|${ip(3)}`]);
    setMode('managed');
    r.turn();
    r.turn();
    expect(handed).toEqual([`2|${ip(3)}`]);
  });
});
