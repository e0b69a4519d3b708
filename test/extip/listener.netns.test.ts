// The IPv6 listener's socket filter, run by the kernel: of the IPv6 frames that reach the
// external interface only neighbor solicitations and advertisements get to fibkeeper; data
// traffic, other ICMPv6 and other EtherTypes stay in the kernel.
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildNeighborAdvert } from '../../src/extip/index.js';
import { NDP_FILTER } from '../../src/extip/linkio.js';
import { ETH_P_IPV6, PacketSocket } from '../../src/native/index.js';
import { ifindexOf, privileged, waitFor } from '../helpers/netns.js';
import { NODE_MAC, PEER_MAC, PEER_V6, makeLab, neighborSolicit, sendFrom } from './lab.js';

const { skip } = privileged();

/** An IPv6 frame from the peer to the node with next header `nh` and `payload`. */
function ipv6Frame(nh: number, payload: Buffer): Buffer {
  const f = Buffer.alloc(14 + 40 + payload.length);
  Buffer.from(NODE_MAC.replaceAll(':', ''), 'hex').copy(f, 0);
  Buffer.from(PEER_MAC.replaceAll(':', ''), 'hex').copy(f, 6);
  f.writeUInt16BE(0x86dd, 12);
  f.writeUInt32BE(0x60000000, 14);
  f.writeUInt16BE(payload.length, 18);
  f[20] = nh;
  f[21] = 64;
  Buffer.from('20010db8002000000000000000000002', 'hex').copy(f, 22);
  Buffer.from('20010db8002000000000000000000001', 'hex').copy(f, 38);
  payload.copy(f, 54);
  return f;
}

describe.skipIf(skip)('the IPv6 listener filter', () => {
  it('passes neighbor solicitations and advertisements only', async () => {
    const lab = await makeLab('xlf');
    const sock = PacketSocket.open({
      ifindex: ifindexOf(lab.node, 'ext0'),
      netns: lab.node,
      protocol: ETH_P_IPV6,
    });
    onTestFinished(() => sock.close());
    sock.attachFilter(NDP_FILTER);
    const got: number[] = [];
    sock.receive({
      onFrame: (f) => got.push(f[20] === 58 ? f[54]! : -f[20]!),
      onError: () => undefined,
    });
    const ns = neighborSolicit({ ethSrc: PEER_MAC, srcIp: PEER_V6, target: '2001:db8:20::9' });
    const na = buildNeighborAdvert({ ethSrc: PEER_MAC, srcIp: PEER_V6, target: PEER_V6 });
    const echo = ipv6Frame(58, Buffer.from([128, 0, 0, 0, 0, 1, 0, 1]));
    const rs = ipv6Frame(58, Buffer.from([133, 0, 0, 0, 0, 0, 0, 0]));
    const redirect = ipv6Frame(58, Buffer.alloc(40, 137).fill(0, 1));
    const udp = ipv6Frame(17, Buffer.alloc(16));
    const hopByHop = ipv6Frame(
      0,
      Buffer.concat([Buffer.from([58, 0, 1, 4, 0, 0, 0, 0]), ns.subarray(54)]),
    );
    sendFrom(lab.peer, 'peer0', echo, udp, rs, redirect, hopByHop, ns, na);
    // the NA was sent last: once it is read, every frame before it was passed or filtered
    await waitFor(() => got.includes(136), { what: 'the NA' });
    expect(got).toEqual([135, 136]);
  });
});
