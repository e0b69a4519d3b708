// Why a forwardable IP has no neighbor entry, as the JSON and the text status say it: each
// cause its own reason (a subnet broadcast address, a route through a nexthop object whose
// legs the kernel does not show, a blackhole route, no route through any selected device).
import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/status-format.js';
import { ip, privileged, sysctl } from '../helpers/netns.js';
import { buildLab, hasMarks, startAgent, waitEntry } from './lab.js';

const { skip } = privileged();

describe.skipIf(skip)('neighbor status: why an IP has no entry', () => {
  it('names broadcast, nexthop-object, blackhole and unrouted IPs apart', async () => {
    const lab = buildLab('nb-st');
    ip(lab.r, 'nexthop', 'add', 'id', '7', 'via', '10.1.0.2', 'dev', 'ra0');
    ip(lab.r, 'route', 'add', '10.50.0.0/24', 'nhid', '7');
    sysctl(lab.r, 'net.ipv4.nexthop_compat_mode', 0); // answers name the object, not its legs
    ip(lab.r, 'route', 'add', 'blackhole', '10.60.0.0/24');
    const n = await startAgent(lab.r);
    ip(lab.r, 'link', 'add', 'xo0', 'type', 'veth', 'peer', 'name', 'xo1');
    ip(lab.r, 'link', 'set', 'xo0', 'up');
    ip(lab.r, 'route', 'add', '10.70.0.0/24', 'dev', 'xo0');
    const ips = ['10.1.0.255', '10.50.0.5', '10.60.0.5', '192.0.2.77', '10.70.0.5', '10.1.0.20'];
    n.upsert('test', ips);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.20', 'ra0', hasMarks);
    const reasons = Object.fromEntries(
      n.status().forwardable.map((f) => [f.ip, f.reason ?? '(has next hops)']),
    );
    expect(reasons['10.1.0.20']).toBe('(has next hops)');
    expect(reasons['10.1.0.255']).toMatch(/broadcast route on ra0/);
    expect(reasons['10.50.0.5']).toMatch(/nexthop object 7.*nexthop_compat_mode/);
    expect(reasons['10.60.0.5']).toBe('blackhole route 10.60.0.0/24');
    expect(reasons['192.0.2.77']).toBe('no route');
    // A route that leaves through a device fibkeeper does not manage.
    expect(reasons['10.70.0.5']).toBe('not routed via a selected device');
    expect(new Set(Object.values(reasons)).size).toBe(6);
    // The text status shows the same reasons, one per IP.
    const text = formatStatus({ neighbor: n.status() });
    for (const x of ips.slice(0, 5)) {
      const line = text.split('\n').find((l) => l.trimStart().startsWith(`${x} `));
      expect(line, x).toContain(reasons[x]);
    }
  });
});
