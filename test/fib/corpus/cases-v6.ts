// Corpus: IPv6 frames of the base scenario (default sysctls, policy 0).
import { A6 } from './lab.js';
import { c, f6, type Case } from './case.js';
import { PROTO, ah, cut, esp, ext, frag6, icmp6, pad, routing, tcp, udp } from './packets.js';

function withByte(frame: Buffer, off: number, v: number): Buffer {
  const f = Buffer.from(frame);
  f[14 + off] = v;
  return f;
}

/** A chain of extension headers (types in order) ending in UDP. */
function chain(types: number[], l4 = udp(4000, 5000)): { next: number; l4: Buffer } {
  const parts: Buffer[] = [];
  for (let i = 0; i < types.length; i++) {
    const next = types[i + 1] ?? PROTO.UDP;
    const t = types[i]!;
    if (t === PROTO.FRAGMENT) parts.push(frag6(next, 0, true));
    else if (t === PROTO.AH) parts.push(ah(next, 0x1000 + i));
    else if (t === PROTO.ROUTING) parts.push(routing(next, 4, 1));
    else parts.push(ext(next));
  }
  return { next: types[0] ?? PROTO.UDP, l4: Buffer.concat([...parts, l4]) };
}

export function v6Cases(): Case[] {
  const good = f6();
  const echo = icmp6(A6.client, A6.server, 128, 0, Buffer.alloc(16, 7), 0x00010001);
  const ns = icmp6(A6.client, A6.server, 135, 0, Buffer.concat([Buffer.alloc(16)]));
  return [
    c('IPv6 UDP to the server', good, 'fwd'),
    c('IPv6 TCP', f6({ next: PROTO.TCP, l4: tcp(40000, 443) }), 'fwd'),
    c('IPv6 ICMPv6 echo', f6({ next: PROTO.ICMPV6, l4: echo }), 'fwd'),
    c('IPv6 hop limit 2', f6({ hop: 2 }), 'fwd'),
    c('IPv6 traffic class and flow label', f6({ tcfl: 0x0b812345 }), 'fwd'),
    c('IPv6 to a multipath route', f6({ dst: 'fd99::1' }), 'fwd'),
    c('IPv6 to a single-path gateway route', f6({ dst: 'fd98::1' }), 'fwd'),
    // an unlocked route MTU of 1280 in the lab: larger packets are the kernel's
    c('IPv6 1400 bytes to a 1400 MTU', f6({ l4: udp(1, 2, 1400 - 48) }), 'reason:route_mtu'),
    c('IPv6 1280 bytes to a 1400 MTU', f6({ l4: udp(1, 2, 1280 - 48) }), 'fwd'),
    c('IPv6 1401 bytes to a 1400 MTU', f6({ l4: udp(1, 2, 1401 - 48) }), 'result:frag_needed'),
    c('IPv6 hop limit 1', f6({ hop: 1 }), 'reason:ttl'),
    c('IPv6 hop limit 0', f6({ hop: 0 }), 'reason:ttl'),
    // lengths
    c('IPv6 payload length 0, 40 bytes behind', pad(f6({ payloadLen: 0 }), 14), 'fwd'),
    c('IPv6 padded with 20 bytes', pad(good, 20, 0xee), 'fwd'),
    c('IPv6 payload length beyond the frame', f6({ payloadLen: 200 }), 'reason:ip6_bad'),
    c('IPv6 header cut at 20 bytes', cut(good, 34), 'reason:ip6_bad'),
    c('IPv6 header cut at 39 bytes', cut(good, 53), 'reason:ip6_bad'),
    c('version 4 in an IPv6 frame', withByte(good, 0, 0x40), 'reason:ip6_bad'),
    c('Ethernet header only (IPv6 type)', cut(good, 14), 'reason:ip6_bad'),
    // extension headers
    c('hop-by-hop options', f6(chain([PROTO.HOPOPTS])), 'reason:ip6_ext'),
    c('destination options', f6(chain([PROTO.DSTOPTS])), 'fwd'),
    c('routing header type 4, 1 segment left', f6(chain([PROTO.ROUTING])), 'fwd'),
    c(
      'routing header type 0, 1 segment left',
      f6({ next: PROTO.ROUTING, l4: Buffer.concat([routing(PROTO.UDP, 0, 1), udp(1, 2)]) }),
      'fwd',
    ),
    c('first fragment', f6(chain([PROTO.FRAGMENT])), 'fwd'),
    c(
      'middle fragment',
      f6({ next: PROTO.FRAGMENT, l4: Buffer.concat([frag6(PROTO.UDP, 100, true), udp(1, 2)]) }),
      'fwd',
    ),
    c('AH then UDP', f6(chain([PROTO.AH])), 'fwd'),
    c('ESP', f6({ next: PROTO.ESP, l4: esp(0xabcdef01) }), 'fwd'),
    c(
      'destination options, routing, fragment, AH, UDP',
      f6(chain([PROTO.DSTOPTS, PROTO.ROUTING, PROTO.FRAGMENT, PROTO.AH])),
      'fwd',
    ),
    c(
      'nine destination-options headers',
      f6(chain(Array(9).fill(PROTO.DSTOPTS))),
      'reason:ip6_ext',
    ),
    c('unknown next header 253', f6({ next: 253, l4: Buffer.alloc(16, 3) }), 'fwd'),
    c('no next header (59)', f6({ next: PROTO.NONE, l4: Buffer.alloc(0) }), 'fwd'),
    c(
      'destination options cut by the payload length',
      f6({ next: PROTO.DSTOPTS, l4: ext(PROTO.UDP, 2).subarray(0, 4) }),
      'reason:ip6_ext',
    ),
    // martians
    c('IPv6 source ::', f6({ src: '::' }), 'reason:martian_src'),
    c('IPv6 source ::1', f6({ src: '::1' }), 'reason:martian_src'),
    c('IPv6 source ::ffff:10.0.0.1', f6({ src: '::ffff:10.0.0.1' }), 'reason:martian_src'),
    c('IPv6 source ff02::1', f6({ src: 'ff02::1' }), 'reason:martian_src'),
    c('IPv6 source fe80::1', f6({ src: 'fe80::1' }), 'reason:martian_src'),
    c('IPv6 destination ::1', f6({ dst: '::1' }), 'reason:martian_dst'),
    c('IPv6 destination fe80::99', f6({ dst: 'fe80::99' }), 'reason:martian_dst'),
    c('IPv6 destination ff0e::1 in a unicast frame', f6({ dst: 'ff0e::1' }), 'reason:martian_dst'),
    c('IPv6 destination ff01::1 (interface-local)', f6({ dst: 'ff01::1' }), 'reason:martian_dst'),
    c('IPv6 source: the router', f6({ src: A6.r1 }), 'fwd'),
    // the kernel's own
    c('IPv6 destination: the router', f6({ dst: A6.r2 }), 'result:not_fwded'),
    c('IPv6 destination: subnet-router anycast', f6({ dst: 'fd61:2::' }), 'result:not_fwded'),
    c('IPv6 destination: an address on lo', f6({ dst: A6.lo }), 'result:not_fwded'),
    c(
      'IPv6 neighbor solicitation through the router',
      f6({ next: PROTO.ICMPV6, hop: 255, l4: ns }),
      'reason:ndisc',
    ),
    c('IPv6 blackhole route', f6({ dst: 'fd61:9:1::1' }), 'result:blackhole'),
    c('IPv6 unreachable route', f6({ dst: 'fd61:9:2::1' }), 'result:unreachable'),
    c('IPv6 prohibit route', f6({ dst: 'fd61:9:3::1' }), 'result:prohibit'),
    c('IPv6 to the default route', f6({ dst: 'fd00:dead::1' }), 'fwd'),
    c('IPv6 gateway without neighbor', f6({ dst: 'fd61:9:6::1' }), 'result:no_neigh'),
    c(
      'IPv6 1300 bytes, locked route MTU 1280',
      f6({ dst: 'fd61:9:8::1', l4: udp(1, 2, 1300 - 48) }),
      'result:frag_needed',
    ),
    c(
      'IPv6 1300 bytes, unlocked route MTU 1280',
      f6({ dst: 'fd61:9:7::1', l4: udp(1, 2, 1300 - 48) }),
      'reason:route_mtu',
    ),
    c('IPv6 out the device it came in on (hairpin)', f6({ dst: A6.hairpin }), 'reason:hairpin'),
  ];
}
