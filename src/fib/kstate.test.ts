// mirrorKernel: what the XDP program is told about the kernel, from addresses, routes and
// sysctls. Every choice errs towards passing frames to the kernel.
import { describe, expect, it } from 'vitest';
import {
  AF_INET,
  AF_INET6,
  RTN_BROADCAST,
  RTN_LOCAL,
  RTN_UNICAST,
  type Address,
  type Route,
  type Rule,
} from '../netlink/index.js';
import { mirrorKernel, type NetSysctls } from './kstate.js';
import { decodeState, encodeState, local4Hash, lpm4Key, lpm6Key } from './layout-state.js';

const addr = (index: number, local: string, family = AF_INET): Address => ({
  family,
  prefixlen: family === AF_INET ? 24 : 64,
  flags: 0,
  scope: 0,
  index,
  address: local,
  ...(family === AF_INET ? { local } : {}),
});

const route = (
  family: number,
  dst: string | undefined,
  dstLen: number,
  over: Partial<Route> = {},
): Route => ({
  family,
  dstLen,
  srcLen: 0,
  tos: 0,
  table: 254,
  protocol: 4,
  scope: 0,
  type: RTN_UNICAST,
  flags: 0,
  ...(dst === undefined ? {} : { dst }),
  ...over,
});

const sysctls = (over: Partial<NetSysctls> = {}): NetSysctls => ({
  mpPolicy4: 0,
  mpPolicy6: 0,
  rpFilterAll: 0,
  ip6ForwardingAll: true,
  dev: new Map([
    ['eth0', { rpFilter: 0, disableIpv6: false }],
    ['eth1', { rpFilter: 2, disableIpv6: true }],
  ]),
  ...over,
});

const inTable = (table: Buffer, a: string) => {
  const h = local4Hash(a);
  return [0, 1, 2, 3].some(
    (p) => [...table.subarray(((h + p) % 4096) * 4, ((h + p) % 4096) * 4 + 4)].join('.') === a,
  );
};

describe('mirrorKernel', () => {
  const devices = [
    { name: 'eth0', ifindex: 2, slot: 1 },
    { name: 'eth1', ifindex: 3, slot: 2 },
  ];

  it('local sources: every address and /32 of a local or broadcast route; wider ones in the trie', () => {
    const m = mirrorKernel({
      addresses: [addr(2, '10.0.0.1'), addr(1, '127.0.0.1'), addr(2, 'fd00::1', AF_INET6)],
      routes: [
        route(AF_INET, '10.0.0.255', 32, { type: RTN_BROADCAST, table: 255 }),
        route(AF_INET, '192.0.2.7', 32, { type: RTN_LOCAL, table: 255 }),
        route(AF_INET, '10.62.0.0', 24, { type: RTN_LOCAL, table: 255 }),
        route(AF_INET, '127.0.0.0', 8, { type: RTN_LOCAL, table: 255 }),
        route(AF_INET, '10.9.0.0', 16, { type: 6 }), // blackhole: not local
      ],
      sysctls: sysctls(),
      devices,
    });
    for (const a of ['10.0.0.1', '10.0.0.255', '192.0.2.7'])
      expect(inTable(m.state.local4!, a), a).toBe(true);
    expect(inTable(m.state.local4!, '127.0.0.1')).toBe(false); // martian already
    expect(m.local4w.map((k) => k.toString('hex'))).toEqual([
      lpm4Key('10.62.0.0', 24).toString('hex'),
    ]);
    expect(m.state.local4w).toBe(true);
  });

  it('multipath: routes with legs, nexthop objects, or IPv6 siblings; not single-path ones', () => {
    const legs = [
      { ifindex: 2, flags: 0, hops: 0, gateway: '10.0.0.2' },
      { ifindex: 3, flags: 0, hops: 0, gateway: '10.0.1.2' },
    ];
    const m = mirrorKernel({
      addresses: [],
      routes: [
        route(AF_INET, '10.99.0.0', 16, { multipath: legs }),
        route(AF_INET, undefined, 0, { nhid: 7 }),
        route(AF_INET, '10.98.0.0', 16, { gateway: '10.0.0.2' }),
        route(AF_INET6, 'fd99::', 16, { gateway: 'fe80::1', priority: 1024 }),
        route(AF_INET6, 'fd99::', 16, { gateway: 'fe80::2', priority: 1024 }),
        route(AF_INET6, 'fd98::', 16, { gateway: 'fe80::1' }),
      ],
      sysctls: sysctls(),
      devices,
    });
    expect(new Set(m.mpath4.map((k) => k.toString('hex')))).toEqual(
      new Set([lpm4Key('10.99.0.0', 16), lpm4Key('0.0.0.0', 0)].map((k) => k.toString('hex'))),
    );
    expect(m.mpath6.map((k) => k.toString('hex'))).toEqual([lpm6Key('fd99::', 16).toString('hex')]);
    expect([m.state.mpath4, m.state.mpath6]).toEqual([true, true]);
  });

  it('the smallest unlocked route MTU per family (locked ones are enforced by the lookup)', () => {
    const metric = (type: number, v: number) => {
      const value = Buffer.alloc(4);
      value.writeUInt32LE(v);
      return { type, value };
    };
    const m = mirrorKernel({
      addresses: [],
      routes: [
        route(AF_INET, '10.1.0.0', 16, { metrics: [metric(2, 1400)] }),
        route(AF_INET, '10.2.0.0', 16, { metrics: [metric(2, 1000), metric(1, 1 << 2)] }),
        route(AF_INET, '10.3.0.0', 16, { metrics: [metric(2, 1200)] }),
        route(AF_INET6, 'fd00::', 16, { metrics: [metric(2, 1300)] }),
      ],
      sysctls: sysctls(),
      devices,
    });
    expect([m.state.routeMtu4, m.state.routeMtu6]).toEqual([1200, 1300]);
    const none = mirrorKernel({ addresses: [], routes: [], sysctls: sysctls(), devices });
    expect([none.state.routeMtu4, none.state.routeMtu6]).toEqual([0, 0]);
  });

  const on = { ready: true, policy4: 0, policy6: 0 };

  it('devices: the policy reasons of each slot, the egress map, the generation', () => {
    const m = mirrorKernel({
      addresses: [],
      routes: [],
      sysctls: sysctls(),
      devices: [
        { name: 'eth0', ifindex: 2, slot: 1, policy4: 20, policy6: 22 },
        { name: 'eth1', ifindex: 3, slot: 2 },
      ],
      egress: new Map([[3, 30]]),
      rpGen: 77,
    });
    const st = decodeState(encodeState(m.state));
    expect([st.dev[1]?.policy4, st.dev[1]?.policy6, st.dev[2]?.policy4]).toEqual([20, 22, 0]);
    expect(st.rpGen).toBe(77);
    expect([...m.egress]).toEqual([[3, 30]]);
  });

  it('rp_rules: only rule selectors the reverse lookup in XDP cannot reproduce', () => {
    const rule = (o: Partial<Rule>): Rule => ({
      ...{ family: AF_INET, dstLen: 0, srcLen: 0, tos: 0, table: 254, action: 1, flags: 0 },
      ...o,
    });
    const with_ = (rules: Rule[]) =>
      mirrorKernel({ addresses: [], routes: [], rules, sysctls: sysctls(), devices }).state.rpRules;
    expect(
      with_([rule({ priority: 32766 }), rule({ src: '10.0.0.0', srcLen: 8, table: 100 })]),
    ).toBe(false);
    expect(with_([rule({ fwmark: 1, table: 100 })])).toBe(false);
    expect(with_([rule({ iifname: 'lo', table: 100 })])).toBe(true);
    expect(with_([rule({ ipProto: 6, table: 100 })])).toBe(true);
    expect(with_([rule({ dportRange: { start: 53, end: 53 }, table: 100 })])).toBe(true);
    expect(with_([rule({ family: AF_INET6, iifname: 'eth0', table: 100 })])).toBe(false);
  });

  it('devices: rp_filter is the max of all and the device; IPv6 off with disable_ipv6 or forwarding off', () => {
    const m = mirrorKernel({
      addresses: [addr(2, '10.0.0.1')],
      routes: [],
      sysctls: sysctls({ rpFilterAll: 1, mpPolicy4: 3, mpPolicy6: 2 }),
      devices,
    });
    const st = decodeState(encodeState(m.state));
    expect(st.dev[1]).toEqual({ ...on, rpFilter: 1, v4Addr: true, ip6Off: false });
    expect(st.dev[2]).toEqual({ ...on, rpFilter: 2, v4Addr: false, ip6Off: true });
    expect(st.dev[3]?.ready).toBe(false);
    expect([st.mpPolicy4, st.mpPolicy6]).toEqual([3, 2]);
    const off = mirrorKernel({
      addresses: [],
      routes: [],
      sysctls: sysctls({ ip6ForwardingAll: false }),
      devices,
    });
    expect(off.state.dev[1]?.ip6Off).toBe(true);
  });

  it('a device whose sysctls could not be read is not ready; devices sharing :other are merged strictly', () => {
    const m = mirrorKernel({
      addresses: [addr(2, '10.0.0.1'), addr(3, '10.0.1.1')],
      routes: [],
      sysctls: sysctls(),
      devices: [
        { name: 'eth0', ifindex: 2, slot: 0 },
        { name: 'eth1', ifindex: 3, slot: 0 },
        { name: 'gone', ifindex: 9, slot: 5 },
      ],
    });
    // a policy on either device of a shared slot applies to the slot
    const shared = mirrorKernel({
      addresses: [],
      routes: [],
      sysctls: sysctls(),
      devices: [
        { name: 'eth0', ifindex: 2, slot: 0, policy6: 21 },
        { name: 'eth1', ifindex: 3, slot: 0, policy4: 20 },
      ],
    });
    expect([shared.state.dev[0]?.policy4, shared.state.dev[0]?.policy6]).toEqual([20, 21]);
    expect(m.state.dev[0]).toEqual({ ...on, rpFilter: 1, v4Addr: true, ip6Off: true });
    expect(m.state.dev[5]?.ready).toBe(false);
  });
});
