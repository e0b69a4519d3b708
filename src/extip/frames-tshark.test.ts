// The frames the builders make, as Wireshark's dissectors (tshark) read them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildArpReply,
  buildGratuitousArp,
  buildNeighborAdvert,
  buildUnsolicitedNa,
  decodeFrame,
  type DecodedFrame,
} from './frames.js';

const MAC = '02:00:5e:00:53:01';

// Cross-check with Wireshark's dissectors.

const tshark = (() => {
  try {
    execFileSync('tshark', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A classic pcap file (microsecond timestamps, LINKTYPE_ETHERNET) holding `frames`. */
function pcap(frames: Uint8Array[]): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b2c3d4, 0); // magic
  header.writeUInt16LE(2, 4); // version 2.4
  header.writeUInt16LE(4, 6);
  header.writeUInt32LE(65535, 16); // snaplen
  header.writeUInt32LE(1, 20); // LINKTYPE_ETHERNET
  const parts: Uint8Array[] = [header];
  frames.forEach((f, i) => {
    const rec = Buffer.alloc(16);
    rec.writeUInt32LE(1_700_000_000 + i, 0);
    rec.writeUInt32LE(f.length, 8); // captured length
    rec.writeUInt32LE(f.length, 12); // original length
    parts.push(rec, f);
  });
  return Buffer.concat(parts);
}

type Layers = Record<string, Record<string, unknown>>;

// Under `make test` (FIBKEEPER_REQUIRE_PRIVILEGED=1) a missing tshark fails instead of skipping.
describe.skipIf(!tshark && process.env.FIBKEEPER_REQUIRE_PRIVILEGED !== '1')(
  'tshark decodes the frames as intended',
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'fibkeeper-frames-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const frames = [
      buildGratuitousArp({ ip: '192.0.2.10', mac: MAC, form: 'request' }),
      buildGratuitousArp({ ip: '192.0.2.10', mac: MAC, form: 'reply' }),
      buildArpReply({
        senderMac: '02:00:5e:00:53:99',
        senderIp: '192.0.2.10',
        targetMac: MAC,
        targetIp: '192.0.2.1',
      }),
      buildUnsolicitedNa({ ip: '2001:db8::10', mac: MAC }),
      buildUnsolicitedNa({ ip: '2001:db8:ffff::abcd', mac: MAC, router: true }),
      buildNeighborAdvert({
        ethSrc: '02:00:5e:00:53:99',
        srcIp: 'fe80::99',
        target: '2001:db8::10',
        override: true,
      }),
    ];

    function decodeWithTshark(input: Uint8Array[]): Layers[] {
      const file = join(dir, 'frames.pcap');
      writeFileSync(file, pcap(input));
      const out = execFileSync('tshark', ['-r', file, '-T', 'json'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      return (JSON.parse(out) as Array<{ _source: { layers: Layers } }>).map(
        (p) => p._source.layers,
      );
    }

    it('reads gratuitous ARPs, an ARP reply and NAs with good checksums', () => {
      const [req, rep, other, na, naRouter, foreign] = decodeWithTshark(frames);
      expect(req!.arp).toMatchObject({
        'arp.opcode': '1',
        'arp.isgratuitous': '1',
        'arp.src.hw_mac': MAC,
        'arp.src.proto_ipv4': '192.0.2.10',
        'arp.dst.hw_mac': '00:00:00:00:00:00',
        'arp.dst.proto_ipv4': '192.0.2.10',
      });
      expect(req!.eth).toMatchObject({
        'eth.dst': 'ff:ff:ff:ff:ff:ff',
        'eth.src': MAC,
        'eth.type': '0x0806',
      });
      expect(rep!.arp).toMatchObject({
        'arp.opcode': '2',
        'arp.isgratuitous': '1',
        'arp.dst.hw_mac': MAC,
      });
      expect(other!.arp).toMatchObject({
        'arp.opcode': '2',
        'arp.src.hw_mac': '02:00:5e:00:53:99',
        'arp.dst.proto_ipv4': '192.0.2.1',
      });
      expect(other!.arp!['arp.isgratuitous']).not.toBe('1');

      expect(na!.eth).toMatchObject({
        'eth.dst': '33:33:00:00:00:01',
        'eth.src': MAC,
        'eth.type': '0x86dd',
      });
      expect(na!.ipv6).toMatchObject({
        'ipv6.plen': '32',
        'ipv6.nxt': '58',
        'ipv6.hlim': '255',
        'ipv6.src': '2001:db8::10',
        'ipv6.dst': 'ff02::1',
      });
      expect(na!.icmpv6).toMatchObject({
        'icmpv6.type': '136',
        'icmpv6.code': '0',
        'icmpv6.checksum.status': '1', // "Good"
        'icmpv6.nd.na.flag_tree': {
          'icmpv6.nd.na.flag.r': '0',
          'icmpv6.nd.na.flag.s': '0',
          'icmpv6.nd.na.flag.o': '1',
        },
        'icmpv6.nd.na.target_address': '2001:db8::10',
        'icmpv6.opt': {
          'icmpv6.opt.type': '2',
          'icmpv6.opt.length': '1',
          'icmpv6.opt.target_linkaddr': MAC,
        },
      });
      expect(naRouter!.icmpv6).toMatchObject({
        'icmpv6.checksum.status': '1',
        'icmpv6.nd.na.flag_tree': { 'icmpv6.nd.na.flag.r': '1', 'icmpv6.nd.na.flag.o': '1' },
        'icmpv6.nd.na.target_address': '2001:db8:ffff::abcd',
      });
      expect(foreign!.icmpv6).toMatchObject({
        'icmpv6.checksum.status': '1',
        'icmpv6.opt': { 'icmpv6.opt.target_linkaddr': '02:00:5e:00:53:99' },
      });
    });

    it('agrees that a corrupted checksum is bad', () => {
      const bad = Buffer.from(frames[3]!);
      bad[54 + 2]! ^= 0xff;
      const [na] = decodeWithTshark([bad]);
      expect(na!.icmpv6!['icmpv6.checksum.status']).toBe('0');
      const d = decodeFrame(bad);
      expect(d.kind).toBe('na');
      expect((d as Extract<DecodedFrame, { kind: 'na' }>).checksumValid).toBe(false);
    });
  },
);
