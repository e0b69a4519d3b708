// Our neighbor advertisements against the kernel's own, as the reference: for an address on
// the external interface itself the kernel sends an unsolicited NA (ndisc_notify) and answers
// solicitations (multicast, unicast, duplicate address detection); fibkeeper does the same
// for an external IP on the holder. The frames must be equal byte for byte except where the
// address is (the target, and the IPv6 source, which the kernel sets to the target too) and
// the checksum — with forwarding off and on (the router flag).
import { describe, expect, it } from 'vitest';
import { decodeFrame } from '../../src/extip/index.js';
import { ip, privileged, sysctl, waitFor } from '../helpers/netns.js';
import {
  NODE_MAC,
  PEER_MAC,
  PEER_V6,
  capture,
  framesMatching,
  makeLab,
  neighborSolicit,
  sendFrom,
  startExtip,
  testConfig,
} from './lab.js';

const { skip } = privileged();

const KERNEL = '2001:db8:20::1:5'; // on ext0: the kernel answers for it
const OURS = '2001:db8:20::1:6'; // on the holder: fibkeeper answers for it
const LATER = '2001:db8:20::1:7';

const naFor = (target: string) => (f: Buffer) => {
  const d = decodeFrame(f);
  return d.kind === 'na' && d.target === target && d.eth.src === NODE_MAC;
};

/** The frame with the target (ICMPv6 bytes 8..24), a source equal to it, and the checksum zeroed. */
function masked(f: Buffer): Buffer {
  const m = Buffer.from(f);
  const target = f.subarray(62, 78);
  if (f.subarray(22, 38).equals(target)) m.fill(0, 22, 38);
  m.fill(0, 62, 78);
  m.fill(0, 56, 58);
  return m;
}

/** Readable differences, for the failure message. */
function describeNa(f: Buffer): string {
  const d = decodeFrame(f);
  if (d.kind !== 'na') return JSON.stringify(d);
  const srcIp = d.srcIp === d.target ? '(the target)' : d.srcIp;
  return JSON.stringify({ ...d, srcIp, checksum: undefined, target: undefined });
}

const solicitations = (target: string) => ({
  // address resolution: multicast to the solicited-node group, with our source link-layer
  multicast: neighborSolicit({ ethSrc: PEER_MAC, srcIp: PEER_V6, target }),
  // reachability confirmation: unicast to the target at our MAC
  unicast: neighborSolicit({
    ethSrc: PEER_MAC,
    ethDst: NODE_MAC,
    srcIp: PEER_V6,
    dstIp: target,
    target,
  }),
  // another host's duplicate address detection: from ::
  dad: neighborSolicit({ ethSrc: PEER_MAC, srcIp: '::', target }),
});

describe.skipIf(skip)('neighbor advertisements equal the kernel’s own', () => {
  for (const forwarding of [0, 1]) {
    it(`forwarding=${forwarding}: unsolicited NA and the answers to NS (multicast, unicast, DAD)`, async () => {
      const lab = await makeLab(`xk${forwarding}`);
      sysctl(lab.node, 'net.ipv6.conf.ext0.forwarding', forwarding);
      sysctl(lab.node, 'net.ipv6.conf.ext0.ndisc_notify', 1);
      const cap = capture(lab.peer, 'peer0');
      // not nodad (accept_dad is 0 here): the kernel completes "DAD" at once and, with
      // ndisc_notify, sends its unsolicited NA
      ip(lab.node, 'addr', 'add', `${KERNEL}/64`, 'dev', 'ext0');
      const [kernelUnsolicited] = await framesMatching(cap, naFor(KERNEL), 1);
      const { extip } = await startExtip(lab.node, testConfig({ announceCount: 1 }));
      await extip.assign([OURS]);
      const [oursUnsolicited] = await framesMatching(cap, naFor(OURS), 1);
      expect(describeNa(oursUnsolicited!)).toBe(describeNa(kernelUnsolicited!));
      expect(masked(oursUnsolicited!).toString('hex')).toBe(
        masked(kernelUnsolicited!).toString('hex'),
      );
      expect(decodeFrame(oursUnsolicited!)).toMatchObject({ router: forwarding === 1 });

      const k = solicitations(KERNEL);
      const o = solicitations(OURS);
      for (const kind of ['multicast', 'unicast', 'dad'] as const) {
        cap.frames.length = 0;
        sendFrom(lab.peer, 'peer0', k[kind]);
        const [kernelNa] = await framesMatching(cap, naFor(KERNEL), 1);
        sendFrom(lab.peer, 'peer0', o[kind]);
        const [ourNa] = await framesMatching(cap, naFor(OURS), 1);
        expect(describeNa(ourNa!), kind).toBe(describeNa(kernelNa!));
        expect(masked(ourNa!).toString('hex'), kind).toBe(masked(kernelNa!).toString('hex'));
      }

      // the forwarding setting changes: a burst that starts a second later at most follows it
      // (each try a new IP, so each is a burst of its own)
      sysctl(lab.node, 'net.ipv6.conf.ext0.forwarding', 1 - forwarding);
      const changedAt = Date.now();
      let tries = 0;
      await waitFor(
        async () => {
          const next = `${LATER}${tries++}`;
          cap.frames.length = 0;
          await extip.assign([next]);
          const [later] = await framesMatching(cap, naFor(next), 1);
          return (decodeFrame(later!) as { router?: boolean }).router === (forwarding === 0);
        },
        { timeoutMs: 5000, intervalMs: 100, what: 'an NA with the new router flag' },
      );
      expect(Date.now() - changedAt).toBeLessThan(1000 + 1000); // its cache's age, and slack
    });
  }
});
