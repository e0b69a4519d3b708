// What fibkeeper must not send: with periodic refresh off, exactly one burst per IP when it is
// assigned, and nothing after it however many periodic checks run; one burst (and no error)
// when the external interface comes up again, even while its link-local address is still
// tentative. Counted on the wire.
//
// The periodic check runs every 50 ms here; the quiet part lasts until 20 checks have run after
// the bursts (counted: fibkeeper_extip_resyncs_total), never a fixed sleep.
// FIBKEEPER_EXTIP_QUIET_SECONDS=300 runs the quiet part for about five minutes of checks.
import { describe, expect, it } from 'vitest';
import { decodeFrame } from '../../src/extip/index.js';
import { ip, ipJson, privileged, sysctl, waitFor } from '../helpers/netns.js';
import { NODE_MAC, capture, makeLab, metric, startExtip, testConfig } from './lab.js';

const { skip } = privileged();

const QUIET_SECONDS = Number(process.env.FIBKEEPER_EXTIP_QUIET_SECONDS ?? '1');
const EXT4 = '10.20.0.210';
const EXT6 = '2001:db8:20::210';
type Registry = Awaited<ReturnType<typeof startExtip>>['registry'];

const sent = (registry: Registry, family: string, reason: string) =>
  metric(registry, 'fibkeeper_extip_announcements_sent_total', { family, reason });

/**
 * Both families have sent `n` announcements of reason 'burst' (a burst of 3: the first is
 * 'assign' or 'link', the other two 'burst'): the bursts up to there are over.
 */
async function burstsDone(registry: Registry, n: number): Promise<void> {
  await waitFor(
    async () =>
      (await sent(registry, 'ipv4', 'burst')) >= n && (await sent(registry, 'ipv6', 'burst')) >= n,
    { what: 'the bursts over' },
  );
}

/** The periodic checks that have run. */
const checks = (registry: Registry) =>
  metric(registry, 'fibkeeper_extip_resyncs_total', { reason: 'periodic' });

/**
 * An address added to ext0 and seen by the subsystem (validate() refuses it as a node
 * address): every link and address event before it has been handled too.
 */
async function eventsHandled(
  ns: string,
  extip: Awaited<ReturnType<typeof startExtip>>['extip'],
  marker: string,
): Promise<void> {
  ip(ns, 'addr', 'add', `${marker}/32`, 'dev', 'ext0');
  await waitFor(
    () => {
      try {
        extip.validate([marker]);
        return false;
      } catch {
        return true;
      }
    },
    { what: `the marker ${marker} seen` },
  );
}

/** Our announcements of `ip` (GARP request or reply, or NA, from our MAC). */
const ours = (ipText: string) => (f: Buffer) => {
  const d = decodeFrame(f);
  if (d.kind === 'arp') return d.gratuitous && d.senderIp === ipText && d.senderMac === NODE_MAC;
  return d.kind === 'na' && d.target === ipText && d.targetMac === NODE_MAC && !d.solicited;
};

describe.skipIf(skip)('no announcement beyond the rules', () => {
  it(
    'refresh off: one burst per IP on assign, and none during the periodic checks after it',
    { timeout: QUIET_SECONDS * 1000 + 30_000 },
    async () => {
      const lab = await makeLab('xq');
      const cap = capture(lab.peer, 'peer0');
      const { extip, registry } = await startExtip(
        lab.node,
        testConfig({ checkInterval: 50, refreshInterval: 0 }),
      );
      await extip.assign([EXT4, EXT6]);
      await burstsDone(registry, 2);
      // the quiet part: many checks after the bursts, each of which could have announced
      const from = await checks(registry);
      const want = Math.max(20, (QUIET_SECONDS * 1000) / 50 / 3);
      await waitFor(async () => (await checks(registry)) - from >= want, {
        timeoutMs: QUIET_SECONDS * 1000 + 20_000,
        what: `${want} periodic checks`,
      });
      expect(cap.frames.filter(ours(EXT4))).toHaveLength(6); // 3 × (request + reply)
      expect(cap.frames.filter(ours(EXT6))).toHaveLength(3);
      const ran = (await checks(registry)) - from;
      console.info(
        `quiet: ${ran} periodic checks after the bursts; frames on the wire: ` +
          `${cap.frames.filter(ours(EXT4)).length} GARP, ${cap.frames.filter(ours(EXT6)).length} NA`,
      );
      for (const family of ['ipv4', 'ipv6']) {
        expect(await sent(registry, family, 'link'), family).toBe(0);
        expect(await sent(registry, family, 'assign'), family).toBe(1);
        expect(await sent(registry, family, 'burst'), family).toBe(2);
      }
    },
  );

  it('link down and up while the link-local runs DAD: one burst per IP, no error', async () => {
    const lab = await makeLab('xqu');
    sysctl(lab.node, 'net.ipv6.conf.ext0.accept_dad', 1); // the link-local comes back tentative
    const { extip, registry } = await startExtip(lab.node);
    const cap = capture(lab.peer, 'peer0');
    await extip.assign([EXT4, EXT6]);
    await burstsDone(registry, 2); // the assign bursts are sent
    // and captured: the counter moves when a frame is sent, the capture sees it a turn later
    // (a last NA of the assign burst once arrived after the reset and counted as a fourth)
    await waitFor(
      () => cap.frames.filter(ours(EXT6)).length >= 3 && cap.frames.filter(ours(EXT4)).length >= 6,
      { what: 'the assign bursts captured' },
    );
    cap.frames.length = 0;
    ip(lab.node, 'link', 'set', 'ext0', 'down');
    ip(lab.node, 'link', 'set', 'ext0', 'up');
    const tentative = () =>
      ipJson<{ addr_info: { scope: string; tentative?: boolean }[] }[]>(
        lab.node,
        'addr',
        'show',
        'dev',
        'ext0',
      )[0]?.addr_info.some((a) => a.scope === 'link' && a.tentative === true);
    await waitFor(() => cap.frames.filter(ours(EXT6)).length >= 3, { what: 'the IPv6 burst' });
    // the link-local finishes DAD (about a second) and nothing more is sent for it
    await waitFor(() => !tentative(), { timeoutMs: 5000, what: 'the link-local usable' });
    // the events that made it usable are handled (a burst they set off would be counted now)
    await eventsHandled(lab.node, extip, '10.20.0.99');
    await burstsDone(registry, 4); // the link bursts are over too
    expect(cap.frames.filter(ours(EXT6))).toHaveLength(3);
    expect(cap.frames.filter(ours(EXT4))).toHaveLength(6);
    expect(await metric(registry, 'fibkeeper_extip_errors_total', { op: 'announce' })).toBe(0);
    expect(
      await metric(registry, 'fibkeeper_extip_announcements_sent_total', {
        family: 'ipv6',
        reason: 'link',
      }),
    ).toBe(1);
    expect(extip.health()).toEqual({ ok: true, reasons: [] });
  });
});
