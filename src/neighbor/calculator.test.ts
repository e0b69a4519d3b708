import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { NeighborMetrics } from './metrics.js';
import { NetlinkError, type Route } from '../netlink/index.js';
import { Table } from '../statedb/index.js';
import { Calculator } from './calculator.js';
import { DeviceTracker } from './devices.js';
import { FakeClock } from '../sched/testing.js';
import { address, link, route } from './testing.js';
import { ForwardableIPs } from './forwardable.js';
import { RouteTracker } from './routes.js';
import type { DesiredNeighbor } from './types.js';

/**
 * A FIB of a few routes in table main, answered like `ip route get IP oif DEV fibmatch`:
 * the longest prefix with a leg on DEV, else ENETUNREACH.
 */
class FakeFib {
  routes: Route[] = [];
  lookups = 0;
  failing = new Set<string>();

  answer(ifindex: number, ip: string): Route | Error {
    this.lookups++;
    if (this.failing.has(ip)) return new NetlinkError('routeGet', 16);
    const v = ip.split('.').reduce((a, b) => a * 256 + Number(b), 0);
    let best: Route | undefined;
    for (const r of this.routes) {
      const base = (r.dst ?? '0.0.0.0').split('.').reduce((a, b) => a * 256 + Number(b), 0);
      const size = 2 ** (32 - r.dstLen);
      if (v < base || v >= base + size) continue;
      const legs = r.multipath?.map((l) => l.ifindex) ?? [r.oif];
      if (!legs.includes(ifindex)) continue;
      if (best === undefined || r.dstLen > best.dstLen) best = r;
    }
    return best ?? new NetlinkError('routeGet', 101);
  }
}

async function setup(opts: { forwardableInit?: boolean; share?: boolean } = {}) {
  const clock = new FakeClock();
  const fib = new FakeFib();
  const devices = new DeviceTracker({ devices: ['eth*'], holderName: 'x' });
  const routes = new RouteTracker();
  const forwardable = new ForwardableIPs({ nodeAddresses: () => devices.nodeAddresses() });
  const loaded =
    opts.forwardableInit === false ? forwardable.registerInitializer('api') : undefined;
  const desired = new Table<DesiredNeighbor>({ name: 'desired', primaryKey: (d) => d.key });
  const calc = new Calculator({
    forwardable,
    devices,
    routes,
    desired,
    lookup: async (ifindex, ips) => ips.map((ip) => fib.answer(ifindex, ip)),
    groupOf: opts.share ? (ip) => routes.prefixes.groupOf(ip) : undefined,
    clock,
    log: silentLogger(),
    metrics: new NeighborMetrics(),
    chunk: 1000,
    retryMinMs: 100,
    retryMaxMs: 1000,
  });
  forwardable.setListener({ changed: (a, r) => calc.forwardableChanged(a, r) });
  devices.setListener({
    selectionChanged: (a, r) => calc.selectionChanged(a, r),
    nodeAddressChanged: (ip, p) => calc.nodeAddressChanged(ip, p),
    routesMayHaveChanged: () => undefined,
  });
  routes.setListener({ routeChanged: (b, a) => calc.routeChanged(b, a) });
  const addRoute = (r: Route) => {
    fib.routes.push(r);
    routes.apply('new', r);
  };
  const replaceRoute = (old: Route, r: Route) => {
    fib.routes = fib.routes.filter((x) => x !== old);
    fib.routes.push(r);
    routes.apply('new', r);
  };
  devices.load(
    [link(2, 'eth0'), link(3, 'eth1')],
    [address(2, '10.1.0.1'), address(3, '10.2.0.1')],
  );
  const connected = [route('10.1.0.0/24', [[2]]), route('10.2.0.0/24', [[3]])];
  fib.routes.push(...connected);
  routes.load(connected);
  calc.start();
  calc.inputInitialized();
  const rows = () =>
    desired
      .list()
      .map((d) => `${d.key} <- ${[...d.refs].sort().join(',')}`)
      .sort();
  const settle = () => calc.waitIdle();
  return {
    clock,
    fib,
    devices,
    routes,
    forwardable,
    desired,
    calc,
    rows,
    settle,
    addRoute,
    replaceRoute,
    loaded,
  };
}

describe('calculator', () => {
  it('a full resync reads the table chunk by chunk, not a copy of it made at once', async () => {
    const s = await setup();
    const ips = Array.from({ length: 2500 }, (_, i) => `10.50.${i >> 8}.${i & 255}`);
    s.forwardable.upsert('a', [...ips, '10.1.0.5']);
    await s.settle();
    const table = s.forwardable.ips.bind(s.forwardable);
    let read = 0;
    s.forwardable.ips = () => {
      const it = table();
      const counted: IterableIterator<string> = {
        next: () => {
          read++;
          return it.next();
        },
        [Symbol.iterator]: () => counted,
      };
      return counted;
    };
    const before = s.fib.lookups;
    s.calc.fullResync();
    // Nothing read yet (a million IPs copied at once made ~30 MB of garbage), all queued.
    expect(read).toBe(0);
    expect(s.calc.pending).toBe(2 * 2501);
    // Meanwhile one IP is removed and one added.
    s.forwardable.delete('a', ['10.50.9.196']);
    s.forwardable.upsert('a', ['10.1.0.6']);
    await s.settle();
    expect(read).toBeGreaterThanOrEqual(2 * 2501);
    expect(s.fib.lookups - before).toBeGreaterThanOrEqual(2 * 2500 + 2);
    expect(s.calc.pending).toBe(0);
    expect(s.rows()).toEqual(['2|10.1.0.5 <- 10.1.0.5', '2|10.1.0.6 <- 10.1.0.6']);
  });

  it('computes one entry per next hop with references back to the forwardable IPs', async () => {
    const s = await setup();
    const gw = route('10.9.0.0/24', [[2, '10.1.0.254']]);
    s.addRoute(gw);
    s.forwardable.upsert('a', ['10.1.0.5', '10.9.0.5', '10.9.0.6', '10.2.0.7', '192.0.2.1']);
    await s.settle();
    expect(s.rows()).toEqual([
      '2|10.1.0.254 <- 10.9.0.5,10.9.0.6',
      '2|10.1.0.5 <- 10.1.0.5',
      '3|10.2.0.7 <- 10.2.0.7',
    ]);
    expect(s.desired.initialized).toBe(true);
    // Released IPs release their references; the shared entry goes with the last one.
    s.forwardable.delete('a', ['10.9.0.5']);
    expect(s.rows()).toContain('2|10.1.0.254 <- 10.9.0.6');
    s.forwardable.delete('a', ['10.9.0.6']);
    expect(s.rows()).not.toContain('2|10.1.0.254 <- 10.9.0.6');
    expect(s.rows()).toHaveLength(2);
  });

  it('follows a route to another gateway, and multipath legs on each device', async () => {
    const s = await setup();
    const gw = route('10.9.0.0/24', [[2, '10.1.0.254']]);
    s.addRoute(gw);
    s.forwardable.upsert('a', ['10.9.0.5']);
    await s.settle();
    const mp = route('10.9.0.0/24', [
      [2, '10.1.0.253'],
      [2, '10.1.0.252'],
      [3, '10.2.0.254'],
    ]);
    s.replaceRoute(gw, mp);
    await s.settle();
    expect(s.rows()).toEqual([
      '2|10.1.0.252 <- 10.9.0.5',
      '2|10.1.0.253 <- 10.9.0.5',
      '3|10.2.0.254 <- 10.9.0.5',
    ]);
  });

  it('a route change looks up only what it can affect: 1 lookup among 100,000 IPs', async () => {
    const s = await setup();
    const ips = Array.from(
      { length: 100_000 },
      (_, i) => `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
    );
    s.addRoute(route('10.100.0.0/14', [[2]]));
    s.forwardable.upsert('bulk', [...ips, '10.9.0.5']);
    await s.settle();
    expect(s.desired.size).toBe(100_000); // 10.9.0.5 has no route yet
    s.fib.lookups = 0;
    s.addRoute(route('10.9.0.0/24', [[2, '10.1.0.254']]));
    await s.settle();
    expect(s.fib.lookups).toBe(1);
    expect(s.rows()).toContain('2|10.1.0.254 <- 10.9.0.5');
    // A default route through eth0: on eth0 the /14 and the /24 answer for every forwardable
    // IP whatever the default does, and eth1 is not among its legs: no lookup at all.
    s.fib.lookups = 0;
    s.addRoute(route('default', [[2, '10.1.0.1']]));
    await s.settle();
    expect(s.fib.lookups).toBe(0);
    expect(s.desired.size).toBe(100_001);
  });

  it('keeps the last answer when a lookup fails, and retries with backoff', async () => {
    const s = await setup();
    s.forwardable.upsert('a', ['10.1.0.5']);
    await s.settle();
    s.fib.failing.add('10.1.0.5');
    s.addRoute(route('10.1.0.0/25', [[2, '10.1.0.254']]));
    await s.settle();
    expect(s.rows()).toEqual(['2|10.1.0.5 <- 10.1.0.5']);
    expect(s.calc.lookupError(2, '10.1.0.5')).toMatch(/EBUSY/);
    s.fib.failing.clear();
    s.clock.advance(100);
    await new Promise((r) => setImmediate(r)); // the retry's pass starts
    await s.settle();
    expect(s.rows()).toEqual(['2|10.1.0.254 <- 10.1.0.5']);
    expect(s.calc.failingLookups).toBe(0);
  });

  it('drops the entries of a device that leaves, and computes those of one that comes', async () => {
    const s = await setup();
    s.forwardable.upsert('a', ['10.1.0.5', '10.2.0.5']);
    await s.settle();
    s.devices.applyLink('new', link(2, 'eth0', { flags: 0 }));
    expect(s.rows()).toEqual(['3|10.2.0.5 <- 10.2.0.5']);
    s.devices.applyLink('new', link(2, 'eth0'));
    await s.settle();
    expect(s.rows()).toEqual(['2|10.1.0.5 <- 10.1.0.5', '3|10.2.0.5 <- 10.2.0.5']);
  });

  it('stops forwarding to an IP that becomes a node address, and resumes when it leaves', async () => {
    const s = await setup();
    s.forwardable.upsert('a', ['10.1.0.5']);
    await s.settle();
    s.devices.applyAddress('new', address(3, '10.1.0.5'));
    expect(s.rows()).toEqual([]);
    s.devices.applyAddress('del', address(3, '10.1.0.5'));
    await s.settle();
    expect(s.rows()).toEqual(['2|10.1.0.5 <- 10.1.0.5']);
  });

  it('is initialized only once the forwardable IPs are', async () => {
    const s = await setup({ forwardableInit: false });
    s.forwardable.upsert('a', ['10.1.0.5']);
    await s.settle();
    expect(s.desired.initialized).toBe(false);
    s.loaded?.();
    s.calc.inputInitialized();
    await s.settle();
    expect(s.desired.initialized).toBe(true);
  });

  it('shares lookups among the IPs of one route prefix, with the same result as one each', async () => {
    const ips = Array.from(
      { length: 20_000 },
      (_, i) => `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
    );
    const extra = ['10.9.0.5', '10.9.0.6', '10.1.0.7', '10.2.0.8', '192.0.2.1'];
    const run = async (share: boolean) => {
      const s = await setup({ share });
      s.addRoute(route('10.100.0.0/14', [[2]]));
      s.addRoute(
        route('10.9.0.0/24', [
          [2, '10.1.0.254'],
          [3, '10.2.0.254'],
        ]),
      );
      s.addRoute(route('default', [[3, '10.2.0.1']]));
      s.fib.lookups = 0;
      s.forwardable.upsert('bulk', [...ips, ...extra]);
      await s.settle();
      const viaDefault = s.desired.get('3|10.2.0.1')?.refs.size;
      return { rows: s.rows(), lookups: s.fib.lookups, shared: s.calc.shared, viaDefault };
    };
    const one = await run(false);
    const shared = await run(true);
    expect(shared.rows).toEqual(one.rows);
    expect(one.lookups).toBe(2 * (ips.length + extra.length));
    // Per device, per chunk of 1,000: one lookup for each prefix present in the chunk.
    expect(shared.lookups).toBeLessThan(2 * (20 + 5));
    expect(shared.shared).toBe(2 * (ips.length + extra.length) - shared.lookups);
    // On eth1 the /14 has no leg: IPv4 falls back to the default route via 10.2.0.1.
    expect(one.viaDefault).toBe(ips.length + 2); // and 10.1.0.7, 192.0.2.1
    expect(shared.viaDefault).toBe(one.viaDefault);
  });
});
