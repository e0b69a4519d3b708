import { describe, expect, it } from 'vitest';
import { arpMayConcern, type ArpInterest } from './arp-filter.js';
import { buildArpProbe, buildArpReply, buildGratuitousArp, decodeFrame } from './frames.js';

const ours = '198.51.100.7';
const probed = '198.51.100.9';
const who = (respondArp = true): ArpInterest => ({
  owns: (ip) => ip === ours,
  probing: (ip) => ip === probed,
  respondArp,
});

/** A plain ARP request: who has `target`, tell `sender` (broadcast). */
function request(sender: string, target: string): Buffer {
  const f = Buffer.alloc(42);
  f.fill(0xff, 0, 6);
  Buffer.from('020000000001', 'hex').copy(f, 6);
  f.writeUInt16BE(0x0806, 12);
  f.writeUInt16BE(1, 14);
  f.writeUInt16BE(0x0800, 16);
  f[18] = 6;
  f[19] = 4;
  f.writeUInt16BE(1, 20);
  Buffer.from('020000000001', 'hex').copy(f, 22);
  Buffer.from(sender.split('.').map(Number)).copy(f, 28);
  Buffer.from(target.split('.').map(Number)).copy(f, 38);
  return f;
}
const reply = (senderIp: string, targetIp: string): Buffer =>
  buildArpReply({
    senderMac: '02:00:00:00:00:02',
    senderIp,
    targetMac: '02:00:00:00:00:01',
    targetIp,
  });

describe('which ARP frames the listener decodes', () => {
  it('skips the neighbors’ replies and requests about other hosts', () => {
    const a = reply('192.0.2.10', '192.0.2.1');
    expect(decodeFrame(a)).toMatchObject({ kind: 'arp', op: 2, senderIp: '192.0.2.10' });
    expect(arpMayConcern(a, who())).toBe(false);
    expect(arpMayConcern(request('192.0.2.1', '192.0.2.10'), who())).toBe(false);
    // a reply to us about another host, even when its target is ours
    expect(arpMayConcern(reply('192.0.2.10', ours), who())).toBe(false);
  });

  it('decodes whatever may concern an IP we hold or probe for', () => {
    // another host claiming our IP or the one we probe for: request, reply, announcement
    expect(arpMayConcern(reply(ours, '192.0.2.1'), who())).toBe(true);
    expect(arpMayConcern(request(probed, '192.0.2.1'), who())).toBe(true);
    for (const form of ['request', 'reply'] as const) {
      const f = buildGratuitousArp({ mac: '02:00:00:00:00:02', ip: ours, form });
      expect(arpMayConcern(f, who())).toBe(true);
    }
    // another host's probe for the IP we probe for, or for one we hold (a question for us)
    expect(arpMayConcern(buildArpProbe({ ip: probed, mac: '02:00:00:00:00:02' }), who())).toBe(
      true,
    );
    expect(arpMayConcern(buildArpProbe({ ip: ours, mac: '02:00:00:00:00:02' }), who())).toBe(true);
    // a question for our IP: only while we answer ARP
    expect(arpMayConcern(request('192.0.2.1', ours), who(true))).toBe(true);
    expect(arpMayConcern(request('192.0.2.1', ours), who(false))).toBe(false);
  });

  it('decodes anything but plain Ethernet + IPv4 ARP, to be judged as before', () => {
    const short = request('192.0.2.1', '192.0.2.10').subarray(0, 41);
    expect(arpMayConcern(short, who())).toBe(true);
    const tagged = Buffer.concat([
      request('192.0.2.1', '192.0.2.10').subarray(0, 12),
      Buffer.from('8100000a', 'hex'),
      request('192.0.2.1', '192.0.2.10').subarray(12),
    ]);
    expect(arpMayConcern(tagged, who())).toBe(true);
    const ieee802 = request('192.0.2.1', '192.0.2.10');
    ieee802.writeUInt16BE(6, 14);
    expect(arpMayConcern(ieee802, who())).toBe(true);
  });
});
