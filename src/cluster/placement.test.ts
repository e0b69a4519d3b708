import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { place, weight, type PlacementIp, type PlacementMember } from './placement.js';

const member = (name: string, labels: Record<string, string> = {}): PlacementMember => ({
  name,
  labels,
});
const ipsOf = (n: number, base = 0): PlacementIp[] =>
  Array.from({ length: n }, (_, i) => ({ ip: `192.0.2.${base + i}` }));

function loads(p: Map<string, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const node of p.values()) out.set(node, (out.get(node) ?? 0) + 1);
  return out;
}

function moved(a: Map<string, string>, b: Map<string, string>): number {
  let n = 0;
  for (const [ip, node] of a) if (b.get(ip) !== node) n++;
  return n;
}

const arbMembers = fc
  .uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/), { minLength: 2, maxLength: 8 })
  .map((names) => names.map((n) => member(n)));
const arbIps = fc
  .uniqueArray(fc.integer({ min: 1, max: 65_000 }), { minLength: 1, maxLength: 200 })
  .map((xs) => xs.map((x) => ({ ip: `10.${x >> 8}.${x & 255}.1` })));

describe('placement (bounded-load rendezvous hashing)', () => {
  it('30 IPs over 3 nodes: 10 each', () => {
    const p = place(ipsOf(30, 10), [member('node-a'), member('node-b'), member('node-c')]);
    expect([...loads(p).values()]).toEqual([10, 10, 10]);
  });

  it('is deterministic and independent of the order of its inputs', () => {
    fc.assert(
      fc.property(arbIps, arbMembers, fc.integer(), (ips, members, seed) => {
        const shuffle = <T>(xs: T[]): T[] =>
          xs
            .map((x, i) => ({ x, k: weight(String(i), String(seed)) }))
            .sort((a, b) => a.k - b.k)
            .map((e) => e.x);
        const a = place(ips, members);
        const b = place(shuffle([...ips]), shuffle([...members]));
        expect(new Map([...b].sort())).toEqual(new Map([...a].sort()));
      }),
    );
  });

  it('balances: loads differ by at most one when every IP may go anywhere', () => {
    fc.assert(
      fc.property(arbIps, arbMembers, (ips, members) => {
        const p = place(ips, members);
        expect(p.size).toBe(ips.length);
        const l = members.map((m) => loads(p).get(m.name) ?? 0);
        expect(Math.max(...l) - Math.min(...l)).toBeLessThanOrEqual(1);
      }),
    );
  });

  // How many IPs move is a statistical property of the hashing, not a bound: in 200,000
  // random cases (2-8 members, 1-200 IPs) the IPs moved beyond the leaver's own were 0 in
  // a quarter of the cases, at most 6 in 95%, and 16 at worst (200 IPs over 5 members).
  // So the sample is fixed (seed) and the test checks the distribution over it.
  it('moves few IPs when a member leaves or joins: every IP of a leaver, few others', () => {
    let movedTotal = 0;
    let neededTotal = 0;
    const extras: number[] = [];
    fc.assert(
      fc.property(arbIps, arbMembers, fc.nat(), (ips, members, k) => {
        const before = place(ips, members);
        const gone = members[k % members.length]!;
        const after = place(
          ips,
          members.filter((m) => m !== gone),
        );
        const needed = [...before.values()].filter((n) => n === gone.name).length;
        for (const [ip, node] of before)
          if (node === gone.name) expect(after.get(ip)).not.toBe(gone.name);
        const m = moved(before, after);
        expect(m).toBeGreaterThanOrEqual(needed);
        extras.push(m - needed);
        movedTotal += m;
        neededTotal += needed;
        // Joining is leaving backwards.
        const back = place(ips, members);
        expect(moved(after, back)).toBe(m);
      }),
      { numRuns: 1000, seed: 20261201 },
    );
    // On average close to the minimum (plain rendezvous hashing: exactly the minimum).
    expect(movedTotal / neededTotal).toBeLessThan(1.35);
    extras.sort((a, b) => a - b);
    expect(extras[Math.floor(extras.length * 0.95)]).toBeLessThanOrEqual(8);
  });

  it('keeps an IP on its member while membership does not change (stability)', () => {
    const members = [member('a'), member('b'), member('c')];
    const ips = ipsOf(50);
    const first = place(ips, members);
    for (let i = 0; i < 5; i++) expect(place(ips, members)).toEqual(first);
    // Adding an IP moves at most one other IP (one member's bound grows by one at most).
    const more = place([...ips, { ip: '198.51.100.1' }], members);
    expect(moved(first, more)).toBeLessThanOrEqual(2);
  });

  it('respects eligibility by name and by label; unplaceable IPs are absent', () => {
    const members = [
      member('a', { zone: 'x' }),
      member('b', { zone: 'y' }),
      member('c', { zone: 'y' }),
    ];
    const ips: PlacementIp[] = [
      ...ipsOf(20).map((p) => ({ ...p, eligible: { labels: { zone: 'y' } } })),
      { ip: '198.51.100.7', eligible: { nodes: ['a'] } },
      { ip: '198.51.100.8', eligible: { nodes: ['nobody'] } },
      { ip: '198.51.100.9', eligible: { nodes: ['a', 'b'], labels: { zone: 'y' } } },
    ];
    const p = place(ips, members);
    for (let i = 0; i < 20; i++) expect(['b', 'c']).toContain(p.get(`192.0.2.${i}`));
    expect(p.get('198.51.100.7')).toBe('a');
    expect(p.has('198.51.100.8')).toBe(false);
    expect(p.get('198.51.100.9')).toBe('b');
  });

  it('weights are spread evenly (each member ranks first for ~1/n of the IPs)', () => {
    const names = ['n1', 'n2', 'n3', 'n4'];
    const first = new Map<string, number>();
    for (let i = 0; i < 8000; i++) {
      const ip = `10.1.${i >> 8}.${i & 255}`;
      const top = names.reduce((best, n) => (weight(ip, n) > weight(ip, best) ? n : best));
      first.set(top, (first.get(top) ?? 0) + 1);
    }
    for (const n of names) expect(Math.abs((first.get(n) ?? 0) - 2000)).toBeLessThan(200);
  });
});
