import { describe, expect, it } from 'vitest';
import { parseIp } from '../ipaddr/index.js';
import { validateExternalIps } from './validate.js';
import { messageOf } from '../../test/helpers/errors.js';

const ctx = {
  nodeAddresses: new Map([
    ['10.0.0.1', 'eth0'],
    ['2001:db8::1', 'eth0'],
  ]),
  ipv6: true,
  interfaceName: 'eth0',
};

describe('validateExternalIps', () => {
  it('returns canonical addresses', () => {
    expect(
      validateExternalIps(['192.0.2.1', '2001:DB8::0:5'], 'assign', ctx).map((p) => p.address),
    ).toEqual(['192.0.2.1', '2001:db8::5']);
  });

  it('takes IPs parsed at the edge as they are, with the errors the text gets', () => {
    const ip = parseIp('2001:db8::5');
    expect(validateExternalIps([ip], 'assign', ctx)[0]).toBe(ip); // not parsed again
    for (const text of ['10.0.0.1', '127.0.0.1', '2001:db8::1']) {
      const parsed = () => validateExternalIps([parseIp(text)], 'assign', ctx);
      const fromText = () => validateExternalIps([text], 'assign', ctx);
      expect(messageOf(parsed), text).toBe(messageOf(fromText));
    }
    const v6off = { ...ctx, ipv6: false };
    expect(() => validateExternalIps([ip], 'assign', v6off)).toThrow(/IPv6 is disabled/);
  });

  it('names the call, the IP and the reason for each kind of bad input', () => {
    const cases: [unknown, RegExp][] = [
      ['garbage', /^assign: external IP "garbage": .*not an IP address/],
      ['127.0.0.1', /loopback/],
      ['224.0.0.1', /multicast/],
      ['fe80::1%eth0', /zone/i],
      ['::ffff:192.0.2.1', /IPv4-mapped/],
      ['10.0.0.1', /address of this node \(on eth0\)/],
      ['2001:db8::1', /address of this node \(on eth0\)/],
      [42, /^assign: 42 is not an IP address/],
    ];
    for (const [bad, why] of cases) {
      expect(
        () => validateExternalIps(['192.0.2.1', bad as string], 'assign', ctx),
        String(bad),
      ).toThrow(why);
    }
    expect(() => validateExternalIps('192.0.2.1' as unknown as string[], 'assign', ctx)).toThrow(
      /expected a list of IPs/,
    );
  });

  it('rejects IPv6 when the external interface has IPv6 disabled', () => {
    expect(() =>
      validateExternalIps(['2001:db8::9'], 'setDesired', { ...ctx, ipv6: false }),
    ).toThrow(
      'setDesired: external IP 2001:db8::9 is IPv6, but IPv6 is disabled on the external interface eth0',
    );
  });
});
