import { describe, expect, it } from 'vitest';
import { IpRangeIndex } from '../ipaddr/index.js';
import { route } from './testing.js';
import { RouteTracker, routeRow } from './routes.js';
import type { RouteRow } from './types.js';

function setup(ips: string[]) {
  const t = new RouteTracker();
  const heard: [RouteRow | undefined, RouteRow | undefined][] = [];
  t.setListener({ routeChanged: (b, a) => heard.push([b, a]) });
  const index = new IpRangeIndex();
  for (const ip of ips) index.add(ip);
  const affected = (b: RouteRow | undefined, a: RouteRow | undefined, selected = [2, 3]) =>
    Object.fromEntries(t.affected(b, a, index, selected));
  return { t, heard, affected };
}

describe('routes', () => {
  it('keys a route as the kernel does and skips cached clones', () => {
    const r = routeRow(route('10.0.0.0/24', [[2, '10.1.0.1']], { priority: 100 }))!;
    expect(r).toMatchObject({
      key: '4|254|10.0.0.0/24|/0|0|100',
      dst: '10.0.0.0/24',
      legs: ['2|10.1.0.1'],
      oifs: [2],
    });
    expect(routeRow(route('default', [[2, 'fe80::1']], { family: 10 }))?.dst).toBe('::/0');
    expect(routeRow(route('10.0.0.1/32', [[2]], { flags: 0x200 }))).toBeUndefined();
  });

  it('keeps the other legs when one IPv6 leg is deleted', () => {
    const { t, heard } = setup([]);
    t.apply(
      'new',
      route('2001:db8::/64', [
        [2, 'fe80::1'],
        [3, 'fe80::2'],
      ]),
    );
    t.apply('del', route('2001:db8::/64', [[2, 'fe80::1']]));
    expect(t.table.list()[0]?.legs).toEqual(['3|fe80::2']);
    t.apply('del', route('2001:db8::/64', [[3, 'fe80::2']]));
    expect(t.table.size).toBe(0);
    expect(heard).toHaveLength(3);
  });

  it('a change affects the covered IPs on the devices its legs use', () => {
    const { t, affected } = setup(['10.9.0.5', '10.9.0.6', '10.8.0.1']);
    t.apply('new', route('10.9.0.0/24', [[2, '10.1.0.1']]));
    const row = t.table.list()[0]!;
    expect(affected(undefined, row)).toEqual({ 2: ['10.9.0.5', '10.9.0.6'] });
    // Moved to another device: both devices' lookups may change.
    const moved = routeRow(route('10.9.0.0/24', [[3, '10.2.0.1']]))!;
    expect(affected(row, moved)).toEqual({
      2: ['10.9.0.5', '10.9.0.6'],
      3: ['10.9.0.5', '10.9.0.6'],
    });
    // A device that is not selected does not count; a route without a device (blackhole)
    // may matter to every device.
    expect(affected(undefined, routeRow(route('10.9.0.0/24', [[7, '10.7.0.1']]))!)).toEqual({});
    const hole = routeRow(route('10.9.0.0/24', [], { type: 6 }))!;
    expect(Object.keys(affected(undefined, hole))).toEqual(['2', '3']);
    // A TOS route never matches the lookups.
    expect(affected(undefined, routeRow(route('10.9.0.0/24', [[2]], { tos: 16 }))!)).toEqual({});
  });

  it('a more specific route through the same device hides a change of the default route', () => {
    const ips = ['10.1.0.5', '10.1.0.6', '192.0.2.9'];
    const { t, affected } = setup(ips);
    t.apply('new', route('10.1.0.0/24', [[2]]));
    t.apply(
      'new',
      route('default', [
        [2, '10.1.0.1'],
        [3, '10.2.0.1'],
      ]),
    );
    const def = t.table.list().find((r) => r.dst === '0.0.0.0/0')!;
    // On device 2 the connected /24 answers for 10.1.0.x; on device 3 the default does.
    expect(affected(undefined, def)).toEqual({ 2: ['192.0.2.9'], 3: ips });
    // Different table: no hiding.
    t.apply('new', route('default', [[2, '10.1.0.1']], { table: 100 }));
    const other = t.table.list().find((r) => r.table === 100)!;
    expect(affected(undefined, other)).toEqual({ 2: ips });
  });

  it('loads a dump as the differences', () => {
    const { t, heard } = setup([]);
    t.load([route('10.0.0.0/24', [[2]]), route('10.1.0.0/24', [[2]])]);
    heard.length = 0;
    t.load([route('10.0.0.0/24', [[2]]), route('10.2.0.0/24', [[3]])]);
    expect(heard.map(([b, a]) => `${b?.dst ?? '-'} -> ${a?.dst ?? '-'}`)).toEqual([
      '10.1.0.0/24 -> -',
      '- -> 10.2.0.0/24',
    ]);
  });
});
