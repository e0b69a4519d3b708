// The route mirror kept from events equals the one computed from a fresh dump: random churn of
// real routes and rules (`ip route`, `ip -6 route`, `ip nexthop`, `ip rule`: local routes,
// IPv4 and IPv6 multipath routes, legs appended and removed one at a time, nexthop objects,
// route MTUs, rules the reverse-path lookup cannot reproduce), then the facts RouteMirror
// kept from the route feed's events against routeFacts() of `ip route show table all` read
// now. The feed dumped once (at start): every change came as an event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { AF_INET, NetlinkHandle, RouteFeed } from '../netlink/index.js';
import { ip, makeNetns, privileged, vethPair, waitFor } from '../../test/helpers/netns.js';
import { RouteMirror } from './kroutes.js';
import { routeFacts, type RouteFacts } from './kstate.js';

const { skip } = privileged();

/** The facts as plain sorted data (the lists' order and the maps' identity do not matter). */
function plain(f: RouteFacts): unknown {
  const keys = (m: ReadonlyMap<string, Buffer>): string[] => [...m.keys()].sort();
  return {
    local32: [...new Set(f.local32)].sort(),
    wide: keys(f.wide),
    mpath4: keys(f.mpath4),
    mpath6: keys(f.mpath6),
    routeMtu4: f.routeMtu4,
    routeMtu6: f.routeMtu6,
    rpRules: f.rpRules,
  };
}

/** A small seeded generator (mulberry32): a failing run can be replayed from its seed. */
function rng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/** One random change; `ip` errors (deleting what is not there, say) are part of the churn. */
function change(ns: string, pick: (n: number) => number): void {
  const n = pick(8);
  const gw4 = ['10.70.0.2', '10.70.1.2'];
  const gw6 = ['fd70::2', 'fd70:1::2'];
  const dev = ['v0', 'v1'];
  const table = ['main', '100'][pick(2)] as string;
  const mtu = [[], ['mtu', '1300'], ['mtu', 'lock', '1200'], ['mtu', '1400']][pick(4)] as string[];
  // IPv6 keeps an MTU per leg and reports the first leg's: one MTU per prefix here (see
  // kroutes.ts on legs with MTUs of their own)
  const mtu6 = n % 3 === 0 ? [] : n % 3 === 1 ? ['mtu', `${1300 + n}`] : ['mtu', 'lock', '1280'];
  const leg = (i: number, v6: boolean): string[] => [
    'nexthop',
    'via',
    (v6 ? gw6 : gw4)[i] as string,
    'dev',
    dev[i] as string,
  ];
  const cmds: string[][] = [
    // IPv4 unicast, one path or two, maybe an MTU
    [
      [
        'route',
        'replace',
        `10.80.${n}.0/24`,
        'table',
        table,
        'via',
        gw4[pick(2)] as string,
        ...mtu,
      ],
      ['route', 'replace', `10.80.${n}.0/24`, 'table', table, ...leg(0, false), ...leg(1, false)],
      ['route', 'del', `10.80.${n}.0/24`, 'table', table],
    ][pick(3)] as string[],
    // local-type IPv4 routes: /32 and wider, in the local table or another
    [
      ['route', 'replace', 'local', `10.81.${n}.${pick(4)}`, 'dev', 'lo', 'table', table],
      ['route', 'replace', 'local', `10.82.${n}.0/24`, 'dev', 'lo'],
      ['route', 'replace', 'broadcast', `10.83.${n}.255`, 'dev', 'v0', 'table', 'local'],
      ['route', 'del', 'local', `10.81.${n}.${pick(4)}`, 'dev', 'lo', 'table', table],
      ['route', 'del', 'local', `10.82.${n}.0/24`, 'dev', 'lo'],
    ][pick(5)] as string[],
    // IPv6: replace, append a leg, remove one leg, delete
    [
      [
        '-6',
        'route',
        'replace',
        `fd80:${n}::/64`,
        'table',
        table,
        'via',
        gw6[pick(2)] as string,
        ...mtu6,
      ],
      [
        '-6',
        'route',
        'append',
        `fd80:${n}::/64`,
        'table',
        table,
        'via',
        gw6[pick(2)] as string,
        ...mtu6,
      ],
      [
        '-6',
        'route',
        'replace',
        `fd80:${n}::/64`,
        'table',
        table,
        ...mtu6,
        ...leg(0, true),
        ...leg(1, true),
      ],
      ['-6', 'route', 'del', `fd80:${n}::/64`, 'table', table, 'via', gw6[pick(2)] as string],
      ['-6', 'route', 'del', `fd80:${n}::/64`, 'table', table],
    ][pick(5)] as string[],
    // a nexthop object (maybe a group) behind a route
    [
      ['route', 'replace', `10.84.${n}.0/24`, 'nhid', String(1 + pick(3))],
      ['route', 'del', `10.84.${n}.0/24`],
    ][pick(2)] as string[],
    // rules: plain ones, and some with a selector the reverse-path lookup cannot reproduce
    [
      ['rule', 'add', 'pref', String(1000 + n), 'from', `10.85.${n}.0/24`, 'table', '100'],
      ['rule', 'add', 'pref', String(2000 + n), 'iif', 'v0', 'table', '100'],
      ['rule', 'add', 'pref', String(3000 + n), 'ipproto', 'udp', 'dport', '53', 'table', '100'],
      ['rule', 'del', 'pref', String(([1000, 2000, 3000][pick(3)] as number) + n)],
    ][pick(4)] as string[],
  ];
  const cmd = cmds[pick(cmds.length)] as string[];
  try {
    ip(ns, ...cmd);
  } catch {
    /* not there, or already there */
  }
}

describe.skipIf(skip)('RouteMirror from route events equals routeFacts() of a fresh dump', () => {
  let ns: string;
  let peer: string;
  let nl: NetlinkHandle;
  let feed: RouteFeed;
  const mirror = new RouteMirror();

  beforeAll(async () => {
    ns = makeNetns('kr', { scope: 'file' });
    peer = makeNetns('krp', { scope: 'file' });
    for (const [i, d] of ['v0', 'v1'].entries()) {
      vethPair(ns, d, peer, `p${i}`);
      ip(ns, 'addr', 'add', `10.70.${i}.1/24`, 'dev', d);
      ip(ns, '-6', 'addr', 'add', `fd70:${i}::1/64`, 'dev', d, 'nodad');
    }
    ip(ns, 'nexthop', 'add', 'id', '1', 'via', '10.70.0.2', 'dev', 'v0');
    ip(ns, 'nexthop', 'add', 'id', '2', 'via', '10.70.1.2', 'dev', 'v1');
    ip(ns, 'nexthop', 'add', 'id', '3', 'group', '1/2');
    nl = NetlinkHandle.open({ netns: ns });
    feed = new RouteFeed({ nl, log: silentLogger() });
    await feed.listen({
      loaded: (_r, routes, rules) => mirror.load(routes, rules),
      route: (kind, r) => mirror.route(kind, r),
      rule: (kind, r) => mirror.rule(kind, r),
    });
  });
  afterAll(() => {
    feed?.stop();
    nl?.close();
  });

  const truth = async (): Promise<unknown> =>
    plain(routeFacts(await nl.routeList(), await nl.ruleList({ family: AF_INET })));

  for (const seed of [1, 2, 3]) {
    it(`300 random changes (seed ${seed}): the facts kept equal the dump's, with one dump`, async () => {
      const pick = rng(seed);
      for (let i = 0; i < 300; i++) {
        change(ns, pick);
        if (i % 50 === 49) {
          // now and then mid-churn too, not only at the end
          const want = await truth();
          await waitFor(() => JSON.stringify(plain(mirror.facts())) === JSON.stringify(want), {
            what: () =>
              `seed ${seed} step ${i}: ${JSON.stringify(plain(mirror.facts()))} vs ${JSON.stringify(want)}`,
          });
        }
      }
      expect(plain(mirror.facts())).toEqual(await truth());
      expect(feed.dumps).toBe(1);
      expect(feed.overflows).toBe(0);
    });
  }

  it('the churn exercised every kind of fact', async () => {
    const f = plain(routeFacts(await nl.routeList(), await nl.ruleList())) as Record<
      string,
      unknown
    >;
    // the last state holds some of each (a run that never made one would prove nothing)
    expect((f.wide as string[]).length).toBeGreaterThan(0);
    expect((f.local32 as string[]).length).toBeGreaterThan(0);
    expect((f.mpath4 as string[]).length).toBeGreaterThan(0);
    expect((f.mpath6 as string[]).length).toBeGreaterThan(0);
    expect(f.routeMtu4).toBeGreaterThan(0);
  });
});
