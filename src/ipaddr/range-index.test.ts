import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/index.js';
import {
  canonicalIp,
  ipFromBytes,
  ipToBytes,
  IpRangeIndex,
  parsePrefix,
  prefixContains,
  prefixFromBytes,
  type IpPrefix,
} from './index.js';

/** Brute force: every member inside the prefix, in address order. */
function scan(members: Iterable<string>, prefix: IpPrefix): string[] {
  return [...members]
    .filter((ip) => prefixContains(prefix, ip))
    .map((ip) => ({ ip, key: ipToBytes(ip).toString('hex') }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((e) => e.ip);
}

// Small address spaces so that adds, deletes and re-adds of one address collide often.
const v4Ip = fc
  .tuple(fc.constantFrom(10, 192), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 255 }))
  .map(([a, c, d]) => `${a}.0.${c}.${d}`);
const v6Ip = fc
  .tuple(fc.constantFrom('2001:db8', 'fd00'), fc.integer({ min: 0, max: 7 }), fc.nat(255))
  .map(([p, c, d]) => canonicalIp(`${p}:0:${c}::${d.toString(16)}`));
const anyIp = fc.oneof(v4Ip, v6Ip);
const prefixOf = fc.tuple(anyIp, fc.nat(128)).map(([ip, n]) => {
  const b = ipToBytes(ip);
  return prefixFromBytes(b.length === 4 ? 4 : 6, b, n % (b.length * 8 + 1));
});

type Op =
  | { op: 'add'; ips: string[] }
  | { op: 'delete'; ips: string[] }
  | { op: 'query'; prefix: IpPrefix };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(anyIp, { maxLength: 300, size: 'max' })
      .map((ips) => ({ op: 'add', ips }) as Op),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(anyIp, { maxLength: 200, size: 'max' })
      .map((ips) => ({ op: 'delete', ips }) as Op),
  },
  { weight: 3, arbitrary: prefixOf.map((prefix) => ({ op: 'query', prefix }) as Op) },
);

describe('IpRangeIndex', () => {
  it('covered() equals a brute-force scan after any sequence of adds and deletes', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40, size: 'max' }), (ops) => {
        const index = new IpRangeIndex();
        const model = new Set<string>();
        // Compare plain values and assert once per op: expect() in the inner loops would make
        // shrinking a failure take minutes.
        for (const o of ops) {
          if (o.op === 'add') {
            const got = o.ips.map((ip) => index.add(ip));
            const want = o.ips.map((ip) => !model.has(ip) && model.add(ip) !== undefined);
            expect(got).toEqual(want);
          } else if (o.op === 'delete') {
            const got = o.ips.map((ip) => index.delete(ip));
            expect(got).toEqual(o.ips.map((ip) => model.delete(ip)));
          } else {
            expect(index.covered(o.prefix)).toEqual(scan(model, o.prefix));
          }
          expect(index.size).toBe(model.size);
        }
        expect(index.covered('0.0.0.0/0')).toEqual(scan(model, parsePrefix('0.0.0.0/0')));
        expect(index.covered('::/0')).toEqual(scan(model, parsePrefix('::/0')));
        expect(new Set(index.values())).toEqual(model);
      }),
      { numRuns: 200, interruptAfterTimeLimit: 15_000 },
    );
  });

  it('stays exact across rebuilds: bulk load, churn between queries, mass delete', () => {
    const index = new IpRangeIndex();
    const model = new Set<string>();
    const ipAt = (i: number): string =>
      ipFromBytes(Buffer.from([10, (i >> 16) & 255, (i >> 8) & 255, i & 255]));
    for (let i = 0; i < 20_000; i += 1) {
      index.add(ipAt(i * 7));
      model.add(ipAt(i * 7));
    }
    const queries = ['10.0.0.0/8', '10.0.0.0/24', '10.1.0.0/16', '10.2.23.0/24', '0.0.0.0/0'];
    for (const q of queries) expect(index.covered(q)).toEqual(scan(model, parsePrefix(q)));
    // Interleaved single adds, deletes and queries walk the delta and ghost paths.
    for (let i = 0; i < 3_000; i++) {
      const ip = ipAt((i * 7919) % 140_000);
      if (i % 3 === 0) {
        index.delete(ip);
        model.delete(ip);
      } else {
        index.add(ip);
        model.add(ip);
      }
      if (i % 50 === 0) {
        const q = queries[i % queries.length]!;
        expect(index.covered(q)).toEqual(scan(model, parsePrefix(q)));
      }
    }
    for (const ip of [...model].slice(0, 15_000)) {
      index.delete(ip);
      model.delete(ip);
    }
    for (const q of queries) expect(index.covered(q)).toEqual(scan(model, parsePrefix(q)));
    expect(index.size).toBe(model.size);
  });

  it('keys by canonical text, so spellings collapse', () => {
    const index = new IpRangeIndex();
    expect(index.add('2001:DB8::0:1')).toBe(true);
    expect(index.add('2001:db8::1')).toBe(false);
    expect(index.has('2001:0db8:0:0::1')).toBe(true);
    expect(index.covered('2001:db8::/32')).toEqual(['2001:db8::1']);
    expect(index.delete('2001:db8:0::1')).toBe(true);
    expect(index.delete('2001:db8::1')).toBe(false);
    expect(index.size).toBe(0);
  });

  it('answers host, edge and family-crossing prefixes', () => {
    const index = new IpRangeIndex();
    for (const ip of [
      '0.0.0.0',
      '255.255.255.255',
      '10.0.0.0',
      '10.255.255.255',
      '11.0.0.0',
      '::',
      'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
      '::ffff:10.0.0.1',
    ]) {
      index.add(ip);
    }
    expect(index.covered('10.0.0.0/8')).toEqual(['10.0.0.0', '10.255.255.255']);
    expect(index.covered('255.255.255.255/32')).toEqual(['255.255.255.255']);
    expect(index.covered('0.0.0.0/0')).toHaveLength(5);
    expect(index.covered('::/0')).toEqual([
      '::',
      '::ffff:10.0.0.1',
      'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    ]);
    expect(index.covered('::ffff:0:0/96')).toEqual(['::ffff:10.0.0.1']);
    expect(index.covered('10.9.9.9/8')).toEqual(['10.0.0.0', '10.255.255.255']); // host bits cleared
    index.clear();
    expect(index.covered('0.0.0.0/0')).toEqual([]);
    expect(index.size).toBe(0);
  });

  it('rejects invalid addresses', () => {
    const index = new IpRangeIndex();
    expect(() => index.add('10.0.0.256')).toThrow(InvalidArgumentError);
    expect(() => index.delete('nope')).toThrow(/not an IP address/);
    expect(index.has('nope')).toBe(false);
  });

  it('keeps an IPv4 member in 4 bytes: no map entry and no string per member', () => {
    // A million forwardable IPs are in this index: with a map of key → text it held ~45 bytes
    // per IPv4 member (docs/neighbor.md, "Memory per IP"). Measured as the heap and the
    // typed arrays' buffers after a full collection, before and after 200,000 members.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const used = (): number => {
      gc();
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const n = 200_000;
    const ips = Array.from(
      { length: n },
      (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    );
    const index = new IpRangeIndex();
    const before = used();
    for (const ip of ips) index.add(ip);
    expect(index.covered('10.1.0.0/16')).toHaveLength(65_536); // sorted and merged by now
    const perMember = (used() - before) / n;
    expect(index.size).toBe(n);
    expect(perMember).toBeLessThan(12);
  });
});
