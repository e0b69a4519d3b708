import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  hostPrefix,
  ipFromBytes,
  ipToBytes,
  parsePrefix,
  prefixContains,
  prefixCovers,
  prefixFromBytes,
} from './index.js';
import { messageOf } from '../../test/helpers/errors.js';

/** Reference: bit `i` (0 = most significant) of the address bytes. */
function bit(b: Uint8Array, i: number): number {
  return (b[i >> 3]! >> (7 - (i & 7))) & 1;
}

const v4 = fc.uint8Array({ minLength: 4, maxLength: 4 });
const v6 = fc.uint8Array({ minLength: 16, maxLength: 16 });

describe('parsePrefix', () => {
  it.each([
    ['10.0.0.0/8', '10.0.0.0/8', 4, 8],
    ['0.0.0.0/0', '0.0.0.0/0', 4, 0],
    ['192.0.2.1/32', '192.0.2.1/32', 4, 32],
    ['10.0.0.128/25', '10.0.0.128/25', 4, 25],
    ['2001:DB8::/32', '2001:db8::/32', 6, 32],
    ['::/0', '::/0', 6, 0],
    ['2001:db8::1/128', '2001:db8::1/128', 6, 128],
    ['::ffff:0:0/96', '::ffff:0.0.0.0/96', 6, 96],
  ])('%s → %s', (input, text, family, length) => {
    const p = parsePrefix(input);
    expect(p.text).toBe(text);
    expect(p.family).toBe(family);
    expect(p.length).toBe(length);
    expect(p.address).toBe(text.slice(0, text.indexOf('/')));
    expect(p.bytes).toEqual(ipToBytes(p.address));
  });

  it('rejects host bits in user input, naming the normalised prefix', () => {
    expect(messageOf(() => parsePrefix('10.1.2.3/8'))).toBe(
      '"10.1.2.3/8" has host bits set beyond /8; write the network 10.0.0.0/8 (or 10.1.2.3/32 for the single address)',
    );
    expect(messageOf(() => parsePrefix('2001:db8::1/32'))).toMatch(
      /write the network 2001:db8::\/32 \(or 2001:db8::1\/128 for the single address\)/,
    );
    expect(messageOf(() => parsePrefix('10.0.0.129/25'))).toBe(
      '"10.0.0.129/25" has host bits set beyond /25; write the network 10.0.0.128/25 (or 10.0.0.129/32 for the single address)',
    );
  });

  it("clears host bits when asked (the kernel's routes)", () => {
    expect(parsePrefix('10.1.2.3/8', { hostBits: 'clear' }).text).toBe('10.0.0.0/8');
    expect(parsePrefix('10.255.255.255/9', { hostBits: 'clear' }).text).toBe('10.128.0.0/9');
    expect(parsePrefix('2001:db8:ffff::1/33', { hostBits: 'clear' }).text).toBe(
      '2001:db8:8000::/33',
    );
  });

  it.each([
    ['10.0.0.1', /has no prefix length; write 10\.0\.0\.1\/32 for the single address/],
    ['2001:DB8::1', /has no prefix length; write 2001:db8::1\/128/],
    ['10.0.0.0/33', /prefix length "33"; an IPv4 prefix length is a decimal number from 0 to 32/],
    ['::/129', /from 0 to 128/],
    ['10.0.0.0/', /prefix length ""/],
    ['10.0.0.0/08', /without leading zeros/],
    ['10.0.0.0/-1', /prefix length "-1"/],
    ['10.0.0.0/8/8', /prefix length "8\/8"/],
    ['10.0.0/8', /is not a valid prefix: .*has 3 octets/],
    ['garbage', /not an IP address/],
  ])('rejects %j', (input, message) => {
    expect(messageOf(() => parsePrefix(input))).toMatch(message);
  });
});

describe('contains and covers', () => {
  it('prefixContains agrees with a bit-by-bit comparison', () => {
    const pair = fc.oneof(
      fc.tuple(v4, v4, fc.integer({ min: 0, max: 32 })),
      fc.tuple(v6, v6, fc.integer({ min: 0, max: 128 })),
    );
    fc.assert(
      fc.property(pair, fc.boolean(), ([net, ip, len], share) => {
        if (share) ip.set(net.subarray(0, len >> 3)); // make matches likely
        const p = prefixFromBytes(net.length === 4 ? 4 : 6, net, len);
        let expected = true;
        for (let i = 0; i < len; i++) if (bit(net, i) !== bit(ip, i)) expected = false;
        expect(prefixContains(p, ip)).toBe(expected);
        expect(prefixContains(p, ipFromBytes(ip))).toBe(expected);
        expect(prefixCovers(p, hostPrefix(ipFromBytes(ip)))).toBe(expected);
      }),
      { numRuns: 5000 },
    );
  });

  it('never mixes families', () => {
    expect(prefixContains(parsePrefix('::/0'), '10.0.0.1')).toBe(false);
    expect(prefixContains(parsePrefix('0.0.0.0/0'), '::1')).toBe(false);
    expect(prefixContains(parsePrefix('0.0.0.0/0'), ipToBytes('::1'))).toBe(false);
    expect(prefixCovers(parsePrefix('::/0'), parsePrefix('0.0.0.0/0'))).toBe(false);
  });

  it('covers by length and bits', () => {
    const p8 = parsePrefix('10.0.0.0/8');
    expect(prefixCovers(p8, parsePrefix('10.1.0.0/16'))).toBe(true);
    expect(prefixCovers(p8, p8)).toBe(true);
    expect(prefixCovers(parsePrefix('10.1.0.0/16'), p8)).toBe(false);
    expect(prefixCovers(p8, parsePrefix('11.0.0.0/16'))).toBe(false);
    expect(prefixContains(p8, '10.255.255.255')).toBe(true);
    expect(prefixContains(p8, '11.0.0.0')).toBe(false);
  });
});

describe('prefixFromBytes', () => {
  it('reads at an offset and clears host bits', () => {
    const buf = Buffer.from([9, 9, 10, 1, 2, 3]);
    expect(prefixFromBytes(4, buf, 16, 2).text).toBe('10.1.0.0/16');
    expect(buf).toEqual(Buffer.from([9, 9, 10, 1, 2, 3])); // input untouched
    expect(prefixFromBytes(6, ipToBytes('2001:db8::1'), 64).text).toBe('2001:db8::/64');
  });

  it('rejects bad lengths and short buffers', () => {
    expect(messageOf(() => prefixFromBytes(4, Buffer.alloc(4), 33))).toMatch(/33 is not in 0–32/);
    expect(messageOf(() => prefixFromBytes(6, Buffer.alloc(16), 1.5))).toMatch(/not in 0–128/);
    expect(messageOf(() => prefixFromBytes(6, Buffer.alloc(8), 0))).toMatch(/needs 16 bytes/);
  });

  it('round-trips through text', () => {
    fc.assert(
      fc.property(fc.oneof(v4, v6), fc.nat(), (b, n) => {
        const len = n % (b.length * 8 + 1);
        const p = prefixFromBytes(b.length === 4 ? 4 : 6, b, len);
        expect(parsePrefix(p.text)).toEqual(p);
      }),
      { numRuns: 3000 },
    );
  });
});
