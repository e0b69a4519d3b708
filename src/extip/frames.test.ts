// The ARP and NDP frames: exact bytes, build → decode round trips, bad input (tshark's
// reading: frames-tshark.test.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatMac, ipFromBytes, ipToBytes } from '../ipaddr/index.js';
import {
  ARP_FRAME_LEN,
  NA_FRAME_LEN,
  buildArp,
  buildArpReply,
  buildGratuitousArp,
  buildNeighborAdvert,
  buildUnsolicitedNa,
  decodeFrame,
  type DecodedFrame,
} from './frames.js';
import { messageOf } from '../../test/helpers/errors.js';

const MAC = '02:00:5e:00:53:01';
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** Independent ICMPv6 checksum: the ones-complement sum is the plain sum modulo 0xffff. */
function referenceChecksum(ipv6Packet: Buffer): number {
  const payload = Buffer.from(ipv6Packet.subarray(40));
  payload.writeUInt16BE(0, 2); // the checksum field counts as zero
  const pseudo = Buffer.concat([
    ipv6Packet.subarray(8, 40), // source and destination
    Buffer.from([0, 0, payload.length >> 8, payload.length & 0xff, 0, 0, 0, 58]),
    payload,
  ]);
  let sum = 0;
  for (let i = 0; i < pseudo.length; i += 2) sum += pseudo.readUInt16BE(i); // even length here
  const folded = sum % 0xffff === 0 && sum !== 0 ? 0xffff : sum % 0xffff;
  return 0xffff - folded;
}

function expectKind<K extends DecodedFrame['kind']>(
  d: DecodedFrame,
  kind: K,
): Extract<DecodedFrame, { kind: K }> {
  expect(d.kind, JSON.stringify(d)).toBe(kind);
  return d as Extract<DecodedFrame, { kind: K }>;
}

describe('gratuitous ARP', () => {
  it('request form: hand-computed bytes', () => {
    const f = buildGratuitousArp({ ip: '192.0.2.10', mac: MAC, form: 'request' });
    expect(f).toHaveLength(ARP_FRAME_LEN);
    expect(f).toEqual(
      hex(`ffffffffffff 02005e005301 0806
           0001 0800 06 04 0001
           02005e005301 c000020a
           000000000000 c000020a`),
    );
  });

  it('reply form: op 2, target hardware address = the announced MAC', () => {
    const f = buildGratuitousArp({ ip: '192.0.2.10', mac: MAC.toUpperCase(), form: 'reply' });
    expect(f).toEqual(
      hex(`ffffffffffff 02005e005301 0806
           0001 0800 06 04 0002
           02005e005301 c000020a
           02005e005301 c000020a`),
    );
  });

  it.each([
    [{ ip: '2001:db8::1', mac: MAC }, /2001:db8::1 is IPv6; this option takes IPv4/],
    [{ ip: '224.0.0.1', mac: MAC }, /multicast address/],
    [{ ip: '10.0.0.1/32', mac: MAC }, /is a prefix/],
    [{ ip: '10.0.0.1', mac: 'ff:ff:ff:ff:ff:ff' }, /broadcast MAC address/],
    [{ ip: '10.0.0.1', mac: '00:00:00:00:00:00' }, /all-zero MAC/],
    [{ ip: '10.0.0.1', mac: Buffer.alloc(5) }, /6 bytes; got 5/],
  ])('rejects %j', (p, message) => {
    expect(messageOf(() => buildGratuitousArp({ ...p, form: 'request' }))).toMatch(message);
  });
});

describe('unsolicited neighbor advertisement', () => {
  const p = { ip: '2001:db8::10', mac: MAC };

  it('hand-computed bytes (from the target itself, as the kernel), independent checksum', () => {
    const f = buildUnsolicitedNa(p);
    expect(f).toHaveLength(NA_FRAME_LEN);
    // The checksum 0x480c was computed separately (Python, struct over the pseudo-header).
    expect(f).toEqual(
      hex(`333300000001 02005e005301 86dd
           60000000 0020 3a ff
           20010db8000000000000000000000010
           ff020000000000000000000000000001
           88 00 480c 20000000
           20010db8000000000000000000000010
           02 01 02005e005301`),
    );
    expect(referenceChecksum(f.subarray(14))).toBe(0x480c);
  });

  it('sets the router flag on request', () => {
    const f = buildUnsolicitedNa({ ...p, router: true });
    expect(f[14 + 40 + 4]).toBe(0xa0); // R and O
    expect(f.readUInt16BE(14 + 40 + 2)).toBe(referenceChecksum(f.subarray(14)));
  });

  it.each([
    [{ ip: '192.0.2.1' }, /192\.0\.2\.1 is IPv4; this option takes IPv6/],
    [{ ip: 'fe80::5' }, /link-local address/],
    [{ ip: 'ff02::1' }, /multicast address/],
    [{ ip: '::ffff:10.0.0.1' }, /use the IPv4 address 10\.0\.0\.1 instead/],
    [{ mac: '33:33:00:00:00:01' }, /multicast MAC address/],
  ])('rejects %j', (override, message) => {
    expect(messageOf(() => buildUnsolicitedNa({ ...p, ...override }))).toMatch(message);
  });
});

const unicastMac = fc
  .uint8Array({ minLength: 6, maxLength: 6 })
  .filter((b) => (b[0]! & 1) === 0 && b.some((x) => x !== 0))
  .map((b) => formatMac(b));
const ipv4 = fc.uint8Array({ minLength: 4, maxLength: 4 }).map((b) => ipFromBytes(b));
const ipv6 = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => ipFromBytes(b));
const unicastV4 = fc
  .tuple(fc.integer({ min: 1, max: 223 }), fc.uint8Array({ minLength: 3, maxLength: 3 }))
  .filter(([a, r]) => a !== 127 && !(a === 169 && r[0] === 254))
  .map(([a, r]) => `${a}.${r[0]}.${r[1]}.${r[2]}`);
const unicastV6 = fc
  .uint8Array({ minLength: 14, maxLength: 14 })
  .map((r) => ipFromBytes(Buffer.concat([Buffer.from([0x20, 0x01]), r])));
describe('build → decode round trip', () => {
  it('gratuitous ARP, both forms', () => {
    fc.assert(
      fc.property(
        unicastV4,
        unicastMac,
        fc.constantFrom('request' as const, 'reply' as const),
        (ip, mac, form) => {
          const d = expectKind(decodeFrame(buildGratuitousArp({ ip, mac, form })), 'arp');
          expect(d).toEqual({
            kind: 'arp',
            eth: { dst: 'ff:ff:ff:ff:ff:ff', src: mac, etherType: 0x0806, vlans: [] },
            op: form === 'request' ? 1 : 2,
            senderMac: mac,
            senderIp: ip,
            targetMac: form === 'request' ? '00:00:00:00:00:00' : mac,
            targetIp: ip,
            gratuitous: true,
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('ARP reply from another host', () => {
    fc.assert(
      fc.property(
        unicastMac,
        ipv4,
        unicastMac,
        ipv4,
        (senderMac, senderIp, targetMac, targetIp) => {
          const d = expectKind(
            decodeFrame(buildArpReply({ senderMac, senderIp, targetMac, targetIp })),
            'arp',
          );
          expect(d.eth).toEqual({ dst: targetMac, src: senderMac, etherType: 0x0806, vlans: [] });
          expect(d).toMatchObject({
            op: 2,
            senderMac,
            senderIp,
            targetMac,
            targetIp,
            gratuitous: senderIp === targetIp,
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('neighbor advertisements with any flags, addresses and options', () => {
    const params = fc.record({
      ethSrc: unicastMac,
      srcIp: ipv6,
      dstIp: fc.oneof(
        fc.constant('ff02::1'),
        ipv6,
        ipv6.map((ip) =>
          ipFromBytes(Buffer.concat([Buffer.from([0xff]), ipToBytes(ip).subarray(1)])),
        ),
      ),
      target: ipv6,
      router: fc.boolean(),
      solicited: fc.boolean(),
      override: fc.boolean(),
      targetMac: fc.option(unicastMac, { nil: null }),
      hopLimit: fc.integer({ min: 0, max: 255 }),
    });
    fc.assert(
      fc.property(params, unicastMac, (p, unicastDst) => {
        const dst = ipToBytes(p.dstIp);
        const multicast = dst[0] === 0xff;
        // A multicast destination derives its MAC (RFC 2464); a unicast one needs it given.
        const frame = buildNeighborAdvert({ ...p, ethDst: multicast ? undefined : unicastDst });
        expect(frame.readUInt16BE(54 + 2)).toBe(referenceChecksum(frame.subarray(14)));
        const d = expectKind(decodeFrame(frame), 'na');
        expect(d).toMatchObject({
          srcIp: p.srcIp,
          dstIp: p.dstIp,
          hopLimit: p.hopLimit,
          code: 0,
          router: p.router,
          solicited: p.solicited,
          override: p.override,
          target: p.target,
          targetMac: p.targetMac ?? undefined,
          optionTypes: p.targetMac === null ? [] : [2],
          checksumValid: true,
        });
        expect(d.eth.src).toBe(p.ethSrc);
        expect(d.eth.dst).toBe(
          multicast ? formatMac(Buffer.from([0x33, 0x33, ...dst.subarray(12)])) : unicastDst,
        );
      }),
      { numRuns: 500 },
    );
  });

  it('unsolicited NA', () => {
    fc.assert(
      fc.property(unicastV6, unicastMac, fc.boolean(), (ip, mac, router) => {
        const d = expectKind(decodeFrame(buildUnsolicitedNa({ ip, mac, router })), 'na');
        expect(d).toEqual({
          kind: 'na',
          eth: { dst: '33:33:00:00:00:01', src: mac, etherType: 0x86dd, vlans: [] },
          srcIp: ip,
          dstIp: 'ff02::1',
          hopLimit: 255,
          code: 0,
          router,
          solicited: false,
          override: true,
          target: ip,
          targetMac: mac,
          optionTypes: [2],
          checksum: d.checksum,
          checksumValid: true,
        });
      }),
      { numRuns: 500 },
    );
  });
});

describe('decodeFrame on bad input', () => {
  const good = [
    buildGratuitousArp({ ip: '192.0.2.10', mac: MAC, form: 'request' }),
    buildUnsolicitedNa({ ip: '2001:db8::10', mac: MAC }),
  ];

  it('never throws on random bytes', () => {
    const typed = fc.tuple(
      fc.constantFrom(0x0806, 0x86dd, 0x8100, 0x0800),
      fc.uint8Array({ maxLength: 120 }),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 120 }),
          typed.map(([t, rest]) => {
            const f = Buffer.alloc(14 + rest.length);
            f.writeUInt16BE(t, 12);
            f.set(rest, 14);
            return f;
          }),
        ),
        (bytes) => {
          const d = decodeFrame(bytes);
          expect(['arp', 'na', 'other', 'invalid']).toContain(d.kind);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('reports every truncation as invalid', () => {
    for (const frame of good) {
      for (let n = 0; n < frame.length; n++) {
        const d = decodeFrame(frame.subarray(0, n));
        expect(d.kind, `${n} bytes`).toBe('invalid');
        expect((d as { reason: string }).reason.length).toBeGreaterThan(5);
      }
    }
  });

  it('ignores Ethernet padding and skips VLAN tags', () => {
    const padded = Buffer.concat([good[0]!, Buffer.alloc(18)]);
    expect(expectKind(decodeFrame(padded), 'arp').senderIp).toBe('192.0.2.10');
    const tagged = Buffer.concat([
      good[1]!.subarray(0, 12),
      hex('8100 0064'),
      good[1]!.subarray(12),
    ]);
    const d = expectKind(decodeFrame(tagged), 'na');
    expect(d.eth.vlans).toEqual([100]);
    expect(d.checksumValid).toBe(true);
  });

  it('detects a corrupted NA checksum and malformed options', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 54 + 8, max: NA_FRAME_LEN - 1 }),
        fc.integer({ min: 1, max: 255 }),
        (at, x) => {
          const f = Buffer.from(good[1]!);
          f[at]! ^= x;
          const d = decodeFrame(f);
          // Flipping bits in the target or the option: either the checksum catches it, or the
          // option became malformed.
          if (d.kind === 'na') expect(d.checksumValid).toBe(false);
          else expect(d.kind).toBe('invalid');
        },
      ),
      { numRuns: 1000 },
    );
    const zeroLen = Buffer.from(good[1]!);
    zeroLen[54 + 25] = 0;
    expect(expectKind(decodeFrame(zeroLen), 'invalid').reason).toMatch(/length 0/);
  });

  it('classifies what it does not decode', () => {
    const ipv4 = Buffer.concat([good[0]!.subarray(0, 12), hex('0800'), Buffer.alloc(20)]);
    expect(expectKind(decodeFrame(ipv4), 'other').what).toBe('EtherType 0x0800');
    const ns = Buffer.from(good[1]!);
    ns[54] = 135;
    expect(expectKind(decodeFrame(ns), 'other').what).toBe('ICMPv6 type 135');
    const udp = Buffer.from(good[1]!);
    udp[20] = 17;
    expect(expectKind(decodeFrame(udp), 'other').what).toBe('IPv6 next header 17');
    const arpOther = Buffer.from(good[0]!);
    arpOther.writeUInt16BE(6, 14);
    expect(expectKind(decodeFrame(arpOther), 'other').what).toBe(
      'ARP for hardware type 6, protocol 0x0800',
    );
  });
});

describe('builders reject bad input', () => {
  it('names the field', () => {
    const arp = {
      op: 1,
      ethDst: MAC,
      senderMac: MAC,
      senderIp: '10.0.0.1',
      targetMac: MAC,
      targetIp: '10.0.0.2',
    };
    expect(messageOf(() => buildArp({ ...arp, targetIp: '2001:db8::1' }))).toBe(
      'ARP target IP: ARP carries IPv4; 2001:db8::1 is IPv6',
    );
    expect(messageOf(() => buildArp({ ...arp, op: 70000 }))).toMatch(/not a 16-bit number/);
    expect(messageOf(() => buildArp({ ...arp, senderMac: 'nope' }))).toMatch(/not a MAC address/);
    const na = { ethSrc: MAC, srcIp: 'fe80::1', target: '2001:db8::1' };
    expect(messageOf(() => buildNeighborAdvert({ ...na, dstIp: '2001:db8::2' }))).toMatch(
      /ethDst is required/,
    );
    expect(messageOf(() => buildNeighborAdvert({ ...na, hopLimit: 256 }))).toMatch(/hop limit 256/);
    expect(messageOf(() => buildNeighborAdvert({ ...na, target: '10.0.0.1' }))).toMatch(
      /NA target: 10\.0\.0\.1 is IPv4/,
    );
  });
});

// ---------------------------------------------------------------------------------------
