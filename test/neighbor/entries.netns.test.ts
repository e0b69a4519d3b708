// The neighbor subsystem against a real router namespace: entries for every next hop with
// the three marks, resolution to REACHABLE, repair after deletion and link flaps, next hops
// that follow route changes (multipath included).
import { describe, expect, it } from 'vitest';
import { ip, privileged, waitFor } from '../helpers/netns.js';
import { buildLab, entry, hasMarks, owned, startAgent, waitEntry, waitGone } from './lab.js';

const { skip } = privileged();

const reachable = (n: { state: string[] }): boolean => n.state.includes('REACHABLE');

describe.skipIf(skip)('neighbor entries', () => {
  it('writes an entry per next hop with extern_learn, managed and proto 241, and they resolve', async () => {
    const lab = buildLab('nb-ent');
    const n = await startAgent(lab.r);
    n.upsert('test', ['10.1.0.20', '10.2.0.20', '10.9.0.5', '10.9.0.6', 'fd00:99::5', 'fd00:a::2']);
    await n.waitReady();
    // On-link IPs are their own next hop; 10.9.0.x and fd00:99::5 go via their gateways.
    for (const [dst, dev] of [
      ['10.1.0.20', 'ra0'],
      ['10.2.0.20', 'rb0'],
      ['10.1.0.2', 'ra0'],
      ['fd00:a::2', 'ra0'],
    ] as const) {
      const e = await waitEntry(lab.r, dst, dev, reachable);
      expect(hasMarks(e), `${dst} ${JSON.stringify(e)}`).toBe(true);
    }
    // One entry per next hop: 10.9.0.5 and 10.9.0.6 share 10.1.0.2; nothing for an IP on a
    // device it is not routed through (10.2.0.20 has no route via ra0, 10.1.0.20 none via rb0).
    expect(owned(lab.r)).toEqual(
      ['10.1.0.2 ra0', '10.1.0.20 ra0', '10.2.0.20 rb0', 'fd00:a::2 ra0'].sort(),
    );
    const st = n.status({ ip: '10.9.0.5' });
    expect(st.forwardable[0]?.devices.find((d) => d.device === 'ra0')?.nexthops).toEqual([
      expect.objectContaining({ nexthop: '10.1.0.2', status: 'done' }),
    ]);
    expect(n.health().level).toBe('ok');
  });

  it('puts back an entry deleted with ip neigh del, and all entries after a link flap', async () => {
    const lab = buildLab('nb-del');
    const n = await startAgent(lab.r);
    n.upsert('test', ['10.1.0.20', '10.1.0.3', '10.2.0.20']);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.20', 'ra0', reachable);
    ip(lab.r, 'neigh', 'del', '10.1.0.20', 'dev', 'ra0');
    const t0 = Date.now();
    const back = await waitEntry(lab.r, '10.1.0.20', 'ra0', hasMarks, 2000);
    expect(hasMarks(back)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(2000);
    await waitFor(() => n.status().counters.reinserts.deleted >= 1, { what: 'reinsert counted' });

    ip(lab.r, 'link', 'set', 'ra0', 'down');
    await waitGone(lab.r, '10.1.0.20', 'ra0');
    ip(lab.r, 'link', 'set', 'ra0', 'up');
    for (const dst of ['10.1.0.20', '10.1.0.3']) await waitEntry(lab.r, dst, 'ra0', reachable);
    expect(owned(lab.r)).toEqual(['10.1.0.20 ra0', '10.1.0.3 ra0', '10.2.0.20 rb0']);
  });

  it('follows a route to another gateway and removes the old next hop once unused', async () => {
    const lab = buildLab('nb-rt');
    const n = await startAgent(lab.r);
    n.upsert('test', ['10.9.0.5', '10.8.0.5']);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.2', 'ra0');
    ip(lab.r, 'route', 'replace', '10.9.0.0/24', 'via', '10.1.0.3');
    await waitEntry(lab.r, '10.1.0.3', 'ra0', hasMarks);
    await waitGone(lab.r, '10.1.0.2', 'ra0');
    expect(owned(lab.r)).toEqual(['10.1.0.3 ra0']);

    // Still referenced by another IP: stays. 10.8.0.0/24 first via 10.1.0.3 too.
    ip(lab.r, 'route', 'add', '10.8.0.0/24', 'via', '10.1.0.3');
    ip(lab.r, 'route', 'replace', '10.9.0.0/24', 'via', '10.2.0.2');
    await waitEntry(lab.r, '10.2.0.2', 'rb0', hasMarks);
    await n.settled(); // both route changes recalculated and reconciled
    expect(owned(lab.r)).toEqual(['10.1.0.3 ra0', '10.2.0.2 rb0']);

    // Multipath: one entry per leg on each selected device.
    ip(
      lab.r,
      'route',
      'replace',
      '10.8.0.0/24',
      'nexthop',
      'via',
      '10.1.0.2',
      'nexthop',
      'via',
      '10.1.0.3',
      'nexthop',
      'via',
      '10.2.0.20',
    );
    await waitFor(
      () =>
        JSON.stringify(owned(lab.r)) ===
        JSON.stringify(['10.1.0.2 ra0', '10.1.0.3 ra0', '10.2.0.2 rb0', '10.2.0.20 rb0']),
      { what: `one entry per leg, got ${owned(lab.r).join(', ')}` },
    );
    for (const [dst, dev] of [
      ['10.1.0.2', 'ra0'],
      ['10.1.0.3', 'ra0'],
      ['10.2.0.20', 'rb0'],
    ] as const) {
      expect(hasMarks(entry(lab.r, dst, dev))).toBe(true);
    }
  });
});
