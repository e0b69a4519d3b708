import { isIP, SocketAddress } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/index.js';
import { afOfText, AF_INET, AF_INET6, ipFromBytes, ipToBytes, writeIp } from './address.js';
import { formatLinkAddr, linkAddrLength, writeLinkAddr } from './mac.js';

// The conversions the netlink codec runs for every address it writes or reads.

// libuv's inet_ntop/inet_pton (behind node:net) implement the same BSD algorithm as
// glibc, which `ip -j` prints with: they are the oracle here.
const ntop6 = (b: Uint8Array): string => {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i]! << 8) | b[i + 1]!).toString(16));
  return new SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address;
};

describe('IP text <-> bytes', () => {
  it('formats and parses known addresses', () => {
    const cases: [string, string][] = [
      ['10.1.2.3', '10.1.2.3'],
      ['0.0.0.0', '0.0.0.0'],
      ['255.255.255.255', '255.255.255.255'],
      ['::', '::'],
      ['::1', '::1'],
      ['FE80::1', 'fe80::1'],
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
      ['1:0:0:0:0:0:0:0', '1::'],
      ['::ffff:192.0.2.1', '::ffff:192.0.2.1'],
      ['::ffff:c000:201', '::ffff:192.0.2.1'],
      ['::1.2.3.4', '::1.2.3.4'],
      ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
      ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ];
    for (const [input, canonical] of cases) {
      const b = ipToBytes(input);
      expect(ipFromBytes(b), input).toBe(canonical);
    }
  });

  it('rejects malformed addresses with InvalidArgumentError', () => {
    for (const bad of [
      '',
      '1.2.3',
      '1.2.3.4.5',
      '1.2.3.256',
      '01.2.3.4',
      '1..2.3',
      ':',
      ':::',
      '1:2',
      '1::2::3',
      '12345::',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7:8::',
      '::1.2.3',
      'fe80::1%eth0',
      'g::',
      '1:',
      ':1',
    ]) {
      expect(() => ipToBytes(bad), bad).toThrow(InvalidArgumentError);
    }
  });

  it('writeIp reports the length and writes in place; afOfText tells the family', () => {
    const buf = Buffer.alloc(20, 0xaa);
    expect(writeIp('1.2.3.4', buf, 2)).toBe(4);
    expect([...buf.subarray(0, 7)]).toEqual([0xaa, 0xaa, 1, 2, 3, 4, 0xaa]);
    expect(writeIp('::2', buf, 4)).toBe(16);
    expect(ipFromBytes(buf, 4, 16)).toBe('::2');
    expect([afOfText('1.2.3.4'), afOfText('::2')]).toEqual([AF_INET, AF_INET6]);
  });

  it('formats every IPv6 address as inet_ntop does (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff })),
          {
            minLength: 8,
            maxLength: 8,
          },
        ),
        (words) => {
          const b = new Uint8Array(16);
          words.forEach((w, i) => {
            b[2 * i] = w >> 8;
            b[2 * i + 1] = w & 0xff;
          });
          const text = ipFromBytes(b, 0, 16);
          expect(text).toBe(ntop6(b));
          expect([...ipToBytes(text)]).toEqual([...b]);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('accepts exactly the strings inet_pton accepts (property)', () => {
    const chars = fc.constantFrom(...'0123456789abcdefABCDEF:.:::0'.split(''));
    fc.assert(
      fc.property(fc.string({ unit: chars, maxLength: 45 }), (s) => {
        let ok: boolean;
        try {
          ipToBytes(s);
          ok = true;
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidArgumentError);
          ok = false;
        }
        expect(ok, s).toBe(isIP(s) !== 0);
        if (ok && isIP(s) === 6) {
          expect(ipFromBytes(ipToBytes(s))).toBe(
            new SocketAddress({ address: s, family: 'ipv6' }).address,
          );
        }
      }),
      { numRuns: 20000 },
    );
  });

  it('parses every IPv6 notation fast-check generates to inet_pton bytes (property)', () => {
    fc.assert(
      fc.property(fc.ipV6(), (ip) => {
        expect(ipFromBytes(ipToBytes(ip))).toBe(
          new SocketAddress({ address: ip, family: 'ipv6' }).address,
        );
      }),
      { numRuns: 5000 },
    );
  });

  it('round-trips IPv4 (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(ipFromBytes(ipToBytes(ip))).toBe(ip);
      }),
    );
  });
});

describe('link-layer addresses', () => {
  it('round-trips MACs of any length', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 32 }), (bytes) => {
        const text = formatLinkAddr(bytes, 0, bytes.length);
        const out = Buffer.alloc(32);
        expect(writeLinkAddr(text, out, 0)).toBe(bytes.length);
        expect([...out.subarray(0, bytes.length)]).toEqual([...bytes]);
        expect(linkAddrLength(text)).toBe(bytes.length);
      }),
    );
  });

  it('accepts upper case and single digits, rejects junk', () => {
    const out = Buffer.alloc(6);
    writeLinkAddr('AA:b:0c:D:e:FF', out, 0);
    expect(formatLinkAddr(out, 0, 6)).toBe('aa:0b:0c:0d:0e:ff');
    for (const bad of ['', ':', 'aa::bb', 'aa:bb:', 'aaa:bb', 'gg:00', `${'00:'.repeat(32)}00`]) {
      expect(() => writeLinkAddr(bad, Buffer.alloc(64), 0), bad).toThrow(InvalidArgumentError);
    }
  });
});
