// Assign IPv4 and IPv6 external IPs and check what reaches the wire, field by field, and
// cross-checked with tcpdump (live) and tshark (on the captured bytes); peers with an old
// neighbor entry update it; the NDP responder makes IPv6 external IPs reachable.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { decodeFrame, type ArpFrame, type NeighborAdvertFrame } from '../../src/extip/index.js';
import { ip, ipJson, privileged, sysctl, waitFor } from '../helpers/netns.js';
import {
  NODE_MAC,
  OLD_MAC,
  capture,
  framesMatching,
  holderAddrs,
  makeLab,
  metric,
  nsExecAsync,
  startExtip,
  tcpdump,
  testConfig,
  writePcap,
} from './lab.js';

const { skip } = privileged();

const EXT4 = '10.20.0.100';
const EXT6 = '2001:db8:20::100';

const isArpFor = (ipText: string) => (f: Buffer) => {
  const d = decodeFrame(f);
  return d.kind === 'arp' && d.senderIp === ipText;
};
const isNaFor = (ipText: string) => (f: Buffer) => {
  const d = decodeFrame(f);
  return d.kind === 'na' && d.target === ipText;
};

describe.skipIf(skip)('announcements on the wire', () => {
  it('IPv4: on the holder as /32; gratuitous ARP request and reply, exactly right', async () => {
    const lab = await makeLab('xa4');
    const cap = capture(lab.peer, 'peer0');
    const dump = await tcpdump(lab.peer, 'peer0', ['arp']);
    // without duplicate address detection (dad.netns.test.ts), to time the return alone
    const { extip, registry } = await startExtip(lab.node, testConfig({ dad: false }));
    const t0 = Date.now();
    await extip.assign([EXT4]);
    const took = Date.now() - t0;
    expect(holderAddrs(lab.node)).toEqual([`${EXT4}/32`]);
    expect(extip.list()).toMatchObject([{ ip: EXT4, state: 'assigned', lastError: undefined }]);
    expect(took).toBeLessThan(180); // returned before the second announcement (200 ms)

    const frames = await framesMatching(cap, isArpFor(EXT4), 6);
    const [req, rep] = frames.map((f) => decodeFrame(f) as ArpFrame);
    expect(req).toEqual({
      kind: 'arp',
      eth: { dst: 'ff:ff:ff:ff:ff:ff', src: NODE_MAC, etherType: 0x0806, vlans: [] },
      op: 1,
      senderMac: NODE_MAC,
      senderIp: EXT4,
      targetMac: '00:00:00:00:00:00',
      targetIp: EXT4,
      gratuitous: true,
    });
    expect(rep).toEqual({
      ...req,
      op: 2,
      targetMac: NODE_MAC,
    });
    // the burst: three announcements (request + reply each), then nothing more: an IP of the
    // other family assigned after it has its whole burst on the wire (three NAs), where a
    // fourth of EXT4 would be too
    const other = '2001:db8:20::101';
    await extip.assign([other]);
    await framesMatching(cap, isNaFor(other), 3);
    await extip.unassign([other]);
    expect(cap.frames.filter(isArpFor(EXT4))).toHaveLength(6);
    expect(cap.frames.filter(isArpFor(EXT4)).map((f) => (decodeFrame(f) as ArpFrame).op)).toEqual([
      1, 2, 1, 2, 1, 2,
    ]);
    expect(
      await metric(registry, 'fibkeeper_extip_announcements_sent_total', {
        family: 'ipv4',
        reason: 'assign',
      }),
    ).toBe(1);
    expect(
      await metric(registry, 'fibkeeper_extip_announcements_sent_total', {
        family: 'ipv4',
        reason: 'burst',
      }),
    ).toBe(2);
    expect(await metric(registry, 'fibkeeper_extip_assigned', { family: 'ipv4' })).toBe(1);

    // tcpdump's own reading of the same frames
    await waitFor(() => dump.lines.length >= 6, { what: 'tcpdump lines' });
    dump.stop();
    expect(dump.lines[0]).toMatch(
      new RegExp(
        `${NODE_MAC} > ff:ff:ff:ff:ff:ff, ethertype ARP \\(0x0806\\), length 42: Ethernet \\(len 6\\), IPv4 \\(len 4\\), Request who-has ${EXT4} tell ${EXT4}, length 28`,
      ),
    );
    expect(dump.lines[1]).toMatch(
      new RegExp(
        `${NODE_MAC} > ff:ff:ff:ff:ff:ff, ethertype ARP \\(0x0806\\), length 42: Ethernet \\(len 6\\), IPv4 \\(len 4\\), Reply ${EXT4} is-at ${NODE_MAC}, length 28`,
      ),
    );
  });

  it('IPv6: on the holder as /128 nodad; unsolicited NA, exactly right, checksum per tshark', async () => {
    const lab = await makeLab('xa6');
    const cap = capture(lab.peer, 'peer0');
    const { extip, registry } = await startExtip(lab.node);
    await extip.assign([EXT6]);
    expect(holderAddrs(lab.node)).toEqual([`${EXT6}/128 nodad`]);
    const frames = await framesMatching(cap, isNaFor(EXT6), 3);
    const na = decodeFrame(frames[0]!) as NeighborAdvertFrame;
    expect(na).toEqual({
      kind: 'na',
      eth: { dst: '33:33:00:00:00:01', src: NODE_MAC, etherType: 0x86dd, vlans: [] },
      srcIp: EXT6, // as the kernel: from the target itself
      dstIp: 'ff02::1',
      hopLimit: 255,
      code: 0,
      router: false,
      solicited: false,
      override: true,
      target: EXT6,
      targetMac: NODE_MAC,
      optionTypes: [2],
      checksum: na.checksum,
      checksumValid: true,
    });
    expect(frames[0]).toHaveLength(86);
    // 3 NAs and the 2 probes of duplicate address detection (testConfig: dadProbes 2)
    expect(await metric(registry, 'fibkeeper_extip_frames_sent_total', { family: 'ipv6' })).toBe(5);

    const pcap = writePcap([frames[0]!]);
    // tshark's reading of the captured bytes: fields, flags and the checksum verdict (1 = good)
    const fields = ['ipv6.src', 'ipv6.dst', 'ipv6.hlim', 'icmpv6.type', 'icmpv6.nd.na.flag.o'];
    fields.push('icmpv6.nd.na.flag.s', 'icmpv6.nd.na.target_address', 'icmpv6.opt.linkaddr');
    fields.push('icmpv6.checksum.status');
    const r = spawnSync(
      'tshark',
      ['-r', pcap, '-T', 'fields', '-E', 'separator=|', ...fields.flatMap((f) => ['-e', f])],
      { encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(
      [EXT6, 'ff02::1', '255', '136', '1', '0', EXT6, NODE_MAC, '1'].join('|'),
    );
  });

  it('a peer with an old neighbor entry updates it to our MAC (IPv4 arp_accept, IPv6 STALE)', async () => {
    const lab = await makeLab('xan');
    sysctl(lab.peer, 'net.ipv4.conf.peer0.arp_accept', 1);
    ip(lab.peer, 'neigh', 'replace', EXT4, 'lladdr', OLD_MAC, 'dev', 'peer0', 'nud', 'stale');
    ip(lab.peer, 'neigh', 'replace', EXT6, 'lladdr', OLD_MAC, 'dev', 'peer0', 'nud', 'stale');
    const { extip } = await startExtip(lab.node);
    await extip.assign([EXT4, EXT6]);
    const lladdr = (dst: string) =>
      ipJson<{ dst: string; lladdr?: string }[]>(lab.peer, 'neigh', 'show', 'dev', 'peer0').find(
        (n) => n.dst === dst,
      )?.lladdr;
    await waitFor(() => lladdr(EXT4) === NODE_MAC && lladdr(EXT6) === NODE_MAC, {
      what: 'the peer to learn our MAC',
    });
    expect(lladdr(EXT4)).toBe(NODE_MAC);
    expect(lladdr(EXT6)).toBe(NODE_MAC);
  });

  it('the peer reaches both external IPs (kernel ARP reply; our NDP responder)', async () => {
    const lab = await makeLab('xar');
    const { extip, registry } = await startExtip(lab.node);
    await extip.assign([EXT4, EXT6]);
    ip(lab.peer, 'neigh', 'flush', 'dev', 'peer0');
    // asynchronous: the responder runs on this process's event loop
    await nsExecAsync(lab.peer, 'ping', '-c', '1', '-W', '2', EXT4);
    await nsExecAsync(lab.peer, 'ping', '-6', '-c', '1', '-W', '2', EXT6);
    expect(
      await metric(registry, 'fibkeeper_extip_responses_sent_total', { family: 'ipv6' }),
    ).toBeGreaterThanOrEqual(1);
    // the kernel answers ARP for IPv4 (arp_ignore 0): no userspace reply needed
    expect(await metric(registry, 'fibkeeper_extip_responses_sent_total', { family: 'ipv4' })).toBe(
      0,
    );
  });
});
