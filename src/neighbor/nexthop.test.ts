import { describe, expect, it } from 'vitest';
import { NetlinkError, RTN_LOCAL, RTNH_F_DEAD } from '../netlink/index.js';
import { route } from './testing.js';
import { hopsOfOutcome, nextHopsOf } from './nexthop.js';

describe('nextHopsOf', () => {
  it('on-link: the IP itself; via a gateway: the gateway', () => {
    const onLink = nextHopsOf(route('10.0.0.0/24', [[2]]), '10.0.0.7', 2);
    expect(onLink).toEqual({ kind: 'self' });
    expect(hopsOfOutcome(onLink, '10.0.0.7')).toEqual(['10.0.0.7']);
    expect(nextHopsOf(route('10.9.0.0/24', [[2, '10.0.0.1']]), '10.9.0.7', 2)).toEqual({
      kind: 'nexthops',
      nexthops: ['10.0.0.1'],
    });
    const v6via = { ...route('10.9.0.0/24', [[2]]), via: { family: 10, address: 'fe80::1' } };
    expect(nextHopsOf(v6via, '10.9.0.7', 2)).toEqual({ kind: 'nexthops', nexthops: ['fe80::1'] });
  });

  it('multipath: every live leg on the device, nothing from other devices', () => {
    const r = route('10.8.0.0/24', [
      [2, '10.0.0.1'],
      [2, '10.0.0.2'],
      [3, '10.1.0.1'],
    ]);
    expect(nextHopsOf(r, '10.8.0.5', 2)).toEqual({
      kind: 'nexthops',
      nexthops: ['10.0.0.1', '10.0.0.2'],
    });
    expect(nextHopsOf(r, '10.8.0.5', 3)).toEqual({ kind: 'nexthops', nexthops: ['10.1.0.1'] });
    expect(nextHopsOf(r, '10.8.0.5', 4)).toEqual({ kind: 'nexthops', nexthops: [] });
    r.multipath![0]!.flags = RTNH_F_DEAD;
    expect(nextHopsOf(r, '10.8.0.5', 2)).toEqual({ kind: 'nexthops', nexthops: ['10.0.0.2'] });
  });

  it('no route through the device or not unicast: no entry; other errors: retry', () => {
    expect(nextHopsOf(new NetlinkError('routeGet', 101), '10.0.0.1', 2)).toEqual({
      kind: 'unreachable',
      reason: 'ENETUNREACH',
    });
    expect(nextHopsOf(route('10.0.0.1/32', [[2]], { type: RTN_LOCAL }), '10.0.0.1', 2)).toEqual({
      kind: 'unreachable',
      reason: 'local route',
    });
    expect(nextHopsOf(new NetlinkError('routeGet', 16), '10.0.0.1', 2)).toMatchObject({
      kind: 'error',
    });
    expect(nextHopsOf(new Error('socket closed'), '10.0.0.1', 2)).toMatchObject({ kind: 'error' });
  });
});
