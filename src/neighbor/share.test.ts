import { describe, expect, it } from 'vitest';
import { NetlinkError, RTN_BLACKHOLE, type Route } from '../netlink/index.js';
import { route } from './testing.js';
import { hopsOfOutcome, nextHopsOf } from './nexthop.js';
import { groupLength, NO_GROUP4, NO_GROUP6, PrefixIndex } from './prefixes.js';
import { lookupNextHops, type LookupFn } from './share.js';

function index(...dsts: string[]): PrefixIndex {
  const p = new PrefixIndex();
  for (const d of dsts) p.add(d);
  return p;
}

/** A lookup that answers from a table of IP → answer and records what it was asked. */
function fib(answer: (ifindex: number, ip: string) => Route | Error) {
  const asked: string[] = [];
  const lookup: LookupFn = async (ifindex, ips) => {
    asked.push(...ips);
    return ips.map((ip) => answer(ifindex, ip));
  };
  return { asked, lookup };
}

describe('PrefixIndex: an IP’s group is its longest containing route prefix', () => {
  it('IPv4: the most specific prefix wins, whatever the table or device of the route', () => {
    const p = index('0.0.0.0/0', '10.0.0.0/8', '10.1.0.0/16', '10.1.2.3/32', '10.1.0.0/16');
    const g = (ip: string) => p.groupOf(ip);
    expect(g('10.1.2.3')).not.toBe(g('10.1.2.4'));
    expect(g('10.1.2.4')).toBe(g('10.1.255.255'));
    expect(g('10.1.2.4')).not.toBe(g('10.2.0.1'));
    expect(g('10.2.0.1')).toBe(g('10.200.0.1'));
    expect(g('192.0.2.1')).toBe(g('8.8.8.8'));
    expect([g('10.1.2.3'), g('10.1.2.4'), g('10.2.0.1'), g('8.8.8.8')].map(groupLength)).toEqual([
      32, 16, 8, 0,
    ]);
    // A prefix goes with its last route.
    p.remove('10.1.0.0/16');
    expect(groupLength(g('10.1.2.4'))).toBe(16);
    p.remove('10.1.0.0/16');
    expect(g('10.1.2.4')).toBe(g('10.2.0.1'));
    p.remove('0.0.0.0/0');
    expect(g('8.8.8.8')).toBe(NO_GROUP4);
    expect(groupLength(NO_GROUP4)).toBe(-1);
  });

  it('IPv6, odd lengths included; the families never share a group', () => {
    const p = index('2001:db8::/32', '2001:db8:0:8000::/49', '::/0', '0.0.0.0/0');
    expect(p.groupOf('2001:db8::1')).toBe(p.groupOf('2001:db8:0:7fff::1'));
    expect(p.groupOf('2001:db8::1')).not.toBe(p.groupOf('2001:db8:0:8000::1'));
    expect(p.groupOf('2001:db8:0:ffff::1')).toBe(p.groupOf('2001:db8:0:8000::1'));
    expect(groupLength(p.groupOf('2001:db8:0:8000::1'))).toBe(49);
    expect(groupLength(p.groupOf('2001:db9::1'))).toBe(0);
    expect(p.groupOf('2001:db9::1')).not.toBe(p.groupOf('10.0.0.1'));
    expect(new PrefixIndex().groupOf('2001:db8::1')).toBe(NO_GROUP6);
    expect(p.size).toBe(4);
  });
});

describe('lookupNextHops: one lookup per group, next hops derived per member', () => {
  const groups = index('10.1.0.0/24', '10.9.0.0/16', '10.9.5.0/24', '0.0.0.0/0');
  const connected = route('10.1.0.0/24', [[2]]);
  const viaGw = route('10.9.0.0/16', [[2, '10.1.0.254']]);
  const multipath = route('10.9.5.0/24', [
    [2, '10.1.0.253'],
    [3, '10.2.0.1'],
    [2, '10.1.0.252'],
  ]);
  const answers = (_ifindex: number, ip: string): Route | Error =>
    ip.startsWith('10.1.0.')
      ? connected
      : ip.startsWith('10.9.5.')
        ? multipath
        : ip.startsWith('10.9.')
          ? viaGw
          : new NetlinkError('routeGet', 101);

  it('on-link: each IP itself; gateway: the gateway; multipath: every leg on the device', async () => {
    const ips = ['10.1.0.5', '10.1.0.6', '10.9.1.1', '10.9.2.2', '10.9.5.1', '10.9.5.2', '8.8.8.8'];
    const f = fib(answers);
    const r = await lookupNextHops(2, ips, (ip) => groups.groupOf(ip), f.lookup);
    expect(f.asked).toEqual(['10.1.0.5', '10.9.1.1', '10.9.5.1', '8.8.8.8']);
    expect(r.shared).toBe(3);
    expect(r.lookups).toEqual({ nexthop: 3, unreachable: 1, error: 0 });
    expect(r.outcomes).toEqual([
      { kind: 'self' },
      { kind: 'self' },
      { kind: 'nexthops', nexthops: ['10.1.0.254'] },
      { kind: 'nexthops', nexthops: ['10.1.0.254'] },
      { kind: 'nexthops', nexthops: ['10.1.0.252', '10.1.0.253'] },
      { kind: 'nexthops', nexthops: ['10.1.0.252', '10.1.0.253'] },
      { kind: 'unreachable', reason: 'ENETUNREACH' },
    ]);
    // The same as each IP's own lookup.
    for (const [i, ip] of ips.entries()) {
      expect(r.outcomes[i]).toEqual(nextHopsOf(answers(2, ip), ip, 2));
    }
    expect(hopsOfOutcome(r.outcomes[1]!, '10.1.0.6')).toEqual(['10.1.0.6']);
    // Nothing made per IP: the on-link outcome is one object, a gateway's one per answer.
    expect(r.outcomes[0]).toBe(r.outcomes[1]);
    expect(r.outcomes[2]).toBe(r.outcomes[3]);
  });

  it('without a group every IP is looked up on its own', async () => {
    const f = fib(answers);
    const ips = ['10.1.0.5', '10.1.0.6', '10.9.1.1'];
    const r = await lookupNextHops(2, ips, () => undefined, f.lookup);
    expect(f.asked).toEqual(ips);
    expect(r.shared).toBe(0);
  });

  it('an answer more specific than the group (a route not yet seen) is not shared', async () => {
    // The Route table knows only 10.9.0.0/16; the kernel already has 10.9.5.0/24.
    const stale = index('10.9.0.0/16');
    const f = fib(answers);
    const ips = ['10.9.5.1', '10.9.1.1', '10.9.5.2'];
    const r = await lookupNextHops(2, ips, (ip) => stale.groupOf(ip), f.lookup);
    // 10.9.5.1 represents the /16 but is answered by the /24: everyone asks for himself.
    expect(f.asked).toEqual(['10.9.5.1', '10.9.1.1', '10.9.5.2']);
    expect(r.outcomes.map((o) => (o.kind === 'nexthops' ? o.nexthops : o.kind))).toEqual([
      ['10.1.0.252', '10.1.0.253'],
      ['10.1.0.254'],
      ['10.1.0.252', '10.1.0.253'],
    ]);
    expect(r.lookups.nexthop).toBe(3);
  });

  it('a nexthop object without its legs in the answer is not shared', async () => {
    const opaque: Route = { ...route('10.1.0.0/24', []), nhid: 7 };
    const f = fib(() => opaque);
    const r = await lookupNextHops(
      2,
      ['10.1.0.5', '10.1.0.6'],
      (ip) => groups.groupOf(ip),
      f.lookup,
    );
    expect(f.asked).toEqual(['10.1.0.5', '10.1.0.6']);
    expect(r.shared).toBe(0);
    // With its legs shown (nexthop_compat_mode), it is shared like any route.
    const shown: Route = { ...route('10.1.0.0/24', [[2, '10.1.0.254']]), nhid: 7 };
    const g = fib(() => shown);
    const s = await lookupNextHops(
      2,
      ['10.1.0.5', '10.1.0.6'],
      (ip) => groups.groupOf(ip),
      g.lookup,
    );
    expect(g.asked).toEqual(['10.1.0.5']);
    expect(s.outcomes).toEqual([
      { kind: 'nexthops', nexthops: ['10.1.0.254'] },
      { kind: 'nexthops', nexthops: ['10.1.0.254'] },
    ]);
  });

  it('errors and non-unicast answers are shared too; a lookup that throws fails every member', async () => {
    const bh = fib(() => route('10.1.0.0/24', [], { type: RTN_BLACKHOLE }));
    const r = await lookupNextHops(
      2,
      ['10.1.0.5', '10.1.0.6'],
      (ip) => groups.groupOf(ip),
      bh.lookup,
    );
    expect(bh.asked).toHaveLength(1);
    expect(r.outcomes).toEqual([
      { kind: 'unreachable', reason: 'blackhole route' },
      { kind: 'unreachable', reason: 'blackhole route' },
    ]);
    const broken: LookupFn = async () => {
      throw new Error('socket closed');
    };
    const e = await lookupNextHops(2, ['10.1.0.5', '10.9.1.1'], (ip) => groups.groupOf(ip), broken);
    expect(e.outcomes).toEqual([
      { kind: 'error', error: 'socket closed' },
      { kind: 'error', error: 'socket closed' },
    ]);
    expect(e.lookups.error).toBe(2);
  });
});

describe('PrefixIndex input', () => {
  it('takes any spelling of an address (IPv4-mapped IPv6 is IPv6)', () => {
    const p = index('10.0.0.0/8', '::ffff:0:0/96');
    expect(p.groupOf('10.1.2.3')).toBe(p.groupOf('10.255.255.255'));
    expect(groupLength(p.groupOf('::ffff:10.1.2.3'))).toBe(96);
    expect(() => p.groupOf('010.1.2.3')).toThrow(/leading zero/);
  });
});
