// The lab of the differential corpus: a router namespace with four veth devices and a sink
// namespace behind each (no addresses, no IPv6: they only receive), frames crafted in
// TypeScript and sent from the client's end of r1 with a packet socket, and a packet socket
// on every sink that captures what the router sent there.
//
//   client c0 ── r1 10.61.1.1/24 fd61:1::1/64      (frames enter here)
//   server s0 ── r2 10.61.2.1/24 fd61:2::1/64      MTU 1400
//   gw A   a0 ── r3 10.61.3.1/24 fd61:3::1/64      ┐ multipath legs of 10.99.0.0/16
//   gw B   b0 ── r4 10.61.4.1/24 fd61:4::1/64      ┘ and fd99::/16; default routes
//
// Neighbors on the router are static, ICMP rate limits off, so a frame does the same thing
// every time it is sent; ARP and neighbor discovery on the wire are not compared.
import {
  PacketSocket,
  BpfLink,
  BpfProgram,
  ETH_P_ALL,
  type FrameInfo,
} from '../../../src/native/index.js';
import { cleanupLater } from '../../helpers/cleanup.js';
import { ifindexOf, ip, makeNetns, sysctl, vethPair } from '../../helpers/netns.js';

export const CMAC = '02:fb:00:00:01:02';
export const RMAC = {
  r1: '02:fb:00:00:01:01',
  r2: '02:fb:00:00:02:01',
  r3: '02:fb:00:00:03:01',
  r4: '02:fb:00:00:04:01',
} as const;
export const PEER_MAC = {
  c0: CMAC,
  s0: '02:fb:00:00:02:02',
  a0: '02:fb:00:00:03:02',
  b0: '02:fb:00:00:04:02',
} as const;
export type Sink = keyof typeof PEER_MAC;

export const A = {
  client: '10.61.1.2',
  hairpin: '10.61.1.50',
  r1: '10.61.1.1',
  r2: '10.61.2.1',
  server: '10.61.2.2',
  gwA: '10.61.3.2',
  gwB: '10.61.4.2',
  /** An address on the router's loopback (like an external IP on a holder device). */
  lo: '10.61.9.9',
  /** A custom local route (AnyIP) on the router. */
  anyip: '10.62.0.0/24',
} as const;
export const A6 = {
  client: 'fd61:1::2',
  hairpin: 'fd61:1::50',
  r1: 'fd61:1::1',
  r2: 'fd61:2::1',
  server: 'fd61:2::2',
  gwA: 'fd61:3::2',
  gwB: 'fd61:4::2',
  lo: 'fd61:9::9',
} as const;

export interface DiffLab {
  router: string;
  client: string;
  /** Router device ifindexes. */
  dev: Record<'r1' | 'r2' | 'r3' | 'r4', number>;
  /** Sink namespaces by their device name. */
  sinks: Record<Sink, string>;
  /**
   * Sends a frame from the client (or from another sink's device) and returns what every
   * sink received meanwhile.
   */
  send(frame: Buffer, from?: Sink): Promise<Captured[]>;
  /** Sends a frame and returns at once (traffic that flows while something changes). */
  transmit(frame: Buffer, from?: Sink): void;
  /** Frames (not chatter) each sink has received since the lab was made. */
  received(sink: Sink): number;
}

export interface Captured {
  sink: Sink;
  frame: Buffer;
}

/**
 * The kernel's own chatter, timing-dependent and not forwarding: ARP, frames to multicast or
 * broadcast MACs (MLD reports, router and neighbor solicitations), and unicast neighbor
 * solicitations and advertisements.
 */
function chatter(f: Buffer): boolean {
  const type = f.readUInt16BE(12);
  if (type === 0x0806 || (f[0]! & 1) === 1) return true;
  if (type !== 0x86dd || f.length < 14 + 40 + 1 || f[14 + 6] !== 58) return false;
  const t = f[14 + 40] ?? 0;
  return t >= 133 && t <= 136;
}

function routes(r: string): void {
  ip(
    r,
    'route',
    'add',
    '10.99.0.0/16',
    'nexthop',
    'via',
    A.gwA,
    'dev',
    'r3',
    'nexthop',
    'via',
    A.gwB,
    'dev',
    'r4',
  );
  ip(
    r,
    '-6',
    'route',
    'add',
    'fd99::/16',
    'nexthop',
    'via',
    A6.gwA,
    'dev',
    'r3',
    'nexthop',
    'via',
    A6.gwB,
    'dev',
    'r4',
  );
  // multipath with one leg back through the ingress: strict rp_filter accepts its sources
  ip(
    r,
    'route',
    'add',
    '10.97.0.0/16',
    'nexthop',
    'via',
    A.client,
    'dev',
    'r1',
    'nexthop',
    'via',
    A.gwA,
    'dev',
    'r3',
  );
  ip(r, 'route', 'add', '10.98.0.0/16', 'via', A.gwA, 'dev', 'r3');
  ip(r, 'route', 'add', 'default', 'via', A.gwB, 'dev', 'r4');
  ip(r, '-6', 'route', 'add', 'default', 'via', A6.gwB, 'dev', 'r4');
  ip(r, '-6', 'route', 'add', 'fd98::/16', 'via', A6.gwA, 'dev', 'r3');
  for (const [kind, n] of [
    ['blackhole', 1],
    ['unreachable', 2],
    ['prohibit', 3],
  ] as const) {
    ip(r, 'route', 'add', kind, `10.9.${n}.0/24`);
    ip(r, '-6', 'route', 'add', kind, `fd61:9:${n}::/64`);
  }
  ip(r, 'route', 'add', '10.9.6.0/24', 'via', '10.61.2.3'); // no neighbor: NO_NEIGH
  ip(r, '-6', 'route', 'add', 'fd61:9:6::/64', 'via', 'fd61:2::3');
  ip(r, 'route', 'add', '10.9.7.0/24', 'via', A.server, 'mtu', '1000'); // unlocked route MTU
  ip(r, 'route', 'add', '10.9.8.0/24', 'via', A.server, 'mtu', 'lock', '1000');
  ip(r, '-6', 'route', 'add', 'fd61:9:8::/64', 'via', A6.server, 'mtu', 'lock', '1280');
  ip(r, '-6', 'route', 'add', 'fd61:9:7::/64', 'via', A6.server, 'mtu', '1280'); // unlocked
  ip(r, 'route', 'add', '10.9.5.0/24', 'encap', 'ip', 'id', '1', 'dst', '192.0.2.1', 'dev', 'r2');
  ip(r, 'addr', 'add', `${A.lo}/32`, 'dev', 'lo');
  ip(r, 'addr', 'add', `${A6.lo}/128`, 'dev', 'lo');
  ip(r, 'route', 'add', 'local', A.anyip, 'dev', 'lo');
}

function neighbors(r: string): void {
  const n: [string, string, string][] = [
    [A.client, CMAC, 'r1'],
    [A6.client, CMAC, 'r1'],
    [A.hairpin, '02:fb:00:00:01:50', 'r1'],
    [A6.hairpin, '02:fb:00:00:01:50', 'r1'],
    [A.server, PEER_MAC.s0, 'r2'],
    [A6.server, PEER_MAC.s0, 'r2'],
    [A.gwA, PEER_MAC.a0, 'r3'],
    [A6.gwA, PEER_MAC.a0, 'r3'],
    [A.gwB, PEER_MAC.b0, 'r4'],
    [A6.gwB, PEER_MAC.b0, 'r4'],
  ];
  for (const [addr, mac, dev] of n) {
    ip(r, 'neigh', 'replace', addr, 'lladdr', mac, 'dev', dev, 'nud', 'permanent');
  }
}

export function makeDiffLab(tag: string): DiffLab {
  const router = makeNetns(`${tag}r`, { scope: 'file' });
  const sinks: Record<Sink, string> = {
    c0: makeNetns(`${tag}c`, { scope: 'file' }),
    s0: makeNetns(`${tag}s`, { scope: 'file' }),
    a0: makeNetns(`${tag}a`, { scope: 'file' }),
    b0: makeNetns(`${tag}b`, { scope: 'file' }),
  };
  for (const ns of Object.values(sinks)) {
    sysctl(ns, 'net.ipv6.conf.all.disable_ipv6', 1);
    sysctl(ns, 'net.ipv6.conf.default.disable_ipv6', 1);
  }
  for (const [k, v] of [
    ['net.ipv4.ip_forward', 1],
    ['net.ipv6.conf.all.forwarding', 1],
    ['net.ipv6.conf.all.accept_dad', 0],
    ['net.ipv6.conf.default.accept_dad', 0],
    ['net.ipv4.icmp_ratelimit', 0],
    ['net.ipv4.icmp_msgs_per_sec', 100000],
    ['net.ipv4.icmp_msgs_burst', 100000],
    ['net.ipv6.icmp.ratelimit', 0],
    ['net.ipv4.conf.all.rp_filter', 0],
    ['net.ipv4.conf.default.rp_filter', 0],
  ] as const) {
    sysctl(router, k, v);
  }
  const pairs = [
    ['c0', 'r1'],
    ['s0', 'r2'],
    ['a0', 'r3'],
    ['b0', 'r4'],
  ] as const;
  for (const [sink, dev] of pairs) {
    vethPair(sinks[sink], sink, router, dev, { macA: PEER_MAC[sink], macB: RMAC[dev] });
  }
  ip(router, 'link', 'set', 'r2', 'mtu', '1400');
  // an unresolved neighbor fails at once, without probes: the packets queued for it are
  // dropped then and there, not answered with ICMP seconds later (during other frames)
  for (const [, dev] of pairs) {
    for (const fam of ['ipv4', 'ipv6']) {
      for (const k of ['mcast_solicit', 'ucast_solicit', 'app_solicit']) {
        sysctl(router, `net.${fam}.neigh.${dev}.${k}`, 0);
      }
    }
  }
  ip(sinks.s0, 'link', 'set', 's0', 'mtu', '1400');
  for (const [, dev] of pairs) {
    const n = dev.slice(1);
    ip(router, 'addr', 'add', `10.61.${n}.1/24`, 'dev', dev);
    ip(router, 'addr', 'add', `fd61:${n}::1/64`, 'dev', dev, 'nodad');
  }
  routes(router);
  neighbors(router);
  // XDP_PASS on every sink: a veth delivers XDP redirects only to a peer that runs XDP
  for (const [sink] of pairs) {
    const prog = BpfProgram.loadXdpPass();
    const link = BpfLink.attachXdp(prog, ifindexOf(sinks[sink], sink), { netns: sinks[sink] });
    cleanupLater(() => {
      link.close();
      prog.close();
    });
  }
  const captured: Captured[] = [];
  const counts: Record<Sink, number> = { c0: 0, s0: 0, a0: 0, b0: 0 };
  let lastAt = 0;
  for (const [sink] of pairs) {
    const s = PacketSocket.open({
      ifindex: ifindexOf(sinks[sink], sink),
      netns: sinks[sink],
      protocol: ETH_P_ALL,
      ignoreOutgoing: true,
    });
    cleanupLater(() => s.close());
    s.receive({
      onFrame: (f: Buffer, _info: FrameInfo) => {
        lastAt = Date.now();
        if (chatter(f)) return;
        counts[sink]++;
        captured.push({ sink, frame: Buffer.from(f) });
        if (captured.length > 10_000) captured.splice(0, 5_000); // traffic nobody reads
      },
      onError: (err) => {
        throw err;
      },
    });
  }
  // one sending socket per sink, for the whole file (opened here, outside any test)
  const txs = new Map<Sink, PacketSocket>();
  for (const [sink] of pairs) {
    const t = PacketSocket.open({ ifindex: ifindexOf(sinks[sink], sink), netns: sinks[sink] });
    cleanupLater(() => t.close());
    txs.set(sink, t);
  }
  const txOf = (sink: Sink): PacketSocket => txs.get(sink)!;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  return {
    router,
    client: sinks.c0,
    sinks,
    dev: {
      r1: ifindexOf(router, 'r1'),
      r2: ifindexOf(router, 'r2'),
      r3: ifindexOf(router, 'r3'),
      r4: ifindexOf(router, 'r4'),
    },
    transmit(frame: Buffer, from: Sink = 'c0'): void {
      try {
        txOf(from).send(frame);
      } catch (err) {
        if ((err as { code?: string }).code !== 'ENOBUFS') throw err;
      }
    },
    received: (sink) => counts[sink],
    async send(frame: Buffer, from: Sink = 'c0'): Promise<Captured[]> {
      captured.length = 0;
      const tx = txOf(from);
      for (let tries = 0; ; tries++) {
        try {
          tx.send(frame);
          break;
        } catch (err) {
          if ((err as { code?: string }).code !== 'ENOBUFS' || tries > 20) throw err;
          await sleep(20);
        }
      }
      const start = Date.now();
      await sleep(20);
      // quiet for 10 ms, at most 300 ms in all
      while (Date.now() - lastAt < 10 && Date.now() - start < 300) await sleep(4);
      return captured.splice(0);
    },
  };
}
