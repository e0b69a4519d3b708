// Corpus: flows through the multipath routes 10.99.0.0/16 and fd99::/16 (legs r3 and r4)
// under one fib_multipath_hash_policy, and frames under rp_filter. Which leg a flow takes is
// in the bytes compared (the sink it arrives at, the gateway MAC).
import { A, A6 } from './lab.js';
import { c, f4, f6, type Case, type Expect } from './case.js';
import { icmpError4 } from './cases-v4.js';
import {
  PROTO,
  ah,
  esp,
  ext,
  frag6,
  gre,
  icmp4,
  icmp6,
  ipv4,
  ipv6,
  ports,
  routing,
  tcp,
  udp,
} from './packets.js';

type Kind = 'plain' | 'icmp_error' | 'ext' | 'encap';

/** Which flows XDP must pass (multipath) under `policy`; the rest it forwards. */
function outcome(policy: number, kind: Kind): Expect {
  if (policy === 3) return 'reason:multipath';
  if (policy === 0 && (kind === 'icmp_error' || kind === 'ext')) return 'reason:multipath';
  if (policy === 2 && kind === 'encap') return 'reason:multipath';
  return 'fwd';
}

export function ecmpCases4(policy: number): Case[] {
  const out: Case[] = [];
  const add = (name: string, frame: Buffer, kind: Kind) =>
    out.push(c(`v4 ${name}`, frame, outcome(policy, kind)));
  const dst = (i: number) => `10.99.${(i * 37) % 250}.${((i * 11) % 250) + 1}`;
  for (let i = 0; i < 16; i++)
    add(`UDP flow ${i}`, f4({ dst: dst(i), l4: udp(1024 + i * 131, 53 + i) }), 'plain');
  for (let i = 0; i < 8; i++) {
    add(
      `TCP flow ${i}`,
      f4({ dst: dst(40 + i), proto: PROTO.TCP, l4: tcp(33000 + i * 7, 443) }),
      'plain',
    );
  }
  for (let i = 0; i < 8; i++)
    add(
      `ICMP error ${i}`,
      icmpError4(A.client, dst(60 + i), `203.0.113.${i + 1}`, 3, i % 4),
      'icmp_error',
    );
  for (let i = 0; i < 2; i++)
    add(
      `ICMP time exceeded ${i}`,
      icmpError4(A.client, dst(70 + i), `203.0.113.${i + 20}`, 11, 0),
      'icmp_error',
    );
  for (let i = 0; i < 4; i++) {
    const e = icmp4(8, 0, Buffer.alloc(8, i), 0x10000 + i);
    add(`ICMP echo ${i}`, f4({ dst: dst(80 + i), proto: PROTO.ICMP, l4: e }), 'plain');
  }
  for (let i = 0; i < 4; i++)
    add(
      `ESP SPI ${i}`,
      f4({ dst: dst(90 + i), proto: PROTO.ESP, l4: esp(0x1000 * (i + 1) + i) }),
      'plain',
    );
  for (let i = 0; i < 4; i++) {
    const l4 = Buffer.concat([ah(PROTO.UDP, 0x2000 * (i + 3) + i), udp(700 + i, 800)]);
    add(`AH SPI ${i}`, f4({ dst: dst(100 + i), proto: PROTO.AH, l4 }), 'plain');
  }
  for (let i = 0; i < 2; i++) {
    add(
      `SCTP ${i}`,
      f4({ dst: dst(110 + i), proto: PROTO.SCTP, l4: ports(5000 + i, 36412) }),
      'plain',
    );
    add(
      `UDP-Lite ${i}`,
      f4({ dst: dst(112 + i), proto: PROTO.UDPLITE, l4: ports(6000 + i, 9) }),
      'plain',
    );
  }
  for (let i = 0; i < 2; i++)
    add(
      `first fragment ${i}`,
      f4({ dst: dst(120 + i), frag: 0x2000, l4: udp(9 + i, 10) }),
      'plain',
    );
  for (let i = 0; i < 4; i++) {
    const inner = ipv4({ src: `192.168.${i}.1`, dst: `192.168.100.${i + 7}` }, udp(1000 + i, 2000));
    add(`IPIP ${i}`, f4({ dst: dst(130 + i), proto: PROTO.IPIP, l4: inner }), 'encap');
  }
  for (let i = 0; i < 4; i++) {
    const inner = ipv4({ src: `172.16.${i}.1`, dst: `172.16.9.${i + 3}` }, udp(1100 + i, 2100));
    add(`GRE ${i}`, f4({ dst: dst(140 + i), proto: PROTO.GRE, l4: gre(0x0800, inner) }), 'encap');
  }
  return out;
}

export function ecmpCases6(policy: number): Case[] {
  const out: Case[] = [];
  const add = (name: string, frame: Buffer, kind: Kind) =>
    out.push(c(`v6 ${name}`, frame, outcome(policy, kind)));
  const dst = (i: number) =>
    `fd99:${((i * 37) % 250).toString(16)}::${(((i * 11) % 250) + 1).toString(16)}`;
  for (let i = 0; i < 12; i++)
    add(`UDP flow ${i}`, f6({ dst: dst(i), l4: udp(2048 + i * 97, 53 + i) }), 'plain');
  for (let i = 0; i < 4; i++) {
    add(
      `TCP flow ${i}`,
      f6({ dst: dst(20 + i), next: PROTO.TCP, l4: tcp(34000 + i, 443) }),
      'plain',
    );
  }
  for (let i = 0; i < 8; i++) {
    const d = dst(30 + i);
    const quoted = ipv6({ src: d, dst: `2001:db8::${i + 1}`, hopLimit: 60 }, udp(5353, 6000 + i));
    const e = icmp6(A6.client, d, i % 2 ? 1 : 2, 0, quoted.subarray(0, 48), i % 2 ? 0 : 1280);
    add(`ICMPv6 error ${i}`, f6({ dst: d, next: PROTO.ICMPV6, l4: e }), 'icmp_error');
  }
  for (let i = 0; i < 2; i++) {
    const d = dst(40 + i);
    const e = icmp6(A6.client, d, 128, 0, Buffer.alloc(8, i), 0x00020000 + i);
    add(`ICMPv6 echo ${i}`, f6({ dst: d, next: PROTO.ICMPV6, l4: e }), 'plain');
  }
  for (let i = 0; i < 4; i++) {
    const l4 = Buffer.concat([ext(PROTO.UDP), udp(3000 + i * 7, 4000)]);
    add(`destination options ${i}`, f6({ dst: dst(50 + i), next: PROTO.DSTOPTS, l4 }), 'ext');
  }
  for (let i = 0; i < 2; i++) {
    const l4 = Buffer.concat([routing(PROTO.UDP, 4, 1), udp(3100 + i, 4000)]);
    add(`routing header ${i}`, f6({ dst: dst(60 + i), next: PROTO.ROUTING, l4 }), 'ext');
  }
  for (let i = 0; i < 3; i++) {
    const l4 = Buffer.concat([
      frag6(PROTO.UDP, i === 2 ? 50 : 0, true, 0x100 + i),
      udp(3200 + i, 4000),
    ]);
    add(`fragment ${i}`, f6({ dst: dst(70 + i), next: PROTO.FRAGMENT, l4 }), 'ext');
  }
  for (let i = 0; i < 3; i++) {
    const l4 = Buffer.concat([ah(PROTO.UDP, 0x3000 + i * 0x111), udp(3300 + i, 4000)]);
    // AH is the flow dissector's protocol: the first next header, no walk
    add(`AH ${i}`, f6({ dst: dst(80 + i), next: PROTO.AH, l4 }), 'plain');
  }
  for (let i = 0; i < 3; i++)
    add(
      `ESP ${i}`,
      f6({ dst: dst(90 + i), next: PROTO.ESP, l4: esp(0x4000 + i * 0x1111) }),
      'plain',
    );
  for (let i = 0; i < 2; i++) {
    const inner = ipv6({ src: `fd70::${i + 1}`, dst: `fd70::${i + 100}` }, udp(1200 + i, 2200));
    add(`IPv6 in IPv6 ${i}`, f6({ dst: dst(100 + i), next: PROTO.IPV6, l4: inner }), 'encap');
  }
  for (let i = 0; i < 2; i++) {
    const inner = ipv4({ src: `172.17.${i}.1`, dst: `172.17.9.${i + 3}` }, udp(1300 + i, 2300));
    add(`GRE ${i}`, f6({ dst: dst(110 + i), next: PROTO.GRE, l4: gre(0x0800, inner) }), 'encap');
  }
  return out;
}

/** rp_filter 1 (strict) or 2 (loose) on the ingress device. */
export function rpCases(mode: 1 | 2): Case[] {
  const strict = mode === 1;
  return [
    c('rp: source the client', f4({ src: A.client }), 'fwd'),
    c('rp: source on the client subnet', f4({ src: '10.61.1.77' }), 'fwd'),
    c(
      'rp: source behind another device',
      f4({ src: '10.61.2.9' }),
      strict ? 'reason:rp_filter' : 'fwd',
    ),
    c(
      'rp: source behind the multipath route',
      f4({ src: '10.99.5.5' }),
      strict ? 'reason:rp_filter' : 'fwd',
    ),
    c(
      'rp: source only in the default route',
      f4({ src: '198.18.0.7' }),
      strict ? 'reason:rp_filter' : 'fwd',
    ),
    c('rp: source in a blackhole route', f4({ src: '10.9.1.5' }), 'reason:rp_filter'),
    c('rp: source in an unreachable route', f4({ src: '10.9.2.5' }), 'reason:rp_filter'),
    c('rp: source local', f4({ src: A.lo }), 'reason:local_src'),
    ...[1, 2, 3, 4, 5, 6].map((i) =>
      c(
        `rp: source behind a multipath route through the ingress ${i}`,
        f4({ src: `10.97.${i}.${i * 3}` }),
        strict ? ['fwd', 'reason:rp_filter'] : 'fwd',
      ),
    ),
    c('rp: IPv6 is not filtered', f6({ src: 'fd61:2::9' }), 'fwd'),
  ];
}
