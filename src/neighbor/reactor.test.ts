import { describe, expect, it } from 'vitest';
import {
  NTF_EXT_LEARNED,
  NTF_EXT_MANAGED,
  NUD_FAILED,
  NUD_REACHABLE,
  NUD_STALE,
} from '../netlink/index.js';
import { Table } from '../statedb/index.js';
import { DeviceTracker } from './devices.js';
import { FakeClock } from '../sched/testing.js';
import { link, neigh } from './testing.js';
import { observedRow } from './observed.js';
import { Reactor, type RequeueCause } from './reactor.js';
import { neighKey, type DesiredNeighbor, type RefreshMode } from './types.js';

const P = 241;
const KEY = neighKey(2, '10.0.0.1');

function setup(mode: RefreshMode) {
  const clock = new FakeClock();
  const desired = new Table<DesiredNeighbor>({ name: 'desired', primaryKey: (d) => d.key });
  desired.upsert({ key: KEY, ifindex: 2, nexthop: '10.0.0.1', family: 4, refs: new Set() });
  const devices = new DeviceTracker({ devices: ['eth*'], holderName: 'x' });
  devices.applyLink('new', link(2, 'eth0'));
  const requeued: string[] = [];
  const r = new Reactor({
    desired,
    devices,
    mode: () => mode,
    protocol: P,
    clock,
    retryMinMs: 100,
    retryMaxMs: 1000,
    requeue: (key: string, cause: RequeueCause) =>
      requeued.push(`${clock.now() - 1_000_000} ${key} ${cause}`),
  });
  r.start();
  const state = (s: number, managed = mode === 'managed') =>
    observedRow(
      neigh(2, '10.0.0.1', {
        state: s,
        flags: NTF_EXT_LEARNED,
        flagsExt: managed ? NTF_EXT_MANAGED : 0,
        protocol: P,
      }),
    );
  const gone = () => r.observed({ ifindex: 2, ip: '10.0.0.1', after: undefined });
  return { clock, r, requeued, state, gone, devices };
}

describe('reactor', () => {
  it('puts a deleted entry back at once, and backs off when it keeps going', () => {
    const { clock, r, requeued, gone, state } = setup('managed');
    gone();
    expect(requeued).toEqual([`0 ${KEY} deleted`]);
    gone();
    gone();
    expect(r.backingOff).toBe(1);
    clock.advance(99);
    expect(requeued).toHaveLength(1);
    clock.advance(1000);
    // The second and third loss share one pending re-insert: after 200 ms (the third's
    // backoff replaced the second's 100 ms).
    expect(requeued).toEqual([`0 ${KEY} deleted`, `200 ${KEY} deleted`]);
    // Resolved: the count starts over.
    r.observed({ ifindex: 2, ip: '10.0.0.1', after: state(NUD_REACHABLE) });
    expect(r.lossesOf(KEY)).toBe(0);
    gone();
    expect(requeued.at(-1)).toBe(`1099 ${KEY} deleted`);
  });

  it('leaves a FAILED managed entry to the kernel; re-inserts a FAILED legacy one', () => {
    const m = setup('managed');
    m.r.observed({ ifindex: 2, ip: '10.0.0.1', after: m.state(NUD_FAILED) });
    expect(m.requeued).toEqual([]);
    const l = setup('legacy');
    l.r.observed({ ifindex: 2, ip: '10.0.0.1', after: l.state(NUD_FAILED) });
    expect(l.requeued).toEqual([`0 ${KEY} failed`]);
  });

  it('leaves STALE entries to the refresher (the legacy sweep) and to the kernel (managed)', () => {
    for (const mode of ['managed', 'legacy'] as const) {
      const x = setup(mode);
      x.r.observed({ ifindex: 2, ip: '10.0.0.1', after: x.state(NUD_STALE) });
      expect(x.requeued).toEqual([]);
    }
  });

  it('ignores entries that are not desired and devices that are not selected', () => {
    const { r, requeued, devices } = setup('managed');
    r.observed({ ifindex: 2, ip: '10.0.0.9', after: undefined });
    devices.applyLink('new', link(2, 'eth0', { flags: 0 }));
    r.observed({ ifindex: 2, ip: '10.0.0.1', after: undefined });
    expect(requeued).toEqual([]);
  });
});
