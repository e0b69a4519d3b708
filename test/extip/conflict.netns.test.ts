// Conflicts (another host claiming an external IP), the ARP responder under arp_ignore,
// and the bursts that link changes and the periodic refresh cause — all seen on the wire.
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  buildArpReply,
  buildNeighborAdvert,
  decodeFrame,
  type ArpFrame,
} from '../../src/extip/index.js';
import { ip, privileged, sysctl, waitFor } from '../helpers/netns.js';
import {
  NODE_MAC,
  PEER_MAC,
  PEER_V4,
  PEER_V6,
  capture,
  framesMatching,
  makeLab,
  metric,
  nsExecAsync,
  recordingLogger,
  sendFrom,
  startExtip,
  testConfig,
} from './lab.js';
import { PacketSocket } from '../../src/native/index.js';
import { ifindexOf } from '../helpers/netns.js';

const { skip } = privileged();

const EXT4 = '10.20.0.170';
const EXT6 = '2001:db8:20::170';

/** Our announcements of `ip` (GARP request/reply, or unsolicited NA from our MAC). */
const ours =
  (ipText: string, mac = NODE_MAC) =>
  (f: Buffer) => {
    const d = decodeFrame(f);
    if (d.kind === 'arp') return d.gratuitous && d.senderIp === ipText && d.senderMac === mac;
    return d.kind === 'na' && d.target === ipText && d.targetMac === mac && !d.solicited;
  };

describe.skipIf(skip)('conflicts', () => {
  it('an ARP reply for our IP from another MAC is counted and answered with a re-announcement', async () => {
    const lab = await makeLab('xcf');
    const { extip, registry } = await startExtip(lab.node, testConfig({ announceCount: 1 }));
    await extip.assign([EXT4]);
    /** An ARP reply from the peer's MAC that says `ip` is at it. */
    const claim = (ip: string) =>
      sendFrom(
        lab.peer,
        'peer0',
        buildArpReply({
          senderMac: PEER_MAC,
          senderIp: ip,
          targetMac: NODE_MAC,
          targetIp: '10.20.0.1',
        }),
      );
    const conflicts = () => metric(registry, 'fibkeeper_extip_conflicts_total', { family: 'ipv4' });
    const cap = capture(lab.peer, 'peer0');
    claim(EXT4);
    const seen = await framesMatching(cap, ours(EXT4), 2); // request + reply forms
    expect(seen.map((f) => (decodeFrame(f) as ArpFrame).op)).toEqual([1, 2]);
    expect(await conflicts()).toBe(1);
    expect(
      await metric(registry, 'fibkeeper_extip_announcements_sent_total', {
        family: 'ipv4',
        reason: 'defend',
      }),
    ).toBe(1);
    // a second claim within the defend interval: counted, not answered (rate limit)
    claim(EXT4);
    await waitFor(async () => (await conflicts()) === 2);
    // the defence is decided with the count (same frame, same turn): none for the second
    const defended = () =>
      metric(registry, 'fibkeeper_extip_announcements_sent_total', {
        family: 'ipv4',
        reason: 'defend',
      });
    expect(await defended()).toBe(1);
    expect(cap.frames.filter(ours(EXT4))).toHaveLength(2);
    // a claim for an IP that is not ours is nobody's business
    claim(PEER_V4);
    // then one for ours: once it is counted, the frame before it was read (one socket, in
    // order), and counted only if it was ours
    claim(EXT4);
    await waitFor(async () => (await conflicts()) >= 3);
    expect(await conflicts()).toBe(3);
  });

  it('a neighbor advertisement for our IPv6 from another MAC is counted and defended', async () => {
    const lab = await makeLab('xc6');
    const { extip, registry } = await startExtip(lab.node, testConfig({ announceCount: 1 }));
    await extip.assign([EXT6]);
    const cap = capture(lab.peer, 'peer0');
    sendFrom(
      lab.peer,
      'peer0',
      buildNeighborAdvert({
        ethSrc: PEER_MAC,
        srcIp: PEER_V6,
        target: EXT6,
        override: true,
        targetMac: PEER_MAC,
      }),
    );
    await framesMatching(cap, ours(EXT6), 1);
    expect(await metric(registry, 'fibkeeper_extip_conflicts_total', { family: 'ipv6' })).toBe(1);
  });
});

describe.skipIf(skip)('a claim storm', () => {
  it('10,000 claiming frames: log lines bounded, defence rate-limited, the agent healthy', async () => {
    const lab = await makeLab('xcs');
    const { log, lines } = recordingLogger();
    const defendIntervalMs = 1000;
    const { extip, registry } = await startExtip(
      lab.node,
      testConfig({ announceCount: 1, defendInterval: defendIntervalMs, defendRate: 20 }),
      log,
    );
    await extip.assign([EXT4, EXT6]);
    // what reaches the peer from the node (not the peer's own 10,000 frames)
    const fromNode: Buffer[] = [];
    const capSock = PacketSocket.open({
      ifindex: ifindexOf(lab.peer, 'peer0'),
      netns: lab.peer,
      ignoreOutgoing: true,
    });
    onTestFinished(() => capSock.close());
    capSock.receive({ onFrame: (f) => fromNode.push(Buffer.from(f)), onError: () => undefined });
    const macs = Array.from({ length: 16 }, (_, i) => `02:00:00:0e:01:${(i + 16).toString(16)}`);
    const frames: Buffer[] = [];
    for (let i = 0; i < 10_000; i++) {
      const mac = macs[i % macs.length]!;
      frames.push(
        i % 2 === 0
          ? buildArpReply({
              senderMac: mac,
              senderIp: EXT4,
              targetMac: NODE_MAC,
              targetIp: '10.20.0.1',
            })
          : buildNeighborAdvert({
              ethSrc: mac,
              srcIp: PEER_V6,
              target: EXT6,
              override: true,
              targetMac: mac,
            }),
      );
    }
    const sock = PacketSocket.open({
      ifindex: ifindexOf(lab.peer, 'peer0'),
      netns: lab.peer,
      protocol: 0,
    });
    const t0 = Date.now();
    try {
      // in rounds of 500, so that the agent (on this event loop) reads between them
      for (let i = 0; i < frames.length; i += 500) {
        for (const f of frames.slice(i, i + 500)) sock.send(f);
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      sock.close();
    }
    const conflicts = async () =>
      (await metric(registry, 'fibkeeper_extip_conflicts_total', { family: 'ipv4' })) +
      (await metric(registry, 'fibkeeper_extip_conflicts_total', { family: 'ipv6' }));
    // every claim that reached the listener is counted (a few may be dropped by the socket)
    let seen = -1;
    await waitFor(
      async () => {
        const now = await conflicts();
        const stable = now === seen;
        seen = now;
        return stable;
      },
      { intervalMs: 300, what: 'the claims to be read' },
    );
    expect(seen).toBeGreaterThan(5000);
    const stormMs = Date.now() - t0;
    // a summary follows within one defend interval of the last claim: every claim in a line
    const summed = () =>
      lines
        .filter((l) => /claim/i.test(l.msg) && typeof l.claims === 'number')
        .reduce((n, l) => n + (l.claims as number), 0);
    await waitFor(() => summed() + 1 === seen, {
      timeoutMs: defendIntervalMs + 5000,
      what: 'the summary of the last claims',
    });
    const conflictLines = lines.filter((l) => /claim/i.test(l.msg));
    // one line at the first claim, then at most one summary per defend interval
    expect(conflictLines.length).toBeGreaterThanOrEqual(2);
    expect(conflictLines.length).toBeLessThanOrEqual(2 + Math.ceil(stormMs / defendIntervalMs));
    const summaries = conflictLines.filter((l) => typeof l.claims === 'number');
    const total = summaries.reduce((n, l) => n + (l.claims as number), 0);
    expect(total + 1).toBe(seen); // every claim is in a line: the first alone, the rest summed
    expect(summaries[0]).toMatchObject({ intervalMs: expect.any(Number) });
    expect((summaries[0]!.macs as string[]).length).toBeLessThanOrEqual(8);
    expect(summaries[0]!.macCount).toBe(16);
    // defence: at most one re-announcement per IP per defend interval
    const defences = fromNode.filter((f) => {
      const d = decodeFrame(f);
      return d.eth?.src === NODE_MAC && (d.kind === 'arp' || (d.kind === 'na' && !d.solicited));
    });
    const perIp = 1 + Math.ceil(stormMs / defendIntervalMs);
    expect(defences.length).toBeLessThanOrEqual(2 * perIp + perIp); // IPv4: 2 frames each
    expect(defences.length).toBeGreaterThanOrEqual(3);
    const defended = async (family: string) =>
      metric(registry, 'fibkeeper_extip_announcements_sent_total', { family, reason: 'defend' });
    expect(await defended('ipv4')).toBeLessThanOrEqual(perIp);
    expect(await defended('ipv6')).toBeLessThanOrEqual(perIp);
    console.info(
      `claim storm: 10000 frames sent in ${stormMs} ms, ${seen} counted, ` +
        `${conflictLines.length} log lines, ${defences.length} defence frames`,
    );
    // healthy, and still answering
    expect(extip.health()).toEqual({ ok: true, reasons: [] });
    ip(lab.peer, 'neigh', 'flush', 'dev', 'peer0');
    await nsExecAsync(lab.peer, 'ping', '-c', '1', '-W', '2', EXT4);
    await nsExecAsync(lab.peer, 'ping', '-6', '-c', '1', '-W', '2', EXT6);
  });
});

describe.skipIf(skip)('ARP responder', () => {
  it('answers ARP for external IPs when arp_ignore keeps the kernel quiet', async () => {
    const lab = await makeLab('xcr');
    sysctl(lab.node, 'net.ipv4.conf.all.arp_ignore', 1);
    const { extip, registry } = await startExtip(lab.node);
    await extip.assign([EXT4]);
    ip(lab.peer, 'neigh', 'flush', 'dev', 'peer0');
    await nsExecAsync(lab.peer, 'ping', '-c', '1', '-W', '2', EXT4);
    expect(
      await metric(registry, 'fibkeeper_extip_responses_sent_total', { family: 'ipv4' }),
    ).toBeGreaterThanOrEqual(1);
    // and without the responder (arpResponder: never) the same ping fails: the kernel is quiet
    await extip.stop();
    // (one announcement at start-up, over before the ping: a later one would answer it)
    const quiet = await startExtip(
      lab.node,
      testConfig({ arpResponder: 'never', announceCount: 1 }),
    );
    expect(quiet.extip.list().map((s) => s.ip)).toEqual([EXT4]);
    await waitFor(
      async () =>
        (await metric(quiet.registry, 'fibkeeper_extip_announcements_sent_total', {
          family: 'ipv4',
          reason: 'assign',
        })) === 1,
      { what: 'the announcement at start-up' },
    );
    ip(lab.peer, 'neigh', 'flush', 'dev', 'peer0');
    await expect(nsExecAsync(lab.peer, 'ping', '-c', '1', '-W', '1', EXT4)).rejects.toThrow();
  });
});

describe.skipIf(skip)('bursts on link changes and refresh', () => {
  it('the external interface coming up, or changing its MAC, triggers a new burst', async () => {
    const lab = await makeLab('xcl');
    const { extip, registry } = await startExtip(lab.node, testConfig({ announceCount: 2 }));
    await extip.assign([EXT4, EXT6]);
    const cap = capture(lab.peer, 'peer0');
    const burst = (family: string) =>
      metric(registry, 'fibkeeper_extip_announcements_sent_total', { family, reason: 'burst' });
    // the assign bursts are over (2 announcements: 'assign', then one 'burst')
    await waitFor(async () => (await burst('ipv4')) === 1 && (await burst('ipv6')) === 1);
    cap.frames.length = 0;
    ip(lab.node, 'link', 'set', 'ext0', 'down');
    ip(lab.node, 'link', 'set', 'ext0', 'up');
    await framesMatching(cap, ours(EXT4), 4); // 2 announcements × (request + reply)
    await framesMatching(cap, ours(EXT6), 2);
    const NEW_MAC = '02:00:00:0e:00:77';
    ip(lab.node, 'link', 'set', 'ext0', 'address', NEW_MAC);
    await framesMatching(cap, ours(EXT4, NEW_MAC), 4);
    await framesMatching(cap, ours(EXT6, NEW_MAC), 2);
    expect(extip.externalInterface?.mac).toBe(NEW_MAC);
    expect(extip.health()).toEqual({ ok: true, reasons: [] }); // down and up again: healthy
    expect(
      await metric(registry, 'fibkeeper_extip_announcements_sent_total', {
        family: 'ipv4',
        reason: 'link',
      }),
    ).toBe(2);
  });

  it('an external interface deleted and created again is used again, with a burst', async () => {
    const lab = await makeLab('xcd');
    const { extip } = await startExtip(lab.node, testConfig({ announceCount: 1 }));
    await extip.assign([EXT4]);
    ip(lab.node, 'link', 'del', 'ext0');
    await waitFor(() => extip.health().reasons.some((r) => /external interface missing/.test(r)));
    ip(
      lab.node,
      'link',
      'add',
      'ext0',
      'address',
      NODE_MAC,
      'type',
      'veth',
      'peer',
      'name',
      'peer0',
      'netns',
      lab.peer,
    );
    const cap = capture(lab.peer, 'peer0');
    ip(lab.peer, 'link', 'set', 'peer0', 'up');
    ip(lab.node, 'link', 'set', 'ext0', 'up');
    await framesMatching(cap, ours(EXT4), 2);
    expect(extip.ready()).toEqual({ ok: true, reasons: [] });
    expect(extip.health()).toEqual({ ok: true, reasons: [] });
  });

  it('the periodic refresh re-announces every IP', async () => {
    const lab = await makeLab('xcp');
    const { extip } = await startExtip(
      lab.node,
      testConfig({ announceCount: 1, refreshInterval: 1000 }),
    );
    const cap = capture(lab.peer, 'peer0');
    await extip.assign([EXT4]);
    const frames = await framesMatching(cap, ours(EXT4), 6, 4000); // assign + 2 refreshes
    expect(frames).toHaveLength(6);
    await extip.unassign([EXT4]);
    const n = cap.frames.filter(ours(EXT4)).length;
    // another IP assigned now is refreshed a full interval later, after EXT4's next refresh
    // would have been due: once its refresh is on the wire, EXT4's absence is proven
    const other = '10.20.0.171';
    await extip.assign([other]);
    await framesMatching(cap, ours(other), 4, 4000); // assign + 1 refresh, 2 frames each
    expect(cap.frames.filter(ours(EXT4))).toHaveLength(n); // no refresh after unassign
  });
});
