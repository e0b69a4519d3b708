import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  NTF_EXT_LEARNED,
  NTF_EXT_MANAGED,
  NTF_PROXY,
  NUD_DELAY,
  NUD_FAILED,
  NUD_INCOMPLETE,
  NUD_PERMANENT,
  NUD_REACHABLE,
  NUD_STALE,
  nudStateNames,
} from '../netlink/index.js';
import { fieldsOf, neigh } from './testing.js';
import { isForeign, ObservedNeighbors, observedRow, reactionTo } from './observed.js';
import type { ObservedNeighbor } from './types.js';

const P = 241;
const ours = (state: number, managed = true): ObservedNeighbor =>
  observedRow(
    neigh(2, '10.0.0.1', {
      state,
      flags: NTF_EXT_LEARNED,
      flagsExt: managed ? NTF_EXT_MANAGED : 0,
      protocol: P,
    }),
  )!;

describe('observed neighbors', () => {
  it("tells fibkeeper's entries from an operator's and the kernel's own", () => {
    const row = (over: Parameters<typeof neigh>[2]) => observedRow(neigh(2, '10.0.0.1', over))!;
    expect(isForeign(ours(NUD_REACHABLE), P)).toBe(false);
    expect(isForeign(row({ state: NUD_PERMANENT }), P)).toBe(true);
    expect(isForeign(row({ state: NUD_REACHABLE, flags: NTF_EXT_LEARNED }), P)).toBe(true);
    expect(isForeign(row({ state: NUD_REACHABLE, protocol: 186 }), P)).toBe(true);
    expect(isForeign(row({ state: NUD_REACHABLE }), P)).toBe(false); // learned by the kernel
    expect(observedRow(neigh(2, '10.0.0.1', { flags: NTF_PROXY }))).toBeUndefined();
    expect(observedRow(neigh(2, '10.0.0.1', { family: 7 }))).toBeUndefined();
  });

  it('reacts: gone or stripped → deleted; FAILED → only without managed; STALE → refresh on legacy', () => {
    expect(reactionTo(undefined, 'managed', P)).toBe('deleted');
    expect(reactionTo(ours(NUD_FAILED), 'managed', P)).toBe('none');
    expect(reactionTo(ours(NUD_FAILED, false), 'legacy', P)).toBe('failed');
    expect(reactionTo(ours(NUD_STALE), 'managed', P)).toBe('healthy');
    expect(reactionTo(ours(NUD_STALE, false), 'legacy', P)).toBe('stale');
    expect(reactionTo(ours(NUD_REACHABLE), 'managed', P)).toBe('healthy');
    expect(reactionTo(ours(NUD_DELAY, false), 'legacy', P)).toBe('healthy');
    expect(reactionTo(ours(NUD_INCOMPLETE), 'managed', P)).toBe('none');
    // `ip neigh del` first leaves the entry FAILED without its flags: put it back.
    const stripped = observedRow(neigh(2, '10.0.0.1', { state: NUD_FAILED, protocol: P }))!;
    expect(reactionTo(stripped, 'managed', P)).toBe('deleted');
    // A managed entry that lost the managed flag, or a kernel-learned one in its place.
    expect(reactionTo(ours(NUD_REACHABLE, false), 'managed', P)).toBe('deleted');
    expect(
      reactionTo(observedRow(neigh(2, '10.0.0.1', { state: NUD_REACHABLE }))!, 'managed', P),
    ).toBe('deleted');
    // Someone else's entry: left alone.
    const theirs = observedRow(neigh(2, '10.0.0.1', { state: NUD_PERMANENT }))!;
    expect(reactionTo(theirs, 'managed', P)).toBe('none');
  });

  it('applies events and dumps as changes, and counts its own entries by state', async () => {
    const o = new ObservedNeighbors();
    expect(o.initialized).toBe(false);
    const init = o.waitInitialized();
    expect(
      o.load([neigh(2, '10.0.0.1', { state: NUD_REACHABLE, protocol: P, flags: NTF_EXT_LEARNED })]),
    ).toHaveLength(1);
    o.markInitialized();
    await init;
    expect(
      o.apply(
        'new',
        neigh(2, '10.0.0.1', { state: NUD_REACHABLE, protocol: P, flags: NTF_EXT_LEARNED }),
      ),
    ).toBeUndefined();
    expect(
      o.apply(
        'new',
        neigh(2, '10.0.0.2', { state: NUD_STALE, protocol: P, flags: NTF_EXT_LEARNED }),
      ),
    ).toMatchObject({ state: NUD_STALE, protocol: P });
    expect(o.apply('new', neigh(3, '10.0.0.3', { state: NUD_PERMANENT }))).toBeDefined();
    expect(o.size).toBe(3);
    const census = o.census(() => true);
    expect(Object.fromEntries(census.byState)).toEqual({ reachable: 1, stale: 1 });
    expect(census.foreignWanted).toBe(1); // the PERMANENT one
    expect(o.census(() => false).foreignWanted).toBe(0);
    const c = o.load([
      neigh(2, '10.0.0.2', { state: NUD_REACHABLE, protocol: P, flags: NTF_EXT_LEARNED }),
    ]);
    const now = (x: { ifindex: number; ip: string }) => (o.find(x.ifindex, x.ip) ? 'new' : 'gone');
    expect(c.map((x) => `${x.ifindex}|${x.ip} ${now(x)}`).sort()).toEqual([
      '2|10.0.0.1 gone',
      '2|10.0.0.2 new',
      '3|10.0.0.3 gone',
    ]);
    expect(o.size).toBe(1);
    expect(Object.fromEntries(o.census(() => true).byState)).toEqual({ reachable: 1 });
    expect(o.census(() => true).foreignWanted).toBe(0); // the PERMANENT one went
    expect(o.apply('del', neigh(2, '10.0.0.2'))).toBeNull();
    expect(o.census(() => true).byState.size).toBe(0);
    expect(o.apply('del', neigh(2, '10.0.0.2'))).toBeUndefined();
    expect(o.size).toBe(0);
  });

  it("tells how long each of fibkeeper's entries has been unresolved since its first FAILED", () => {
    let t = 1000;
    const o = new ObservedNeighbors(P, undefined, () => t);
    const mine = (ip: string, state: number, ifindex = 2) =>
      neigh(ifindex, ip, { state, protocol: P, flags: NTF_EXT_LEARNED, flagsExt: NTF_EXT_MANAGED });
    const all = () => true;
    const list = (since = t) =>
      o.unresolvedSince(since, all).map((u) => `${u.ifindex}|${u.ip} ${u.since}`);
    // Resolving (NONE, INCOMPLETE) is no failure: a million new entries start that way.
    for (let i = 0; i < 1000; i++)
      o.apply('new', mine(`10.1.${i >> 8}.${i & 255}`, NUD_INCOMPLETE));
    o.apply('new', mine('10.0.0.9', 0));
    expect(list()).toEqual([]);
    // FAILED starts an episode; INCOMPLETE while the kernel retries (managed) goes on with it.
    o.apply('new', mine('10.0.0.1', NUD_FAILED));
    o.apply('new', mine('fd00::1', NUD_FAILED, 3));
    t = 2000;
    o.apply('new', mine('10.0.0.1', NUD_INCOMPLETE));
    o.apply('new', mine('10.0.0.2', NUD_FAILED));
    t = 3000;
    o.apply('new', mine('10.0.0.1', NUD_FAILED));
    expect(list()).toEqual(['2|10.0.0.1 1000', '3|fd00::1 1000', '2|10.0.0.2 2000']);
    expect(list(1500)).toEqual(['2|10.0.0.1 1000', '3|fd00::1 1000']);
    expect(o.unresolvedSince(t, (ifindex) => ifindex === 3).map((u) => u.ip)).toEqual(['fd00::1']);
    expect(o.unresolvedSince(t, all)[0]).toMatchObject({ state: NUD_FAILED });
    // Resolved, deleted, or no longer fibkeeper's (an operator's PERMANENT): over.
    o.apply('new', mine('10.0.0.1', NUD_REACHABLE));
    o.apply('del', neigh(3, 'fd00::1'));
    o.apply('new', neigh(2, '10.0.0.2', { state: NUD_PERMANENT }));
    expect(list()).toEqual([]);
    // A new episode starts at its own first FAILED; a dump that no longer has it ends it.
    t = 5000;
    o.apply('new', mine('10.0.0.1', NUD_FAILED));
    expect(list()).toEqual(['2|10.0.0.1 5000']);
    o.load([mine('10.0.0.5', NUD_REACHABLE)]);
    expect(list()).toEqual([]);
  });

  it('keeps every field of an entry, packed: state, flags, managed, protocol, lladdr', () => {
    const o = new ObservedNeighbors();
    const full = neigh(4, '2001:db8::7', {
      state: NUD_DELAY,
      flags: NTF_EXT_LEARNED,
      flagsExt: NTF_EXT_MANAGED,
      protocol: 0,
      lladdr: 'AA:bb:0c:dd:ee:f1',
    });
    o.apply('new', full);
    expect(o.get('4|2001:db8::7')).toEqual({
      ifindex: 4,
      ip: '2001:db8::7',
      family: 6,
      state: NUD_DELAY,
      flags: NTF_EXT_LEARNED,
      flagsExt: NTF_EXT_MANAGED,
      protocol: 0,
      lladdr: 'aa:bb:0c:dd:ee:f1',
    });
    // Any other link-layer address is kept as text; no protocol stays undefined.
    o.apply('new', neigh(4, '2001:db8::7', { state: NUD_PERMANENT, lladdr: '0a:0b' }));
    expect(o.find(4, '2001:db8::7')).toMatchObject({
      state: NUD_PERMANENT,
      protocol: undefined,
      lladdr: '0a:0b',
    });
    // The same message twice is no change.
    expect(
      o.apply('new', neigh(4, '2001:db8::7', { state: NUD_PERMANENT, lladdr: '0a:0b' })),
    ).toBeUndefined();
    expect([...o.values()]).toHaveLength(1);
  });

  it('counts FAILED reported again as a change: it ends a new resolution attempt', () => {
    const o = new ObservedNeighbors();
    const failed = () =>
      neigh(2, '10.0.0.9', { state: NUD_FAILED, flags: NTF_EXT_LEARNED, protocol: P });
    expect(o.apply('new', failed())).toMatchObject({ state: NUD_FAILED });
    // The kernel does not report FAILED → INCOMPLETE: the next FAILED looks the same.
    expect(o.apply('new', failed())).toMatchObject({ state: NUD_FAILED });
    // A dump reports it again too (a resync after lost events restarts the retries).
    expect(o.load([failed()]).map((c) => o.find(c.ifindex, c.ip)?.state)).toEqual([NUD_FAILED]);
  });
});

describe('observed keys', () => {
  it('an entry is one entry whether its message was read in place or parsed (random events)', () => {
    // IPv4 addresses on both sides of 2^31 (kept as signed numbers), IPv6 ones, one
    // IPv4-mapped (text, not a number).
    const ips = ['10.0.0.2', '127.255.255.255', '128.0.0.1', '200.1.2.3', '255.255.255.254'];
    ips.push('2001:db8::1', 'fe80::1', '::ffff:10.0.0.2');
    const step = fc.record({
      kind: fc.constantFrom('new' as const, 'del' as const),
      ifindex: fc.constantFrom(2, 3),
      ip: fc.constantFrom(...ips),
      state: fc.constantFrom(NUD_INCOMPLETE, NUD_REACHABLE, NUD_STALE, NUD_FAILED),
      lladdr: fc.constantFrom(undefined, '02:00:00:0a:bc:de', 'ff:ff:ff:ff:ff:ff', '01:02:03:04'),
      inPlace: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const mixed = new ObservedNeighbors(P);
        const parsed = new ObservedNeighbors(P);
        for (const s of steps) {
          const n = neigh(s.ifindex, s.ip, {
            state: s.state,
            flags: NTF_EXT_LEARNED,
            protocol: P,
            ...(s.lladdr === undefined ? {} : { lladdr: s.lladdr }),
          });
          const a = mixed.apply(s.kind, s.inPlace ? fieldsOf(n) : n);
          const b = parsed.apply(s.kind, n);
          expect(a === undefined, 'changed alike').toBe(b === undefined);
        }
        const rows = (o: ObservedNeighbors) =>
          [...o.values()].sort((x, y) =>
            `${x.ifindex}|${x.ip}`.localeCompare(`${y.ifindex}|${y.ip}`),
          );
        expect(rows(mixed)).toEqual(rows(parsed));
        expect(mixed.size).toBe(parsed.size);
        for (const r of rows(parsed)) {
          expect(mixed.find(r.ifindex, r.ip)?.lladdr).toBe(r.lladdr);
          expect(mixed.get(`${r.ifindex}|${r.ip}`)).toEqual(r);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('observed census', () => {
  it('kept as entries change equals a count over the table (random events and dumps)', () => {
    const states = [NUD_INCOMPLETE, NUD_REACHABLE, NUD_STALE, NUD_DELAY, NUD_FAILED, NUD_PERMANENT];
    const msg = fc.record({
      ip: fc.integer({ min: 1, max: 6 }).map((i) => `10.0.0.${i}`),
      state: fc.constantFrom(...states),
      ours: fc.boolean(),
      learned: fc.boolean(),
    });
    const step = fc.oneof(
      fc.record({ kind: fc.constantFrom('new' as const, 'del' as const), m: msg }),
      fc.record({ kind: fc.constant('load' as const), ms: fc.array(msg, { maxLength: 6 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const o = new ObservedNeighbors(P);
        const toNeigh = (m: { ip: string; state: number; ours: boolean; learned: boolean }) =>
          neigh(2, m.ip, {
            state: m.state,
            flags: m.learned ? NTF_EXT_LEARNED : 0,
            protocol: m.ours ? P : undefined,
          });
        for (const s of steps) {
          if (s.kind === 'load') o.load(s.ms.map(toNeigh));
          else o.apply(s.kind, toNeigh(s.m));
        }
        const byState = new Map<string, number>();
        let foreign = 0;
        for (const r of o.values()) {
          const e = o.find(r.ifindex, r.ip)!;
          if (isForeign(e, P)) foreign++;
          else if (r.protocol === P) {
            const name = (nudStateNames(r.state)[0] ?? 'none').toLowerCase();
            byState.set(name, (byState.get(name) ?? 0) + 1);
          }
        }
        const c = o.census(() => true);
        expect(Object.fromEntries(c.byState)).toEqual(Object.fromEntries(byState));
        expect(c.foreignWanted).toBe(foreign);
      }),
    );
  });
});
