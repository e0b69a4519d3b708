// Policy rules and the neighbor subsystem: next hops follow a rule that sends some
// destinations to another table (looked up one IP at a time while the rule is there), and
// come back when the rule goes; lookups are shared again once the rules are the defaults.
import { describe, expect, it } from 'vitest';
import { ip, privileged, waitFor } from '../helpers/netns.js';
import { buildLab, hasMarks, owned, startAgent, waitEntry, waitGone } from './lab.js';

const { skip } = privileged();

describe.skipIf(skip)('neighbor next hops under policy rules', () => {
  it('follows a rule to another table and back, with every IP of a prefix', async () => {
    const lab = buildLab('nb-rule');
    // Table 100 sends 10.9.0.0/24 via 10.1.0.3 instead of main's 10.1.0.2.
    ip(lab.r, 'route', 'add', '10.9.0.0/24', 'via', '10.1.0.3', 'table', '100');
    const n = await startAgent(lab.r);
    const ips = Array.from({ length: 200 }, (_, i) => `10.9.0.${i + 1}`);
    n.upsert('test', [...ips, '10.1.0.20']);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.2', 'ra0', hasMarks);
    expect(owned(lab.r)).toEqual(['10.1.0.2 ra0', '10.1.0.20 ra0']);
    const shared = n.counters().lookups.nexthop;
    // 201 IPs on two devices: a handful of lookups, not 402.
    expect(shared).toBeLessThan(20);
    expect(n.status({ limit: 0 }).summary.sharedLookups).toEqual({ ipv4: true, ipv6: true });

    // Only 10.9.0.128/25 goes to table 100: those IPs need 10.1.0.3, the others still 10.1.0.2.
    ip(lab.r, 'rule', 'add', 'to', '10.9.0.128/25', 'lookup', '100', 'pref', '100');
    await waitEntry(lab.r, '10.1.0.3', 'ra0', hasMarks);
    await n.settled(); // the rule's recalculation and its reconciliation are done
    expect(owned(lab.r)).toEqual(['10.1.0.2 ra0', '10.1.0.20 ra0', '10.1.0.3 ra0']);
    const st = n.status({ ip: '10.9.0.200' });
    expect(st.forwardable[0]?.devices.find((d) => d.device === 'ra0')?.nexthops).toEqual([
      expect.objectContaining({ nexthop: '10.1.0.3' }),
    ]);
    // With a rule in place every pair was looked up on its own.
    expect(n.counters().lookups.nexthop - shared).toBeGreaterThanOrEqual(ips.length);
    expect(n.status({ limit: 0 }).summary.sharedLookups).toEqual({ ipv4: false, ipv6: true });
    // The rule change is counted as a resync with its reason.
    expect(n.counters().resyncs['desired/rules']).toBeGreaterThanOrEqual(1);

    ip(lab.r, 'rule', 'del', 'pref', '100');
    await waitGone(lab.r, '10.1.0.3', 'ra0');
    await waitFor(() => owned(lab.r).join() === '10.1.0.2 ra0,10.1.0.20 ra0', {
      what: `entries back to main's, got ${owned(lab.r).join(', ')}`,
    });
    expect(n.health().level).toBe('ok');
  });
});
