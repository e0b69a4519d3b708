// Addresses and routes through NetlinkHandle, compared field by field with `ip -j`.
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  AF_INET,
  AF_INET6,
  IFA_F_NODAD,
  NetlinkError,
  NetlinkHandle,
  protocolName,
  routeTypeName,
  RT_TABLE_MAIN,
  RTM_F_CLONED,
  RTPROT_STATIC,
  scopeName,
  tableName,
  type Route,
} from '../../src/netlink/index.js';
import { ip, ipJson, makeNetns, privileged } from '../helpers/netns.js';

const { skip } = privileged();

function open(netns: string): NetlinkHandle {
  const h = NetlinkHandle.open({ netns });
  onTestFinished(() => h.close());
  return h;
}

/**
 * Takes both views until they agree (IPv6 link-local addresses and routes appear
 * asynchronously when the carrier comes up), for at most 3 s; returns the last pair.
 */
async function settled<T extends { got: unknown; want: unknown }>(
  views: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const v = await views();
    if (JSON.stringify(v.got) === JSON.stringify(v.want) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A namespace with veth v0 (10.1.0.1/24, 2001:db8:1::1/64) up, peer in a second namespace. */
async function lab(tag: string): Promise<{ ns: string; h: NetlinkHandle; v0: number }> {
  const ns = makeNetns(tag);
  const peer = makeNetns(`${tag}p`);
  const h = open(ns);
  await h.linkAdd({ name: 'v0', kind: 'veth', up: true, peer: { name: 'v1', netns: peer } });
  ip(peer, 'link', 'set', 'v1', 'up');
  const v0 = await h.ifindex('v0');
  await h.addrAdd({ ifindex: v0, address: '10.1.0.1', prefixlen: 24 });
  await h.addrAdd({ ifindex: v0, address: '2001:db8:1::1', prefixlen: 64, nodad: true });
  return { ns, h, v0 };
}

interface IpAddrInfo {
  family: string;
  local: string;
  prefixlen: number;
  scope: string;
  nodad?: boolean;
  label?: string;
}

describe.skipIf(skip)('addresses', () => {
  it('addrAdd /32 and /128 nodad; addrList agrees with ip -j addr show', async () => {
    const { ns, h, v0 } = await lab('nl-addr');
    await h.addrAdd({ ifindex: v0, address: '192.0.2.10' });
    await h.addrAdd({ ifindex: v0, address: '2001:db8:9::10', nodad: true });
    const views = async () => {
      const theirs = ipJson<{ ifindex: number; addr_info: IpAddrInfo[] }[]>(ns, 'addr', 'show');
      const ours = await h.addrList();
      const want = theirs.flatMap((l) =>
        l.addr_info.map((a) => ({
          index: l.ifindex,
          family: a.family === 'inet' ? AF_INET : AF_INET6,
          address: a.local,
          prefixlen: a.prefixlen,
          scope: a.scope,
          nodad: a.nodad === true,
          label: a.label,
        })),
      );
      const got = ours.map((a) => ({
        index: a.index,
        family: a.family,
        address: a.local ?? a.address,
        prefixlen: a.prefixlen,
        scope: scopeName(a.scope),
        nodad: (a.flags & IFA_F_NODAD) !== 0,
        label: a.label,
      }));
      const key = (x: { index: number; address?: string }) => `${x.index} ${x.address}`;
      got.sort((x, y) => key(x).localeCompare(key(y)));
      want.sort((x, y) => key(x).localeCompare(key(y)));
      return { ours, got, want };
    };
    const { ours, got, want } = await settled(views);
    expect(got).toEqual(want);
    expect(got.find((a) => a.address === '2001:db8:9::10')).toMatchObject({
      prefixlen: 128,
      nodad: true,
    });
    expect(got.find((a) => a.address === '192.0.2.10')).toMatchObject({ prefixlen: 32 });
    // filters
    expect(
      (await h.addrList({ family: AF_INET6, ifindex: v0 })).map((a) => a.address).sort(),
    ).toEqual(
      [
        '2001:db8:1::1',
        '2001:db8:9::10',
        ...ours
          .filter((a) => a.index === v0 && a.family === AF_INET6 && a.address?.startsWith('fe80'))
          .map((a) => a.address!),
      ].sort(),
    );
  });

  it('addrAdd twice is EEXIST, addrReplace is idempotent, addrDel removes', async () => {
    const { ns, h, v0 } = await lab('nl-addr2');
    const spec = { ifindex: v0, address: '198.51.100.7' };
    await h.addrAdd(spec);
    await expect(h.addrAdd(spec)).rejects.toMatchObject({ errnoName: 'EEXIST' });
    await h.addrReplace(spec);
    await h.addrDel(spec);
    expect(ip(ns, 'addr', 'show', 'dev', 'v0')).not.toContain('198.51.100.7');
    await expect(h.addrDel(spec)).rejects.toMatchObject({ errnoName: 'EADDRNOTAVAIL' });
  });
});

interface IpRoute {
  dst: string;
  type?: string;
  table?: string;
  protocol?: string;
  scope?: string;
  gateway?: string;
  dev?: string;
  prefsrc?: string;
  metric?: number;
  nexthops?: { gateway?: string; dev: string; weight: number }[];
}

/** Our route in ip -j's shape (fields ip omits by default are omitted here too). */
function asIp(r: Route, names: Map<number, string>): IpRoute {
  const max = r.family === AF_INET6 ? 128 : 32;
  const out: IpRoute = {
    dst: r.dstLen === 0 ? 'default' : r.dstLen === max ? r.dst! : `${r.dst}/${r.dstLen}`,
  };
  if (r.type !== 1) out.type = routeTypeName(r.type);
  if (r.table !== RT_TABLE_MAIN) out.table = tableName(r.table);
  if (r.protocol !== 3) out.protocol = protocolName(r.protocol);
  if (r.scope !== 0) out.scope = scopeName(r.scope);
  if (r.gateway !== undefined) out.gateway = r.gateway;
  if (r.oif !== undefined) out.dev = names.get(r.oif);
  if (r.prefsrc !== undefined) out.prefsrc = r.prefsrc;
  if (r.priority !== undefined) out.metric = r.priority;
  else if (r.family === AF_INET6) out.metric = 0;
  if (r.multipath) {
    out.nexthops = r.multipath.map((n) => ({
      ...(n.gateway === undefined ? {} : { gateway: n.gateway }),
      dev: names.get(n.ifindex)!,
      weight: n.hops + 1,
    }));
  }
  return out;
}

function pick(r: IpRoute): IpRoute {
  const { dst, type, table, protocol, scope, gateway, dev, prefsrc, metric, nexthops } = r;
  const o: IpRoute = { dst, type, table, protocol, scope, gateway, dev, prefsrc, metric };
  if (nexthops)
    o.nexthops = nexthops.map(({ gateway: g, dev: d, weight }) => ({
      ...(g ? { gateway: g } : {}),
      dev: d,
      weight,
    }));
  return JSON.parse(JSON.stringify(o)) as IpRoute;
}

describe.skipIf(skip)('routes', () => {
  it('routeAdd/Replace (gateway, device, multipath, table); routeList agrees with ip -j route show table all', async () => {
    const { ns, h, v0 } = await lab('nl-route');
    await h.routeAdd({ dst: '10.2.0.0/16', gateway: '10.1.0.254' });
    await h.routeAdd({ dst: '10.4.0.0/24', oif: v0, protocol: RTPROT_STATIC, priority: 50 });
    await h.routeAdd({
      dst: '10.3.0.0/16',
      nexthops: [
        { gateway: '10.1.0.253', oif: v0, weight: 2 },
        { gateway: '10.1.0.252', oif: v0 },
      ],
    });
    await h.routeAdd({ dst: 'default', gateway: '10.1.0.254', table: 1000 });
    await h.routeAdd({ dst: '2001:db8:2::/48', gateway: '2001:db8:1::fe' });
    await h.routeReplace({ dst: '10.2.0.0/16', gateway: '10.1.0.253' });
    const names = new Map((await h.linkList()).map((l) => [l.index, l.name!]));
    const key = (r: IpRoute) => `${r.table ?? 'main'} ${r.type ?? ''} ${r.dst} ${r.dev}`;
    const sort = (xs: IpRoute[]) => xs.sort((x, y) => key(x).localeCompare(key(y)));
    const { got: ours, want: theirs } = await settled(async () => ({
      got: sort(
        (await h.routeList())
          .filter((r) => (r.flags & RTM_F_CLONED) === 0)
          .map((r) => pick(asIp(r, names))),
      ),
      want: sort(ipJson<IpRoute[]>(ns, 'route', 'show', 'table', 'all').map(pick)),
    }));
    expect(ours).toEqual(theirs);
    expect(ours.find((r) => r.dst === '10.2.0.0/16')?.gateway).toBe('10.1.0.253');
    expect(ours.find((r) => r.dst === '10.3.0.0/16')?.nexthops).toHaveLength(2);
    expect((await h.routeList({ table: 1000 })).map((r) => r.gateway)).toEqual(['10.1.0.254']);
    await expect(h.routeAdd({ dst: '10.2.0.0/16', gateway: '10.1.0.254' })).rejects.toMatchObject({
      errnoName: 'EEXIST',
    });
    await h.routeDel({ dst: '10.2.0.0/16' });
    await h.routeDel({ dst: 'default', table: 1000 });
    expect(ip(ns, 'route', 'show', 'table', 'all')).not.toMatch(/10\.2\.0\.0|table 1000/);
    await expect(h.routeDel({ dst: '10.2.0.0/16' })).rejects.toMatchObject({ errnoName: 'ESRCH' });
  });

  it('routeGet matches ip route get (oif, fibmatch with every multipath leg, IPv6, unreachable)', async () => {
    const { ns, h, v0 } = await lab('nl-rget');
    ip(
      ns,
      'route',
      'add',
      '10.3.0.0/16',
      'nexthop',
      'via',
      '10.1.0.253',
      'weight',
      '2',
      'nexthop',
      'via',
      '10.1.0.252',
    );
    ip(ns, 'route', 'add', '2001:db8:2::/48', 'via', '2001:db8:1::fe');
    const get = (...a: string[]) => ipJson<IpRoute[]>(ns, 'route', 'get', ...a)[0]!;
    const r = await h.routeGet('10.3.0.1', { oif: v0 });
    const t = get('10.3.0.1', 'oif', 'v0');
    expect({ dst: r.dst, gateway: r.gateway, oif: r.oif, prefsrc: r.prefsrc }).toEqual({
      dst: t.dst,
      gateway: t.gateway,
      oif: v0,
      prefsrc: t.prefsrc,
    });
    const fm = await h.routeGet('10.3.0.1', { fibmatch: true });
    const tf = get('10.3.0.1', 'fibmatch');
    expect(`${fm.dst}/${fm.dstLen}`).toBe(tf.dst);
    expect(fm.multipath?.map((n) => ({ gateway: n.gateway, weight: n.hops + 1 }))).toEqual(
      tf.nexthops!.map((n) => ({ gateway: n.gateway, weight: n.weight })),
    );
    const r6 = await h.routeGet('2001:db8:2::5');
    expect(r6).toMatchObject({ gateway: get('2001:db8:2::5').gateway, oif: v0, family: AF_INET6 });
    const direct = await h.routeGet('10.1.0.77');
    expect(direct.gateway).toBeUndefined();
    expect(direct.oif).toBe(v0);
    const err = await h.routeGet('203.0.113.1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as NetlinkError).errnoName).toBe('ENETUNREACH');
  });

  it('routeGetMany answers thousands of lookups in order, errors in place', async () => {
    const { ns, h, v0 } = await lab('nl-rmany');
    ip(ns, 'route', 'add', '10.3.0.0/16', 'via', '10.1.0.253');
    const qs = Array.from({ length: 5000 }, (_, i) =>
      i % 1000 === 999
        ? { dst: `203.0.113.${i % 250}` }
        : { dst: `10.3.${(i >> 8) & 255}.${i & 255}`, oif: v0 },
    );
    const out = await h.routeGetMany(qs);
    expect(out).toHaveLength(5000);
    out.forEach((r, i) => {
      if (i % 1000 === 999) expect(r, `query ${i}`).toMatchObject({ errnoName: 'ENETUNREACH' });
      else
        expect(r, `query ${i}`).toMatchObject({ dst: qs[i]!.dst, gateway: '10.1.0.253', oif: v0 });
    });
    expect(h.stats.sendCalls).toBeLessThan(20);
  });
});
