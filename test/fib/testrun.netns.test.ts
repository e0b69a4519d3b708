// fk_xdp_fwd under bpf_prog_test_run with crafted frames, in a router namespace whose FIB
// produces every lookup outcome: the verdict, the frame that comes out (MACs, TTL/hop limit,
// IPv4 checksum recomputed from scratch), and the counter that moved, for every branch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FK_FIB_LOOKUP_MARK,
  BPF_FIB_LOOKUP_SRC,
  decodeConfig,
  decodeStats,
  defaultConfig,
  defaultObjectPath,
  loadInstance,
  type FkConfig,
  type Instance,
  type ReasonName,
  type ResultName,
  type SlotCounters,
} from '../../src/fib/index.js';
import { XdpAction, runInNetns, type BpfProgram } from '../../src/native/index.js';
import { ifindexOf, ip, makeNetns, privileged, sysctl, vethPair } from '../helpers/netns.js';
import {
  ETH_P_8021AD,
  ETH_P_8021Q,
  ETH_P_ARP,
  ETH_P_IP,
  ETH_P_IPV6,
  arpRequest,
  eth,
  ext6,
  inetChecksum,
  ipv4,
  ipv6,
  udp,
  vlan,
} from './frames.js';
import { MAC, V4, V6, makeLab, staticNeighbors, type Lab } from './lab.js';

const { skip } = privileged();
const OBJ = defaultObjectPath();
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

let lab: Lab;
let fk: Instance;
const extra: Instance[] = [];

/** An instance sharing fk's maps, with `cfg` changes and its own slot. */
function variant(slot: number, cfg: Partial<FkConfig>): BpfProgram {
  const i = loadInstance(OBJ, { ...defaultConfig(), ...cfg, slot }, fk.maps);
  extra.push(i);
  return i.prog;
}

function slotCounters(inst: Instance, slot: number): SlotCounters {
  return decodeStats(inst.maps.stats.lookupPerCpu(u32(slot)) ?? []);
}

interface Run {
  retval: number;
  out: Buffer;
  /** Counters of the slot that moved by this run, as "results.success" etc. */
  moved: string[];
}

function diff(a: SlotCounters, b: SlotCounters): string[] {
  const out: string[] = [];
  for (const kind of ['actions', 'results', 'reasons'] as const) {
    for (const [k, v] of Object.entries(b[kind])) {
      const before = (a[kind] as Record<string, { packets: number }>)[k]?.packets ?? 0;
      if (v.packets !== before) out.push(`${kind}.${k}+${v.packets - before}`);
    }
  }
  return out;
}

function run(
  prog: BpfProgram,
  frame: Buffer,
  o: { slot?: number; ns?: string; ingress?: number; inst?: Instance } = {},
): Run {
  const inst = o.inst ?? fk;
  const slot = o.slot ?? 1;
  const before = slotCounters(inst, slot);
  const r = runInNetns(o.ns ?? lab.router, () =>
    prog.testRun({ dataIn: frame, xdpCtx: { ingressIfindex: o.ingress ?? lab.r1 } }),
  );
  return {
    retval: r.retval,
    out: r.dataOut ?? Buffer.alloc(0),
    moved: diff(before, slotCounters(inst, slot)),
  };
}

const v4 = (dst: string, o: { ttl?: number; size?: number; options?: Buffer } = {}) =>
  eth(
    MAC.r1,
    MAC.client,
    ETH_P_IP,
    ipv4(
      {
        src: V4.client,
        dst,
        ...(o.ttl === undefined ? {} : { ttl: o.ttl }),
        ...(o.options ? { options: o.options } : {}),
      },
      udp(4000, 5000, o.size ?? 18),
    ),
  );
const v6 = (dst: string, o: { hopLimit?: number; size?: number } = {}) =>
  eth(
    MAC.r1,
    MAC.client,
    ETH_P_IPV6,
    ipv6(
      { src: V6.client, dst, ...(o.hopLimit === undefined ? {} : { hopLimit: o.hopLimit }) },
      udp(4000, 5000, o.size ?? 18),
    ),
  );

const PASS = XdpAction.PASS;
const REDIRECT = XdpAction.REDIRECT;
const passed = (why: `results.${ResultName}` | `reasons.${ReasonName}`) =>
  (why.startsWith('reasons.no_txport')
    ? ['actions.pass+1', 'results.success+1', `${why}+1`]
    : ['actions.pass+1', `${why}+1`]
  ).sort();

beforeAll(() => {
  if (skip) return;
  lab = makeLab('tr', { peerXdp: false });
  staticNeighbors(lab);
  const r = lab.router;
  ip(r, 'route', 'add', 'blackhole', '10.9.1.0/24');
  ip(r, 'route', 'add', 'unreachable', '10.9.2.0/24');
  ip(r, 'route', 'add', 'prohibit', '10.9.3.0/24');
  ip(r, 'route', 'add', '10.9.5.0/24', 'encap', 'ip', 'id', '1', 'dst', '192.0.2.1', 'dev', 'r2');
  ip(r, 'route', 'add', '10.9.6.0/24', 'via', '10.61.2.3');
  ip(r, 'route', 'add', '10.9.7.0/24', 'via', V4.server, 'mtu', 'lock', '1000');
  ip(r, '-6', 'route', 'add', 'blackhole', 'fd61:9:1::/64');
  ip(r, '-6', 'route', 'add', 'unreachable', 'fd61:9:2::/64');
  ip(r, '-6', 'route', 'add', 'prohibit', 'fd61:9:3::/64');
  ip(r, '-6', 'route', 'add', 'fd61:9:6::/64', 'via', 'fd61:2::3');
  ip(r, '-6', 'route', 'add', 'fd61:9:7::/64', 'via', V6.server, 'mtu', 'lock', '1280');
  fk = loadInstance(OBJ, { ...defaultConfig(), slot: 1 });
  runInNetns(r, () => {
    for (const i of [lab.r1, lab.r2]) fk.maps.txPorts.update(u32(i), u32(i));
  });
});

afterAll(() => {
  for (const i of extra) {
    i.prog.close();
    i.cfgMap.close();
  }
  if (fk) {
    fk.prog.close();
    fk.cfgMap.close();
    fk.maps.txPorts.close();
    fk.maps.stats.close();
    fk.maps.miss.close();
  }
});

describe.skipIf(skip)('fk_xdp_fwd: forwarding', () => {
  it('IPv4 SUCCESS: redirected with the FIB MACs, TTL - 1 and a checksum equal to one computed from scratch', () => {
    const frame = v4(V4.server);
    const r = run(fk.prog, frame);
    expect(r.retval).toBe(REDIRECT);
    expect(r.moved.sort()).toEqual(['actions.redirect+1', 'results.success+1']);
    expect(r.out.subarray(0, 6)).toEqual(
      Buffer.from(MAC.server.split(':').map((x) => parseInt(x, 16))),
    );
    expect(r.out.subarray(6, 12)).toEqual(
      Buffer.from(MAC.r2.split(':').map((x) => parseInt(x, 16))),
    );
    const hdr = Buffer.from(r.out.subarray(14, 34));
    expect(hdr[8]).toBe(63);
    const stored = hdr.readUInt16BE(10);
    hdr.writeUInt16BE(0, 10);
    expect(stored).toBe(inetChecksum(hdr));
    // nothing else changed
    expect(r.out.subarray(34)).toEqual(frame.subarray(34));
    expect(r.out.length).toBe(frame.length);
  });

  it('bytes count the whole frame', () => {
    const frame = v4(V4.server, { size: 300 });
    const before = slotCounters(fk, 1).results.success.bytes;
    run(fk.prog, frame);
    expect(slotCounters(fk, 1).results.success.bytes - before).toBe(frame.length);
  });

  it('TTL 2 is forwarded with TTL 1 (checksum still right); TTL 1 and 0 go to the stack', () => {
    const r = run(fk.prog, v4(V4.server, { ttl: 2 }));
    expect(r.retval).toBe(REDIRECT);
    const hdr = Buffer.from(r.out.subarray(14, 34));
    expect(hdr[8]).toBe(1);
    const stored = hdr.readUInt16BE(10);
    hdr.writeUInt16BE(0, 10);
    expect(stored).toBe(inetChecksum(hdr));
    for (const ttl of [1, 0]) {
      const p = run(fk.prog, v4(V4.server, { ttl }));
      expect(p.retval).toBe(PASS);
      expect(p.moved.sort()).toEqual(passed('reasons.ttl'));
    }
  });

  it('checksum stays right across the 0xffff boundary for many TTLs and headers', () => {
    for (const ttl of [2, 3, 64, 128, 255]) {
      for (const tos of [0, 0x10, 0xb8, 0xff]) {
        const frame = eth(
          MAC.r1,
          MAC.client,
          ETH_P_IP,
          ipv4({ src: V4.client, dst: V4.server, ttl, tos }, udp(1, 2)),
        );
        const r = run(fk.prog, frame);
        expect(r.retval).toBe(REDIRECT);
        const hdr = Buffer.from(r.out.subarray(14, 34));
        const stored = hdr.readUInt16BE(10);
        hdr.writeUInt16BE(0, 10);
        expect([ttl, tos, stored]).toEqual([ttl, tos, inetChecksum(hdr)]);
      }
    }
  });

  it('IPv4 with options: forwarded by default (checksum over the options too), passed with ip4_options off', () => {
    const options = Buffer.from([1, 1, 1, 0]); // NOP NOP NOP EOL
    const r = run(fk.prog, v4(V4.server, { options }));
    expect(r.retval).toBe(REDIRECT);
    const hdr = Buffer.from(r.out.subarray(14, 38));
    expect(hdr[0]).toBe(0x46);
    const stored = hdr.readUInt16BE(10);
    hdr.writeUInt16BE(0, 10);
    expect(stored).toBe(inetChecksum(hdr));
    const strict = variant(2, { ip4Options: false });
    const p = run(strict, v4(V4.server, { options }), { slot: 2 });
    expect(p.retval).toBe(PASS);
    expect(p.moved.sort()).toEqual(passed('reasons.ip4_options'));
    expect(run(strict, v4(V4.server), { slot: 2 }).retval).toBe(REDIRECT);
  });

  it('IPv6 SUCCESS: redirected with the FIB MACs and hop limit - 1; hop limit 2 forwarded, 1 passed', () => {
    const frame = v6(V6.server);
    const r = run(fk.prog, frame);
    expect(r.retval).toBe(REDIRECT);
    expect(r.moved.sort()).toEqual(['actions.redirect+1', 'results.success+1']);
    expect(r.out.subarray(0, 12).toString('hex')).toBe((MAC.server + MAC.r2).replaceAll(':', ''));
    expect(r.out[14 + 7]).toBe(63);
    expect(r.out.subarray(22)).toEqual(frame.subarray(22));
    expect(run(fk.prog, v6(V6.server, { hopLimit: 2 })).out[21]).toBe(1);
    const p = run(fk.prog, v6(V6.server, { hopLimit: 1 }));
    expect(p.retval).toBe(PASS);
    expect(p.moved.sort()).toEqual(passed('reasons.ttl'));
  });

  it('IPv6 extension headers: two skipped and forwarded, a fragment header forwarded; hop-by-hop, a truncated one and more than four passed', () => {
    const frame = (exts: Buffer, first: number) =>
      eth(
        MAC.r1,
        MAC.client,
        ETH_P_IPV6,
        ipv6({ src: V6.client, dst: V6.server, next: first }, Buffer.concat([exts, udp(1, 2)])),
      );
    // dstopts(60) -> routing(43) -> udp
    expect(run(fk.prog, frame(Buffer.concat([ext6(43), ext6(17)]), 60)).retval).toBe(REDIRECT);
    expect(run(fk.prog, frame(ext6(17), 44)).retval).toBe(REDIRECT); // fragment
    const hbh = run(fk.prog, frame(ext6(17), 0));
    expect(hbh.moved.sort()).toEqual(passed('reasons.ip6_ext'));
    const five = Buffer.concat([ext6(60), ext6(60), ext6(60), ext6(60), ext6(17)]);
    expect(run(fk.prog, frame(five, 60)).moved.sort()).toEqual(passed('reasons.ip6_ext'));
    // an extension header cut after 4 bytes (payload_len says 4)
    const cut = eth(
      MAC.r1,
      MAC.client,
      ETH_P_IPV6,
      ipv6({ src: V6.client, dst: V6.server, next: 60 }, ext6(17).subarray(0, 4)),
    );
    expect(run(fk.prog, cut).moved.sort()).toEqual(passed('reasons.ip6_ext'));
  });
});

describe.skipIf(skip)('fk_xdp_fwd: every lookup outcome goes to the stack and is counted', () => {
  const cases: [string, () => Buffer, ResultName][] = [
    ['IPv4 blackhole', () => v4('10.9.1.1'), 'blackhole'],
    ['IPv4 unreachable', () => v4('10.9.2.1'), 'unreachable'],
    ['IPv4 prohibit', () => v4('10.9.3.1'), 'prohibit'],
    ['IPv4 local destination', () => v4(V4.r2), 'not_fwded'],
    ['IPv4 lightweight tunnel route', () => v4('10.9.5.1'), 'unsupp_lwt'],
    ['IPv4 gateway without neighbor', () => v4('10.9.6.1'), 'no_neigh'],
    ['IPv4 larger than a locked route MTU', () => v4('10.9.7.1', { size: 1200 }), 'frag_needed'],
    ['IPv6 blackhole', () => v6('fd61:9:1::1'), 'blackhole'],
    ['IPv6 unreachable', () => v6('fd61:9:2::1'), 'unreachable'],
    ['IPv6 prohibit', () => v6('fd61:9:3::1'), 'prohibit'],
    ['IPv6 local destination', () => v6(V6.r2), 'not_fwded'],
    ['IPv6 gateway without neighbor', () => v6('fd61:9:6::1'), 'no_neigh'],
    ['IPv6 larger than a locked route MTU', () => v6('fd61:9:7::1', { size: 1400 }), 'frag_needed'],
  ];
  for (const [what, frame, result] of cases) {
    it(`${what}: ${result}`, () => {
      const f = frame();
      const r = run(fk.prog, f);
      expect(r.retval).toBe(PASS);
      expect(r.moved.sort()).toEqual(['actions.pass+1', `results.${result}+1`]);
      expect(r.out).toEqual(f); // untouched
    });
  }

  it('NO_NEIGH records the destination, egress device and next hop in the miss map', () => {
    run(fk.prog, v4('10.9.6.77'));
    run(fk.prog, v4('10.9.6.77'));
    run(fk.prog, v6('fd61:9:6::77'));
    const misses = fk.maps.miss.keys().map((k) => {
      const v = fk.maps.miss.lookup(k)!;
      return {
        k: k.toString('hex'),
        hits: Number(v.readBigUInt64LE(0)),
        nh: v.subarray(16, 32).toString('hex'),
        nhf: v[32],
      };
    });
    const key4 = u32(lab.r2).toString('hex') + '02000000' + '0a09064d' + '0'.repeat(24);
    expect(misses).toContainEqual({ k: key4, hits: 2, nh: '0a3d0203' + '0'.repeat(24), nhf: 2 });
    const key6 = u32(lab.r2).toString('hex') + '0a000000' + 'fd610009000600000000000000000077';
    expect(misses).toContainEqual({
      k: key6,
      hits: 1,
      nh: 'fd610002000000000000000000000003',
      nhf: 10,
    });
  });

  it('forwarding disabled on the ingress device: fwd_disabled (IPv4 and IPv6)', () => {
    sysctl(lab.router, 'net.ipv4.conf.r1.forwarding', 0);
    sysctl(lab.router, 'net.ipv6.conf.r1.forwarding', 0);
    try {
      expect(run(fk.prog, v4(V4.server)).moved.sort()).toEqual([
        'actions.pass+1',
        'results.fwd_disabled+1',
      ]);
      expect(run(fk.prog, v6(V6.server)).moved.sort()).toEqual([
        'actions.pass+1',
        'results.fwd_disabled+1',
      ]);
    } finally {
      sysctl(lab.router, 'net.ipv4.conf.r1.forwarding', 1);
      sysctl(lab.router, 'net.ipv6.conf.r1.forwarding', 1);
    }
  });

  it('a helper error (flags the kernel refuses): error', () => {
    const bad = variant(5, { fibFlags: 1 << 7 });
    const r = run(bad, v4(V4.server), { slot: 5 });
    expect(r.retval).toBe(PASS);
    expect(r.moved.sort()).toEqual(['actions.pass+1', 'results.error+1']);
  });

  it('the mark flag is accepted (SUCCESS)', () => {
    const marked = variant(7, { fibFlags: FK_FIB_LOOKUP_MARK, mark: 7 });
    expect(run(marked, v4(V4.server), { slot: 7 }).retval).toBe(REDIRECT);
  });

  it('IPv6 without any source address and the SRC flag: no_src_addr (IPv4 always derives one)', () => {
    // a router without IPv6 addresses (no link-local either): no source for the egress
    const ns = makeNetns('trsrc');
    const peer = makeNetns('trsrp');
    sysctl(ns, 'net.ipv6.conf.all.forwarding', 1);
    sysctl(ns, 'net.ipv6.conf.default.addr_gen_mode', 1);
    ip(ns, '-6', 'addr', 'flush', 'dev', 'lo');
    vethPair(peer, 'p0', ns, 'in0');
    vethPair(peer, 'p1', ns, 'out0');
    ip(ns, '-6', 'route', 'add', 'fd61:9:8::/64', 'dev', 'out0');
    ip(
      ns,
      'neigh',
      'replace',
      'fd61:9:8::1',
      'lladdr',
      MAC.server,
      'dev',
      'out0',
      'nud',
      'permanent',
    );
    // maps of their own: ifindexes of this namespace may equal the router's in fk's devmap
    const src = loadInstance(OBJ, { ...defaultConfig(), fibFlags: BPF_FIB_LOOKUP_SRC, slot: 6 });
    const plain = loadInstance(OBJ, { ...defaultConfig(), slot: 8 }, src.maps);
    extra.push(src, plain);
    try {
      const ingress = ifindexOf(ns, 'in0');
      const r = run(src.prog, v6('fd61:9:8::1'), { slot: 6, ns, ingress, inst: src });
      expect(r.moved.sort()).toEqual(['actions.pass+1', 'results.no_src_addr+1']);
      // without the flag the IPv6 lookup succeeds (the egress is not in the devmap: no_txport)
      expect(
        run(plain.prog, v6('fd61:9:8::1'), { slot: 8, ns, ingress, inst: src }).moved.sort(),
      ).toEqual(passed('reasons.no_txport'));
    } finally {
      src.maps.txPorts.close();
      src.maps.stats.close();
      src.maps.miss.close();
    }
  });

  it('SUCCESS towards a device not in the devmap: passed unchanged, counted as success and no_txport', () => {
    const own = loadInstance(OBJ, { ...defaultConfig(), slot: 1 }); // maps of its own, empty devmap
    extra.push(own);
    try {
      const f = v4(V4.server);
      const r = run(own.prog, f, { inst: own });
      expect(r.retval).toBe(PASS);
      expect(r.moved.sort()).toEqual(passed('reasons.no_txport'));
      expect(r.out).toEqual(f);
    } finally {
      own.maps.txPorts.close();
      own.maps.stats.close();
      own.maps.miss.close();
    }
  });
});

describe.skipIf(skip)('fk_xdp_fwd: frames it does not forward', () => {
  const other = (type: number, payload: Buffer) => eth(MAC.r1, MAC.client, type, payload);
  const cases: [string, () => Buffer, ReasonName][] = [
    [
      'broadcast destination MAC',
      () =>
        eth(
          'ff:ff:ff:ff:ff:ff',
          MAC.client,
          ETH_P_IP,
          ipv4({ src: V4.client, dst: V4.server }, udp(1, 2)),
        ),
      'l2_mcast',
    ],
    [
      'multicast destination MAC',
      () =>
        eth(
          '33:33:00:00:00:01',
          MAC.client,
          ETH_P_IPV6,
          ipv6({ src: V6.client, dst: V6.server }, udp(1, 2)),
        ),
      'l2_mcast',
    ],
    [
      '802.1Q tag',
      () =>
        other(ETH_P_8021Q, vlan(5, ETH_P_IP, ipv4({ src: V4.client, dst: V4.server }, udp(1, 2)))),
      'vlan',
    ],
    [
      '802.1ad tag',
      () =>
        other(
          ETH_P_8021AD,
          vlan(
            5,
            ETH_P_8021Q,
            vlan(6, ETH_P_IP, ipv4({ src: V4.client, dst: V4.server }, udp(1, 2))),
          ),
        ),
      'vlan',
    ],
    ['ARP', () => other(ETH_P_ARP, arpRequest(MAC.client, V4.client, V4.r1)), 'arp'],
    ['another EtherType', () => other(0x88b5, Buffer.alloc(46)), 'non_ip'],
    ['Ethernet header only, IPv4 type', () => other(ETH_P_IP, Buffer.alloc(0)), 'ip4_bad'],
    ['IPv4 header cut at 19 bytes', () => v4(V4.server).subarray(0, 14 + 19), 'ip4_bad'],
    ['IPv4 total length beyond the frame', () => v4(V4.server).subarray(0, 14 + 30), 'ip4_bad'],
    [
      'IPv4 options cut off (IHL 15, 30 bytes)',
      () =>
        other(
          ETH_P_IP,
          (() => {
            const b = ipv4({ src: V4.client, dst: V4.server }, Buffer.alloc(10));
            b[0] = 0x4f;
            return b;
          })(),
        ),
      'ip4_bad',
    ],
    [
      'IPv4 IHL 4',
      () =>
        other(
          ETH_P_IP,
          (() => {
            const b = ipv4({ src: V4.client, dst: V4.server }, udp(1, 2));
            b[0] = 0x44;
            return b;
          })(),
        ),
      'ip4_bad',
    ],
    [
      'version 6 in an IPv4 frame',
      () =>
        other(
          ETH_P_IP,
          (() => {
            const b = ipv4({ src: V4.client, dst: V4.server }, udp(1, 2));
            b[0] = 0x65;
            return b;
          })(),
        ),
      'ip4_bad',
    ],
    [
      'IPv4 total length below the header',
      () => other(ETH_P_IP, ipv4({ src: V4.client, dst: V4.server, totLen: 19 }, udp(1, 2))),
      'ip4_bad',
    ],
    ['Ethernet header only, IPv6 type', () => other(ETH_P_IPV6, Buffer.alloc(0)), 'ip6_bad'],
    ['IPv6 header cut at 39 bytes', () => v6(V6.server).subarray(0, 14 + 39), 'ip6_bad'],
    [
      'IPv6 payload length beyond the frame',
      () => v6(V6.server).subarray(0, 14 + 40 + 10),
      'ip6_bad',
    ],
    [
      'version 4 in an IPv6 frame',
      () =>
        other(
          ETH_P_IPV6,
          (() => {
            const b = ipv6({ src: V6.client, dst: V6.server }, udp(1, 2));
            b[0] = 0x40;
            return b;
          })(),
        ),
      'ip6_bad',
    ],
  ];
  for (const [what, frame, reason] of cases) {
    it(`${what}: ${reason}`, () => {
      const f = frame();
      const r = run(fk.prog, f);
      expect(r.retval).toBe(PASS);
      expect(r.moved.sort()).toEqual(passed(`reasons.${reason}`));
      expect(r.out).toEqual(f);
    });
  }

  it('headers that end exactly at a boundary are fine: IPv4 without L4, IPv6 without payload, a cut UDP header', () => {
    const bare4 = other(ETH_P_IP, ipv4({ src: V4.client, dst: V4.server }, Buffer.alloc(0)));
    expect(run(fk.prog, bare4).retval).toBe(REDIRECT);
    const bare6 = other(ETH_P_IPV6, ipv6({ src: V6.client, dst: V6.server }, Buffer.alloc(0)));
    expect(run(fk.prog, bare6).retval).toBe(REDIRECT);
    const cutUdp = other(
      ETH_P_IP,
      ipv4({ src: V4.client, dst: V4.server }, udp(1, 2).subarray(0, 3)),
    );
    expect(run(fk.prog, cutUdp).retval).toBe(REDIRECT);
  });

  it('a frame shorter than an Ethernet header never reaches the program (the kernel refuses it)', () => {
    expect(() => run(fk.prog, Buffer.alloc(13))).toThrow(
      expect.objectContaining({ code: 'EINVAL' }),
    );
  });

  it('dmac_check passes unicast frames for another host, forwards its own', () => {
    const strict = variant(3, { dmacCheck: true, devMac: MAC.r1 });
    const otherHost = eth(
      '02:00:00:0f:01:99',
      MAC.client,
      ETH_P_IP,
      ipv4({ src: V4.client, dst: V4.server }, udp(1, 2)),
    );
    expect(run(strict, otherHost, { slot: 3 }).moved.sort()).toEqual(
      passed('reasons.l2_otherhost'),
    );
    expect(run(strict, v4(V4.server), { slot: 3 }).retval).toBe(REDIRECT);
  });

  it('IPv4 off / IPv6 off: passed with ip4_off / ip6_off', () => {
    const off = variant(4, { ipv4: false, ipv6: false });
    expect(run(off, v4(V4.server), { slot: 4 }).moved.sort()).toEqual(passed('reasons.ip4_off'));
    expect(run(off, v6(V6.server), { slot: 4 }).moved.sort()).toEqual(passed('reasons.ip6_off'));
  });
});

describe.skipIf(skip)('fk_xdp_fwd: bookkeeping', () => {
  it('the TypeScript defaults are the program rodata defaults', () => {
    const plain = loadInstance(OBJ, defaultConfig(), fk.maps);
    extra.push(plain);
    expect(decodeConfig(plain.cfgMap.lookup(u32(0))!)).toEqual(defaultConfig());
    expect(decodeConfig(fk.cfgMap.lookup(u32(0))!)).toEqual({ ...defaultConfig(), slot: 1 });
  });

  it('every slot: sum(actions) = sum(results) + sum(reasons) - reasons.no_txport', () => {
    let checked = 0;
    for (let slot = 0; slot < 9; slot++) {
      const c = slotCounters(fk, slot);
      const sum = (r: Record<string, { packets: number }>) =>
        Object.values(r).reduce((s, v) => s + v.packets, 0);
      expect(sum(c.actions), `slot ${slot}`).toBe(
        sum(c.results) + sum(c.reasons) - c.reasons.no_txport.packets,
      );
      checked += sum(c.actions);
    }
    expect(checked).toBeGreaterThan(50);
  });
});
