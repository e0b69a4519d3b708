// fk_xdp_fwd under bpf_prog_test_run (testbed.ts): what it forwards — the verdict, the frame
// that comes out (FIB MACs, TTL/hop limit, IPv4 checksum recomputed from scratch) — and every
// bpf_fib_lookup outcome it hands to the stack, each with the counter that moved.
import { describe, expect, it } from 'vitest';
import {
  BPF_FIB_LOOKUP_SRC,
  FK_FIB_LOOKUP_MARK,
  defaultConfig,
  loadInstance,
  type ResultName,
} from '../../src/fib/index.js';
import { ifindexOf, ip, makeNetns, sysctl, vethPair } from '../helpers/netns.js';
import { ETH_P_IP, ETH_P_IPV6, eth, ext6, inetChecksum, ipv4, ipv6, udp } from './frames.js';
import { MAC, V4, V6 } from './lab.js';
import {
  OBJ,
  PASS,
  REDIRECT,
  extra,
  fk,
  lab,
  passed,
  run,
  skip,
  slotCounters,
  u32,
  useTestbed,
  v4,
  v6,
  variant,
  writeState,
} from './testbed.js';

useTestbed();

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

  it('IPv4 with options: passed by default; with ip4_options, NOPs are forwarded (checksum over the options too)', () => {
    const options = Buffer.from([1, 1, 1, 0]); // NOP NOP NOP EOL
    const p = run(fk.prog, v4(V4.server, { options }));
    expect(p.retval).toBe(PASS);
    expect(p.moved.sort()).toEqual(passed('reasons.ip4_options'));
    const opts = variant(2, { ip4Options: true });
    const r = run(opts, v4(V4.server, { options }), { slot: 2 });
    expect(r.retval).toBe(REDIRECT);
    const hdr = Buffer.from(r.out.subarray(14, 38));
    expect(hdr[0]).toBe(0x46);
    const stored = hdr.readUInt16BE(10);
    hdr.writeUInt16BE(0, 10);
    expect(stored).toBe(inetChecksum(hdr));
    expect(run(opts, v4(V4.server), { slot: 2 }).retval).toBe(REDIRECT);
    // a record-route option is the kernel's to fill in
    const rr = Buffer.from([7, 7, 4, 0, 0, 0, 0, 0]);
    expect(run(opts, v4(V4.server, { options: rr }), { slot: 2 }).moved.sort()).toEqual(
      passed('reasons.ip4_options'),
    );
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

  it('IPv6 extension headers: two skipped and forwarded, a fragment header forwarded; hop-by-hop, a truncated one and more than eight passed', () => {
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
    const chain = (n: number) =>
      Buffer.concat([...Array.from({ length: n - 1 }, () => ext6(60)), ext6(17)]);
    expect(run(fk.prog, frame(chain(8), 60)).retval).toBe(REDIRECT);
    expect(run(fk.prog, frame(chain(9), 60)).moved.sort()).toEqual(passed('reasons.ip6_ext'));
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
    writeState(src);
    try {
      const ingress = ifindexOf(ns, 'in0');
      const r = run(src.prog, v6('fd61:9:8::1'), { slot: 6, ns, ingress, inst: src });
      expect(r.moved.sort()).toEqual(['actions.pass+1', 'results.no_src_addr+1']);
      // without the flag the IPv6 lookup succeeds (the egress is not in the devmap: no_txport)
      expect(
        run(plain.prog, v6('fd61:9:8::1'), { slot: 8, ns, ingress, inst: src }).moved.sort(),
      ).toEqual(passed('reasons.no_txport'));
    } finally {
      for (const m of Object.values(src.maps)) m.close();
    }
  });

  it('SUCCESS towards a device not in the devmap: passed unchanged, counted as success and no_txport', () => {
    const own = loadInstance(OBJ, { ...defaultConfig(), slot: 1 }); // maps of its own, empty devmap
    extra.push(own);
    writeState(own);
    try {
      const f = v4(V4.server);
      const r = run(own.prog, f, { inst: own });
      expect(r.retval).toBe(PASS);
      expect(r.moved.sort()).toEqual(passed('reasons.no_txport'));
      expect(r.out).toEqual(f);
    } finally {
      for (const m of Object.values(own.maps)) m.close();
    }
  });
});
