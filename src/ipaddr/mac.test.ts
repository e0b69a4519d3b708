import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatMac, isMulticastMac, isZeroMac, parseMac, parseUnicastMac } from './index.js';
import { messageOf } from '../../test/helpers/errors.js';

const mac6 = fc.uint8Array({ minLength: 6, maxLength: 6 });

describe('MAC addresses', () => {
  it('parses either case and formats lowercase', () => {
    expect(parseMac('02:00:5E:10:00:0A')).toEqual(Buffer.from([2, 0, 0x5e, 0x10, 0, 0x0a]));
    expect(formatMac(Buffer.from([2, 0, 0x5e, 0x10, 0, 0x0a]))).toBe('02:00:5e:10:00:0a');
    expect(formatMac(Buffer.from([9, 9, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]), 2)).toBe(
      'aa:bb:cc:dd:ee:ff',
    );
  });

  it('round-trips every 6-byte value, and upper-case text', () => {
    fc.assert(
      fc.property(mac6, (b) => {
        const text = formatMac(b);
        expect(text).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
        expect(parseMac(text)).toEqual(Buffer.from(b));
        expect(parseMac(text.toUpperCase())).toEqual(Buffer.from(b));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['', /MAC address is empty/],
    ['02-00-5e-10-00-01', /uses '-' between the pairs; write 02:00:5e:10:00:01/],
    ['0200.5e10.0001', /is not a MAC address; write six hex pairs separated by ':'/],
    ['02:00:5e:10:00', /is not a MAC address/],
    ['02:00:5e:10:00:01:02', /is not a MAC address/],
    ['2:0:5e:10:0:1', /is not a MAC address/],
    ['02:00:5e:10:00:0g', /is not a MAC address/],
    ['02:00:5e:10:00:01 ', /is not a MAC address/],
  ])('rejects %j', (input, message) => {
    expect(messageOf(() => parseMac(input))).toMatch(message);
  });

  it('classifies zero, multicast and broadcast', () => {
    expect(isZeroMac(Buffer.alloc(6))).toBe(true);
    expect(isZeroMac(parseMac('00:00:00:00:00:01'))).toBe(false);
    expect(isMulticastMac(parseMac('01:00:5e:00:00:01'))).toBe(true);
    expect(isMulticastMac(parseMac('33:33:00:00:00:01'))).toBe(true);
    expect(isMulticastMac(parseMac('ff:ff:ff:ff:ff:ff'))).toBe(true);
    expect(isMulticastMac(parseMac('02:00:00:00:00:01'))).toBe(false);
    expect(isMulticastMac(Buffer.alloc(5, 1))).toBe(false);
  });

  it('parseUnicastMac accepts text or bytes and rejects non-unicast MACs', () => {
    expect(parseUnicastMac('02:00:5E:00:00:01')).toEqual(parseMac('02:00:5e:00:00:01'));
    const bytes = Buffer.from([2, 0, 0, 0, 0, 1]);
    const copy = parseUnicastMac(bytes);
    expect(copy).toEqual(bytes);
    expect(copy).not.toBe(bytes);
    expect(messageOf(() => parseUnicastMac('00:00:00:00:00:00'))).toBe(
      '00:00:00:00:00:00 is the all-zero MAC address; give the unicast MAC of the interface',
    );
    expect(messageOf(() => parseUnicastMac('ff:ff:ff:ff:ff:ff'))).toMatch(
      /^ff:ff:ff:ff:ff:ff is the broadcast MAC address/,
    );
    expect(messageOf(() => parseUnicastMac('01:00:5e:00:00:01'))).toMatch(
      /^01:00:5e:00:00:01 is a multicast MAC address \(the low bit of the first byte is set\)/,
    );
    expect(messageOf(() => parseUnicastMac(Buffer.alloc(4)))).toMatch(/6 bytes; got 4/);
  });

  it('formatMac rejects short buffers', () => {
    expect(messageOf(() => formatMac(Buffer.alloc(6), 1))).toMatch(/6 bytes; the buffer has 5/);
  });
});
