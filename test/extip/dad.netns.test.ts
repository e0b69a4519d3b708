// Duplicate address detection on the external interface, against a real peer kernel on the
// same segment: an address the peer already holds is refused (named, with the peer's MAC)
// and never announced; a free one is probed first (RFC 4862 neighbor solicitations from ::,
// RFC 5227 ARP probes) and announced only after the wait. Checked on the wire with our own
// capture, tcpdump and tshark, and in the kernel's state as `ip` shows it.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { decodeFrame } from '../../src/extip/index.js';
import { ip, ipJson, privileged, waitFor } from '../helpers/netns.js';
import {
  NODE_MAC,
  PEER_MAC,
  capture,
  holderAddrs,
  makeLab,
  metric,
  startExtip,
  tcpdump,
  testConfig,
  writePcap,
} from './lab.js';

const { skip } = privileged();

const EXT4 = '10.20.0.190';
const EXT6 = '2001:db8:20::190';
/** Free addresses of the other family, whose bursts prove the announcer ran meanwhile. */
const CONTROL4 = '10.20.0.191';
const CONTROL6 = '2001:db8:20::191';

/** Our announcements of `ip`: gratuitous ARP, or an NA, from our MAC. */
const announcementOf = (ipText: string) => (f: Buffer) => {
  const d = decodeFrame(f);
  if (d.eth?.src !== NODE_MAC) return false;
  if (d.kind === 'arp') return d.senderIp === ipText;
  return d.kind === 'na' && d.target === ipText;
};

/** An ARP probe for `ipText` (RFC 5227 section 2.1.1) from our MAC. */
const arpProbeOf = (ipText: string) => (f: Buffer) => {
  const d = decodeFrame(f);
  return (
    d.kind === 'arp' &&
    d.eth.src === NODE_MAC &&
    d.eth.dst === 'ff:ff:ff:ff:ff:ff' &&
    d.op === 1 &&
    d.senderMac === NODE_MAC &&
    d.senderIp === '0.0.0.0' &&
    d.targetMac === '00:00:00:00:00:00' &&
    d.targetIp === ipText
  );
};

/** A DAD neighbor solicitation for the target (bytes 8..24 of the ICMPv6 body) from ::. */
const dadNsOf = (target: Buffer) => (f: Buffer) =>
  f.length >= 78 &&
  f.readUInt16BE(12) === 0x86dd &&
  f[20] === 58 &&
  f[54] === 135 &&
  f.subarray(22, 38).equals(Buffer.alloc(16)) &&
  f.subarray(62, 78).equals(target);

/**
 * Assigns `control` (a free IP) and waits until its whole burst is on the wire (`frames`
 * frames), then unassigns it: a burst for the refused IP, had one started at its refusal,
 * would be on the wire by then too. The absence below is proven on this, not by sleeping.
 */
async function controlBurst(
  extip: Awaited<ReturnType<typeof startExtip>>['extip'],
  cap: { frames: Buffer[] },
  control: string,
  frames: number,
): Promise<void> {
  await extip.assign([control]);
  await waitFor(() => cap.frames.filter(announcementOf(control)).length >= frames, {
    what: `the burst of ${control}`,
  });
  await extip.unassign([control]);
}

const EXT6_BYTES = Buffer.from('20010db8002000000000000000000190', 'hex');

function maddrs(ns: string): string[] {
  const links = ipJson<{ maddr?: { link?: string }[] }[]>(ns, 'maddr', 'show', 'dev', 'ext0');
  return (links[0]?.maddr ?? []).flatMap((m) => (m.link === undefined ? [] : [m.link]));
}

describe.skipIf(skip)('duplicate address detection on the external interface', () => {
  it('IPv6: the peer holds the address: assign fails naming it and the MAC, nothing announced', async () => {
    const lab = await makeLab('xdu6');
    ip(lab.peer, 'addr', 'add', `${EXT6}/64`, 'dev', 'peer0', 'nodad');
    const cap = capture(lab.peer, 'peer0');
    const dump = await tcpdump(lab.peer, 'peer0', ['ether', 'src', NODE_MAC]);
    const { extip, registry } = await startExtip(lab.node);
    const err = await extip.assign([EXT6]).then(
      () => undefined,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.code).toBe('FIBKEEPER_ERR_CONFLICT');
    expect(err?.message).toContain(EXT6);
    expect(err?.message).toContain(PEER_MAC);
    expect(err?.message).toMatch(/duplicate/);
    expect(extip.list()).toMatchObject([
      { ip: EXT6, state: 'failed', conflict: { mac: PEER_MAC, what: 'neighbor advertisement' } },
    ]);
    expect(extip.list()[0]?.lastError).toContain(PEER_MAC);
    expect(holderAddrs(lab.node)).toEqual([]); // never assigned
    expect(cap.frames.filter(dadNsOf(EXT6_BYTES)).length).toBeGreaterThanOrEqual(1);
    await controlBurst(extip, cap, CONTROL4, 6); // 3 × (request + reply)
    expect(cap.frames.filter(announcementOf(EXT6))).toEqual([]);
    expect(
      await metric(registry, 'fibkeeper_extip_dad_total', { family: 'ipv6', result: 'duplicate' }),
    ).toBe(1);
    expect(await metric(registry, 'fibkeeper_extip_assigned', { family: 'ipv6' })).toBe(0);
    expect(extip.health().ok).toBe(false);
    dump.stop();
    // tcpdump's reading: our frames are solicitations only, no advertisement
    expect(dump.lines.join('\n')).toMatch(
      /:: > ff02::1:ff00:190: .*neighbor solicitation.*who has 2001:db8:20::190/,
    );
    expect(dump.lines.join('\n')).not.toMatch(/neighbor advertisement/);

    // the peer gives the address up; the external interface comes up again: probed, assigned
    ip(lab.peer, 'addr', 'del', `${EXT6}/64`, 'dev', 'peer0');
    ip(lab.node, 'link', 'set', 'ext0', 'down');
    ip(lab.node, 'link', 'set', 'ext0', 'up');
    await waitFor(() => extip.list()[0]?.state === 'assigned', { what: 'the retry on link up' });
    expect(holderAddrs(lab.node)).toEqual([`${EXT6}/128 nodad`]);
    expect(extip.list()[0]).toMatchObject({ conflict: undefined, lastError: undefined });
  });

  it('IPv4: the peer holds the address: assign fails naming it and the MAC, nothing announced; retried once it is free', async () => {
    const lab = await makeLab('xdu4');
    ip(lab.peer, 'addr', 'add', `${EXT4}/24`, 'dev', 'peer0');
    const cap = capture(lab.peer, 'peer0');
    const dump = await tcpdump(lab.peer, 'peer0', ['arp', 'and', 'ether', 'src', NODE_MAC]);
    const { extip, registry } = await startExtip(lab.node);
    const err = await extip.assign([EXT4]).then(
      () => undefined,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.code).toBe('FIBKEEPER_ERR_CONFLICT');
    expect(err?.message).toContain(EXT4);
    expect(err?.message).toContain(PEER_MAC);
    expect(extip.list()).toMatchObject([
      { ip: EXT4, state: 'failed', conflict: { mac: PEER_MAC, what: 'ARP reply' } },
    ]);
    expect(holderAddrs(lab.node)).toEqual([]);
    expect(cap.frames.filter(arpProbeOf(EXT4)).length).toBeGreaterThanOrEqual(1);
    await controlBurst(extip, cap, CONTROL6, 3);
    expect(cap.frames.filter(announcementOf(EXT4))).toEqual([]);
    expect(
      await metric(registry, 'fibkeeper_extip_dad_total', { family: 'ipv4', result: 'duplicate' }),
    ).toBe(1);
    dump.stop();
    const text = dump.lines.join('\n');
    expect(text).toMatch(/Request who-has 10\.20\.0\.190 tell 0\.0\.0\.0/);
    expect(text).not.toMatch(/tell 10\.20\.0\.190|Reply/);

    // the peer gives the address up: the next check probes again and assigns it
    ip(lab.peer, 'addr', 'del', `${EXT4}/24`, 'dev', 'peer0');
    await extip.check();
    await waitFor(() => extip.list()[0]?.state === 'assigned', { what: 'the retry' });
    expect(extip.list()[0]).toMatchObject({ conflict: undefined, lastError: undefined });
    expect(holderAddrs(lab.node)).toEqual([`${EXT4}/32`]);
    expect(
      await metric(registry, 'fibkeeper_extip_dad_total', { family: 'ipv4', result: 'unique' }),
    ).toBe(1);
  });

  it('a free address: probes first (NS from ::, ARP probes), announcements only after the wait', async () => {
    const lab = await makeLab('xdf');
    const cap = capture(lab.peer, 'peer0');
    const probes = 3;
    const { extip } = await startExtip(
      lab.node,
      testConfig({ dadProbes: probes, dadInterval: 100, dadWait: 300 }),
    );
    const before = maddrs(lab.node);
    const t0 = Date.now();
    const done = extip.assign([EXT4, EXT6]);
    await waitFor(() => extip.list().every((s) => s.state === 'tentative'), {
      what: 'both IPs tentative',
    });
    // the solicited-node group of the IPv6 target is joined while probing
    expect(maddrs(lab.node)).toContain('33:33:ff:00:01:90');
    await done;
    const took = Date.now() - t0;
    expect(maddrs(lab.node)).toContain('33:33:ff:00:01:90'); // ours now: still listened for
    expect(took).toBeGreaterThanOrEqual((probes - 1) * 100 + 300 - 20);
    expect(extip.list().map((s) => s.state)).toEqual(['assigned', 'assigned']);
    await waitFor(() => cap.frames.filter(announcementOf(EXT6)).length >= 1);
    const arpProbes = cap.frames.filter(arpProbeOf(EXT4));
    const nsProbes = cap.frames.filter(dadNsOf(EXT6_BYTES));
    expect(arpProbes).toHaveLength(probes);
    expect(nsProbes).toHaveLength(probes);
    // every probe precedes the first announcement of its IP
    const firstAnn = (x: string) => cap.frames.findIndex(announcementOf(x));
    expect(cap.frames.lastIndexOf(arpProbes.at(-1)!)).toBeLessThan(firstAnn(EXT4));
    expect(cap.frames.lastIndexOf(nsProbes.at(-1)!)).toBeLessThan(firstAnn(EXT6));
    // the NS as RFC 4862 section 5.4.2 has it, per tshark: from ::, to the solicited-node
    // group (and its MAC), hop limit 255, no source link-layer option, a nonce (RFC 7527)
    const pcap = writePcap([nsProbes[0]!, arpProbes[0]!]);
    const fields = ['eth.dst', 'ipv6.src', 'ipv6.dst', 'ipv6.hlim', 'icmpv6.type'];
    fields.push('icmpv6.nd.ns.target_address', 'icmpv6.opt.type', 'icmpv6.checksum.status');
    const r = spawnSync(
      'tshark',
      ['-r', pcap, '-Y', 'icmpv6', '-T', 'fields', '-E', 'separator=|'].concat(
        fields.flatMap((f) => ['-e', f]),
      ),
      { encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(
      ['33:33:ff:00:01:90', '::', 'ff02::1:ff00:190', '255', '135', EXT6, '14', '1'].join('|'),
    );
    const malformed = spawnSync(
      'tshark',
      ['-r', pcap, '-Y', '_ws.malformed || _ws.expert.severity >= warning'],
      {
        encoding: 'utf8',
      },
    );
    expect(malformed.stdout.trim()).toBe('');
    // unassigned: the group is left again
    await extip.unassign([EXT6]);
    expect(maddrs(lab.node)).toEqual(before);
  });

  it('extip.dad: false assigns at once, with no probe', async () => {
    const lab = await makeLab('xdo');
    const cap = capture(lab.peer, 'peer0');
    const { extip, registry } = await startExtip(lab.node, testConfig({ dad: false }));
    await extip.assign([EXT4, EXT6]);
    expect(extip.list().map((s) => s.state)).toEqual(['assigned', 'assigned']);
    await waitFor(() => cap.frames.filter(announcementOf(EXT6)).length >= 1);
    expect(cap.frames.filter(arpProbeOf(EXT4))).toEqual([]);
    expect(cap.frames.filter(dadNsOf(EXT6_BYTES))).toEqual([]);
    expect(
      await metric(registry, 'fibkeeper_extip_dad_total', { family: 'ipv4', result: 'unique' }),
    ).toBe(0);
  });
});
