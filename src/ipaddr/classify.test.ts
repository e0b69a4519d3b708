import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  classifyIp,
  ipToBytes,
  isUnicastIp,
  parseIp,
  validateUnicastIp,
  type IpClass,
} from './index.js';
import { messageOf } from '../../test/helpers/errors.js';

describe('classifyIp', () => {
  it.each<[string, IpClass]>([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this-network'],
    ['0.255.255.255', 'this-network'],
    ['1.0.0.0', 'unicast'],
    ['126.255.255.255', 'unicast'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['128.0.0.0', 'unicast'],
    ['169.253.255.255', 'unicast'],
    ['169.254.0.1', 'link-local'],
    ['169.254.255.255', 'link-local'],
    ['169.255.0.0', 'unicast'],
    ['223.255.255.255', 'unicast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.1', 'unicast'],
    ['255.255.255.254', 'unicast'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::2', 'unicast'],
    ['ff02::1', 'multicast'],
    ['ff00::', 'multicast'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'unicast'],
    ['fe7f::1', 'unicast'],
    ['::ffff:10.0.0.1', 'ipv4-mapped'],
    ['::ffff:127.0.0.1', 'ipv4-mapped'],
    ['2001:db8::1', 'unicast'],
    ['fd00::1', 'unicast'],
  ])('%s is %s', (ip, cls) => {
    expect(classifyIp(ip)).toBe(cls);
    expect(classifyIp(ipToBytes(ip))).toBe(cls);
    expect(isUnicastIp(ip)).toBe(cls === 'unicast');
  });

  it('agrees with a prefix table on random IPv4 addresses', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), (b) => {
        const [a = 0, x = 0] = b;
        const expected: IpClass = b.every((v) => v === 0)
          ? 'unspecified'
          : a === 0
            ? 'this-network'
            : a === 127
              ? 'loopback'
              : a >= 224 && a < 240
                ? 'multicast'
                : b.every((v) => v === 255)
                  ? 'broadcast'
                  : a === 169 && x === 254
                    ? 'link-local'
                    : 'unicast';
        expect(classifyIp(b)).toBe(expected);
      }),
      { numRuns: 5000 },
    );
  });

  it('rejects bad input', () => {
    expect(messageOf(() => classifyIp('nope'))).toMatch(/not an IP address/);
    expect(messageOf(() => classifyIp(Buffer.alloc(5)))).toMatch(/4 or 16 bytes; got 5/);
    expect(isUnicastIp('nope')).toBe(false);
    expect(isUnicastIp(Buffer.alloc(3))).toBe(false);
  });
});

describe('validateUnicastIp', () => {
  it('checks an IP parsed already from its bytes: the same value back, the same errors', () => {
    const ip = parseIp('2001:DB8::0:1');
    expect(validateUnicastIp(ip)).toBe(ip); // not parsed (and copied) again
    const node = { nodeAddresses: new Map([['10.0.0.1', 'eth0']]) };
    for (const text of ['127.0.0.1', 'ff02::1', '10.0.0.1', '169.254.1.1']) {
      const fromText = messageOf(() => validateUnicastIp(text, node));
      expect(
        messageOf(() => validateUnicastIp(parseIp(text), node)),
        text,
      ).toEqual(fromText);
    }
  });

  it('returns the canonical address', () => {
    expect(validateUnicastIp('2001:DB8::0:1')).toEqual({
      family: 6,
      address: '2001:db8::1',
      bytes: ipToBytes('2001:db8::1'),
    });
    expect(validateUnicastIp('10.0.0.1', { family: 4 }).address).toBe('10.0.0.1');
  });

  it.each([
    ['0.0.0.0', /0\.0\.0\.0 is the unspecified address; give the unicast address of a host/],
    ['::', /:: is the unspecified address/],
    ['0.0.0.7', /0\.0\.0\.7 is in 0\.0\.0\.0\/8 \("this network"\)/],
    [
      '127.0.0.1',
      /127\.0\.0\.1 is a loopback address \(127\.0\.0\.0\/8\); it never leaves the host/,
    ],
    ['::1', /::1 is a loopback address \(::1\)/],
    ['224.0.0.5', /224\.0\.0\.5 is a multicast address \(224\.0\.0\.0\/4\)/],
    ['FF02::1', /ff02::1 is a multicast address \(ff00::\/8\)/],
    ['255.255.255.255', /255\.255\.255\.255 is the limited broadcast address/],
    ['169.254.1.1', /169\.254\.1\.1 is a link-local address \(169\.254\.0\.0\/16\)/],
    ['fe80::1', /fe80::1 is a link-local address \(fe80::\/10\)/],
    ['::ffff:10.0.0.1', /use the IPv4 address 10\.0\.0\.1 instead/],
    ['10.0.0.1/32', /is a prefix, but a single address is expected here/],
  ])('rejects %s', (ip, message) => {
    expect(messageOf(() => validateUnicastIp(ip))).toMatch(message);
  });

  it('rejects the wrong family', () => {
    expect(messageOf(() => validateUnicastIp('10.0.0.1', { family: 6 }))).toBe(
      '10.0.0.1 is IPv4; this option takes IPv6',
    );
    expect(messageOf(() => validateUnicastIp('2001:db8::1', { family: 4 }))).toBe(
      '2001:db8::1 is IPv6; this option takes IPv4',
    );
  });

  it("rejects the node's own addresses, in any spelling", () => {
    const nodeAddresses = new Map([
      ['10.0.0.1', 'eth0'],
      ['2001:db8::1', ''],
    ]);
    expect(messageOf(() => validateUnicastIp('10.0.0.1', { nodeAddresses }))).toBe(
      "10.0.0.1 is an address of this node (on eth0); fibkeeper does not forward to or assign the node's own addresses",
    );
    expect(messageOf(() => validateUnicastIp('2001:DB8:0::1', { nodeAddresses }))).toMatch(
      /^2001:db8::1 is an address of this node; fibkeeper does not forward/,
    );
    expect(validateUnicastIp('10.0.0.2', { nodeAddresses }).address).toBe('10.0.0.2');
  });
});
