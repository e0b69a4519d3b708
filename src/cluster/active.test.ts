import { afterEach, describe, expect, it } from 'vitest';
import { decodeDesired } from './keys.js';
import { memberLab } from './testing.js';
import type { ClusterOptions } from './options.js';

const AA = '192.0.2.50';
let running: { stop(): void } | undefined;
afterEach(() => {
  running?.stop();
  running = undefined;
});

function lab(names: string[], opts: Partial<ClusterOptions> = {}) {
  const l = memberLab(names, { bgp: true, withdrawLinger: 1000, ...opts });
  running = l;
  return l;
}

const ownerKeys = async (l: ReturnType<typeof lab>) =>
  (await l.etcd.client().getPrefix('/fibkeeper/owners/')).kvs.map((kv) => kv.key);

describe('active-active cluster IPs', () => {
  it('every eligible member that announces over BGP holds the IP at once; no owner key', async () => {
    const l = lab(['a', 'b', 'c']);
    l.add('d', { bgp: false }); // no BGP: it cannot announce, so it does not hold
    l.add('e', { labels: { zone: 'x' } });
    await l.admin.add(AA, { mode: 'active-active', labels: {} });
    await l.admin.add('192.0.2.51', { mode: 'active-active', labels: { zone: 'x' } });
    for (const n of l.nodes) await n.member.start();
    await l.clock.advanceAsync(300);
    expect(l.holders(AA)).toEqual(['a', 'b', 'c', 'e']);
    expect(l.holders('192.0.2.51')).toEqual(['e']);
    expect(await ownerKeys(l)).toEqual([]);
    expect(l.nodes[0]!.member.isActiveActive(AA)).toBe(true);
    const st = l.nodes[0]!.member.status();
    expect(st.ips.find((i) => i.ip === AA)).toMatchObject({
      mode: 'active-active',
      announcers: ['a', 'b', 'c', 'e'],
      owner: undefined,
      placement: undefined,
    });
    expect(st.members.find((m) => m.name === 'd')?.bgp).toBe(false);
  });

  it('leaves single-holder placement as it was: 3 single IPs over 3 members, one each', async () => {
    const l = lab(['a', 'b', 'c']);
    for (const ip of ['192.0.2.10', '192.0.2.11', '192.0.2.12']) await l.admin.add(ip);
    for (let i = 0; i < 5; i++) await l.admin.add(`192.0.2.${60 + i}`, { mode: 'active-active' });
    for (const n of l.nodes) await n.member.start();
    await l.clock.advanceAsync(300);
    for (const n of l.nodes) {
      const single = l.held(n).filter((ip) => !n.member.isActiveActive(ip));
      expect(single, n.name).toHaveLength(1);
      expect(l.held(n).length, n.name).toBe(6);
    }
    expect(await ownerKeys(l)).toHaveLength(3);
  });

  it('a drained member withdraws first and keeps the address for withdrawLinger; the others never let go', async () => {
    const l = lab(['a', 'b', 'c']);
    await l.admin.add(AA, { mode: 'active-active' });
    for (const n of l.nodes) await n.member.start();
    await l.clock.advanceAsync(300);
    expect(l.holders(AA)).toEqual(['a', 'b', 'c']);
    const [a, b, c] = l.nodes as [(typeof l.nodes)[0], (typeof l.nodes)[0], (typeof l.nodes)[0]];
    const before = [a.sets.length, b.sets.length];
    await l.admin.cordon('c');
    await l.clock.advanceAsync(100);
    // the route goes now, the address stays
    expect(c.withdrawn).toEqual([[AA]]);
    expect(c.member.withdrawing(AA)).toBe(true);
    expect(l.holders(AA)).toEqual(['a', 'b', 'c']);
    await l.clock.advanceAsync(850);
    expect(l.held(c)).toEqual([AA]);
    await l.clock.advanceAsync(100);
    expect(l.held(c)).toEqual([]);
    expect(c.member.withdrawing(AA)).toBe(false);
    expect(l.holders(AA)).toEqual(['a', 'b']);
    // a and b: no set without the IP (only deadline moves)
    for (const [k, n] of [a, b].entries())
      for (const s of n.sets.slice(before[k])) expect(s.ips, n.name).toEqual([AA]);
    expect(a.withdrawn).toEqual([]);
    // uncordoned: it holds again, at once
    await l.admin.uncordon('c');
    await l.clock.advanceAsync(100);
    expect(l.holders(AA)).toEqual(['a', 'b', 'c']);
  });

  it('a deleted IP lingers too; with withdrawLinger 0 it goes at once', async () => {
    for (const linger of [1000, 0]) {
      const l = lab(['a'], { withdrawLinger: linger });
      await l.admin.add(AA, { mode: 'active-active' });
      await l.nodes[0]!.member.start();
      await l.clock.advanceAsync(300);
      expect(l.holders(AA)).toEqual(['a']);
      await l.admin.del(AA);
      await l.clock.advanceAsync(100);
      expect(l.holders(AA), `linger ${linger}`).toEqual(linger > 0 ? ['a'] : []);
      await l.clock.advanceAsync(1000);
      expect(l.holders(AA)).toEqual([]);
      l.stop();
    }
  });

  it('a member that loses its lease drops it at once, no linger', async () => {
    const l = lab(['a']);
    await l.admin.add(AA, { mode: 'active-active' });
    const [a] = l.nodes;
    await a!.member.start();
    await l.clock.advanceAsync(300);
    expect(l.holders(AA)).toEqual(['a']);
    a!.store.setPartitioned(true);
    await l.clock.advanceAsync(10_000);
    expect(l.held(a!)).toEqual([]);
    expect(a!.withdrawn).toEqual([]);
  });

  it('a single-holder IP made active-active: its owner key goes, every member holds it', async () => {
    const l = lab(['a', 'b']);
    await l.admin.add(AA);
    for (const n of l.nodes) await n.member.start();
    await l.clock.advanceAsync(300);
    expect(l.holders(AA)).toHaveLength(1);
    await l.admin.add(AA, { mode: 'active-active' });
    await l.clock.advanceAsync(300);
    expect(l.holders(AA)).toEqual(['a', 'b']);
    expect(await ownerKeys(l)).toEqual([]);
  });

  it('a desired value with an unknown mode is refused (reported), not trusted', () => {
    expect(decodeDesired(AA, '{"mode":"all"}')).toBeInstanceOf(Error);
    expect(decodeDesired(AA, '{"mode":"active-active"}')).toEqual({
      ip: AA,
      eligible: { nodes: [], labels: {}, mode: 'active-active' },
    });
  });
});
