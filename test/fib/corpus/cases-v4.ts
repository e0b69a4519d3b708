// Corpus: Ethernet and IPv4 frames of the base scenario (default sysctls, policy 0).
import { A, CMAC, RMAC } from './lab.js';
import { c, f4, f6, type Case } from './case.js';
import {
  ETH_P_8021AD,
  ETH_P_8021Q,
  ETH_P_ARP,
  ETH_P_IP,
  OPT,
  PROTO,
  arpRequest,
  cut,
  eth,
  icmp4,
  inetChecksum,
  ipv4,
  options,
  pad,
  setCsum4,
  tcp,
  udp,
  vlan,
} from './packets.js';

const OTHER_MAC = '02:fb:00:00:01:99';

export function l2Cases(): Case[] {
  const inner = f4().subarray(14);
  return [
    c('IPv4 to another host MAC', f4({ dmac: OTHER_MAC }), 'reason:l2_otherhost'),
    c('IPv6 to another host MAC', f6({ dmac: OTHER_MAC }), 'reason:l2_otherhost'),
    c('IPv4 unicast in a broadcast frame', f4({ dmac: 'ff:ff:ff:ff:ff:ff' }), 'reason:l2_mcast'),
    c(
      'IPv4 multicast 224.1.2.3 in a multicast frame',
      f4({ dmac: '01:00:5e:01:02:03', dst: '224.1.2.3' }),
      'reason:l2_mcast',
    ),
    c(
      'IPv6 ff02::1 in a multicast frame',
      f6({ dmac: '33:33:00:00:00:01', dst: 'ff02::1' }),
      'reason:l2_mcast',
    ),
    c('802.1Q VLAN 5', eth(RMAC.r1, CMAC, ETH_P_8021Q, vlan(5, ETH_P_IP, inner)), 'reason:vlan'),
    c(
      '802.1Q priority tag (VLAN 0)',
      eth(RMAC.r1, CMAC, ETH_P_8021Q, vlan(0, ETH_P_IP, inner)),
      'reason:vlan',
    ),
    c(
      'QinQ 802.1ad + 802.1Q',
      eth(RMAC.r1, CMAC, ETH_P_8021AD, vlan(7, ETH_P_8021Q, vlan(5, ETH_P_IP, inner))),
      'reason:vlan',
    ),
    c(
      'ARP request for the router',
      eth(RMAC.r1, CMAC, ETH_P_ARP, arpRequest(CMAC, A.client, A.r1)),
      'reason:arp',
    ),
    c('another EtherType', eth(RMAC.r1, CMAC, 0x88b5, Buffer.alloc(46, 1)), 'reason:non_ip'),
    c('Ethernet header only (IPv4 type)', cut(f4(), 14), 'reason:ip4_bad'),
  ];
}

function withHeaderByte(frame: Buffer, off: number, v: number): Buffer {
  const f = Buffer.from(frame);
  f[14 + off] = v;
  return f;
}

function echo(size = 16): Buffer {
  return icmp4(8, 0, Buffer.alloc(size, 0x42), 0x12340001);
}

export function v4Cases(): Case[] {
  const good = f4();
  const csum = good.readUInt16BE(24);
  const short = f4({ l4: echo(0), proto: PROTO.ICMP }); // 28-byte packet
  return [
    // forwarded
    c('UDP to the server', good, 'fwd'),
    c('TCP to the server', f4({ proto: PROTO.TCP, l4: tcp(40000, 80) }), 'fwd'),
    c('ICMP echo to the server', f4({ proto: PROTO.ICMP, l4: echo() }), 'fwd'),
    c('TTL 2', f4({ ttl: 2 }), 'fwd'),
    c('DSCP EF', f4({ tos: 0xb8 }), 'fwd'),
    c('no L4 header (protocol 253)', f4({ proto: 253, l4: Buffer.alloc(0) }), 'fwd'),
    c('UDP header cut at 3 bytes', f4({ l4: udp(1, 2).subarray(0, 3) }), 'fwd'),
    // the lab has a route with an unlocked MTU of 1000: larger packets are the kernel's
    c('1400 bytes to a 1400 MTU', f4({ l4: udp(1, 2, 1400 - 28) }), 'reason:route_mtu'),
    c('1000 bytes to a 1400 MTU', f4({ l4: udp(1, 2, 1000 - 28) }), 'fwd'),
    c('to a single-path gateway route', f4({ dst: '10.98.1.1' }), 'fwd'),
    c('to a multipath route', f4({ dst: '10.99.1.1' }), 'fwd'),
    c('first fragment (MF, offset 0)', f4({ frag: 0x2000 }), 'fwd'),
    c('middle fragment', f4({ frag: 0x2000 | 100 }), 'fwd'),
    c('last fragment', f4({ frag: 200 }), 'fwd'),
    c('DF and MF together', f4({ frag: 0x6000 | 3 }), 'fwd'),
    // TTL
    c('TTL 1', f4({ ttl: 1 }), 'reason:ttl'),
    c('TTL 0', f4({ ttl: 0 }), 'reason:ttl'),
    // header checksum
    c('header checksum wrong', setCsum4(good, csum ^ 0x1111), 'reason:ip4_csum'),
    c('header checksum 0', setCsum4(good, 0), 'reason:ip4_csum'),
    c('header checksum 0xffff', setCsum4(good, 0xffff), 'reason:ip4_csum'),
    // header and length edges
    c('IHL 4', withHeaderByte(good, 0, 0x44), 'reason:ip4_bad'),
    c('IHL 15 beyond the frame', withHeaderByte(good, 0, 0x4f), 'reason:ip4_bad'),
    c('version 6 in an IPv4 frame', withHeaderByte(good, 0, 0x65), 'reason:ip4_bad'),
    c('total length 19', f4({ totLen: 19 }), 'reason:ip4_bad'),
    c('total length beyond the frame', f4({ totLen: 200 }), 'reason:ip4_bad'),
    c('header cut at 1 byte', cut(good, 15), 'reason:ip4_bad'),
    c('header cut at 10 bytes', cut(good, 24), 'reason:ip4_bad'),
    c('header cut at 19 bytes', cut(good, 33), 'reason:ip4_bad'),
    c('options cut (IHL 6, 22 bytes)', cut(withHeaderByte(good, 0, 0x46), 36), 'reason:ip4_bad'),
    c('28-byte packet padded to 60 bytes', pad(short, 60 - short.length), 'fwd'),
    c('trailing garbage after the packet', pad(good, 100, 0xee), 'fwd'),
    c('60-byte packet in a 1514-byte frame', pad(f4({ l4: udp(1, 2, 32) }), 1514 - 74), 'fwd'),
    c('1401 bytes with DF to a 1400 MTU', f4({ l4: udp(1, 2, 1401 - 28) }), 'result:frag_needed'),
    c(
      '1401 bytes without DF to a 1400 MTU',
      f4({ l4: udp(1, 2, 1401 - 28), frag: 0 }),
      'result:frag_needed',
    ),
    // martian destinations and sources
    c('destination 0.0.0.0', f4({ dst: '0.0.0.0' }), 'reason:martian_dst'),
    c('destination 0.1.2.3', f4({ dst: '0.1.2.3' }), 'reason:martian_dst'),
    c('destination 255.255.255.255', f4({ dst: '255.255.255.255' }), 'reason:martian_dst'),
    c('destination 224.1.2.3 in a unicast frame', f4({ dst: '224.1.2.3' }), 'reason:martian_dst'),
    c('destination 127.0.0.1', f4({ dst: '127.0.0.1' }), 'reason:martian_dst'),
    c('source 127.0.0.1', f4({ src: '127.0.0.1' }), 'reason:martian_src'),
    c('source 0.0.0.0', f4({ src: '0.0.0.0' }), 'reason:martian_src'),
    c('source 224.0.0.5', f4({ src: '224.0.0.5' }), 'reason:martian_src'),
    c('source 255.255.255.255', f4({ src: '255.255.255.255' }), 'reason:martian_src'),
    c(
      'source and destination 0.0.0.0',
      f4({ src: '0.0.0.0', dst: '0.0.0.0' }),
      'reason:martian_src',
    ),
    c('source 240.0.0.1 (class E)', f4({ src: '240.0.0.1' }), 'reason:martian_src'),
    c('source: the router (ingress address)', f4({ src: A.r1 }), 'reason:local_src'),
    c('source: the router (egress address)', f4({ src: A.r2 }), 'reason:local_src'),
    c('source: an address on lo', f4({ src: A.lo }), 'reason:local_src'),
    c('source in a local route (AnyIP)', f4({ src: '10.62.0.7' }), 'reason:local_src'),
    c('source: a subnet broadcast', f4({ src: '10.61.2.255' }), 'reason:local_src'),
    // the kernel's own
    c('destination: the router', f4({ dst: A.r2 }), 'result:not_fwded'),
    c('destination: a subnet broadcast', f4({ dst: '10.61.2.255' }), 'result:not_fwded'),
    c('destination: an address on lo', f4({ dst: A.lo }), 'result:not_fwded'),
    c('destination in a local route (AnyIP)', f4({ dst: '10.62.0.5' }), 'result:not_fwded'),
    c('blackhole route', f4({ dst: '10.9.1.1' }), 'result:blackhole'),
    c('unreachable route', f4({ dst: '10.9.2.1' }), 'result:unreachable'),
    c('prohibit route', f4({ dst: '10.9.3.1' }), 'result:prohibit'),
    c('to the default route', f4({ dst: '198.18.0.1' }), 'fwd'),
    c('gateway without neighbor', f4({ dst: '10.9.6.1' }), 'result:no_neigh'),
    c('lightweight tunnel route', f4({ dst: '10.9.5.1' }), 'result:unsupp_lwt'),
    c(
      '1200 bytes with DF, locked route MTU 1000',
      f4({ dst: '10.9.8.1', l4: udp(1, 2, 1200 - 28) }),
      'result:frag_needed',
    ),
    c(
      '1200 bytes with DF, unlocked route MTU 1000',
      f4({ dst: '10.9.7.1', l4: udp(1, 2, 1200 - 28) }),
      'reason:route_mtu',
    ),
    c('900 bytes, under every route MTU', f4({ dst: '10.9.7.1', l4: udp(1, 2, 900 - 28) }), 'fwd'),
    c('out the device it came in on (hairpin)', f4({ dst: A.hairpin }), 'reason:hairpin'),
  ];
}

export function optionCases(enabled: boolean): Case[] {
  const opt = (name: string, o: Buffer, fwdWhenEnabled: boolean): Case =>
    c(
      `IPv4 options: ${name}`,
      f4({ options: o }),
      enabled && fwdWhenEnabled ? 'fwd' : 'reason:ip4_options',
    );
  const eolGarbage = Buffer.from([1, 0, 0x55, 0x66]);
  const badTs = OPT.ts(2);
  badTs[1] = 40; // longer than the option area
  const cases = [
    opt('NOP x4', options(OPT.nop(), OPT.nop(), OPT.nop(), OPT.nop()), true),
    opt('NOP, end of list, zeros', Buffer.from([1, 0, 0, 0]), true),
    opt('end of list, then garbage', eolGarbage, false),
    opt('unknown kind 0x9e', options(OPT.other(0x9e, 4)), true),
    opt('security (130)', options(OPT.other(130, 4)), true),
    opt('CIPSO (134)', options(OPT.other(134, 8)), false),
    opt('record route', options(OPT.rr(2)), false),
    opt('timestamp', options(OPT.ts(2)), false),
    opt('loose source route', options(OPT.srr(131, A.server)), false),
    opt('strict source route', options(OPT.srr(137, A.server)), false),
    opt('router alert', options(OPT.ra()), false),
    opt('record route of length 2', options(OPT.rr(2, 2)), false),
    opt('timestamp longer than the option area', options(badTs), false),
    opt('option length 0', Buffer.from([0x9e, 0, 0, 0]), false),
    opt('option length past the header', Buffer.from([1, 0x9e, 8, 0]), false),
  ];
  const nops = f4({ options: options(OPT.nop(), OPT.nop(), OPT.nop(), OPT.nop()) });
  const bad = Buffer.from(nops);
  bad.writeUInt16BE(bad.readUInt16BE(24) ^ 0x0f0f, 24);
  cases.push(
    c(
      'IPv4 options: NOP x4 with a wrong checksum',
      bad,
      enabled ? 'reason:ip4_csum' : 'reason:ip4_options',
    ),
  );
  return cases;
}

/**
 * An IPv4 ICMP error that `src` (a router on the way) sends to `dst` about a UDP packet
 * `dst` had sent to `far` (quoted: IP header and 8 bytes).
 */
export function icmpError4(src: string, dst: string, far: string, type = 3, code = 3): Buffer {
  const quoted = ipv4({ src: dst, dst: far, ttl: 60 }, udp(5353, 6000)).subarray(0, 28);
  return f4({ src, dst, proto: PROTO.ICMP, l4: icmp4(type, code, quoted) });
}

export { inetChecksum };
