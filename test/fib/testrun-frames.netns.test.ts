// fk_xdp_fwd under bpf_prog_test_run (testbed.ts): the frames it passes before any lookup
// (L2, VLAN, ARP, other EtherTypes, truncations at every header boundary, disabled
// families), and the counter bookkeeping.
import { describe, expect, it } from 'vitest';
import {
  POST_LOOKUP_REASONS,
  decodeConfig,
  decodeState,
  encodeState,
  defaultConfig,
  loadInstance,
  type ReasonName,
} from '../../src/fib/index.js';
import {
  ETH_P_8021AD,
  ETH_P_8021Q,
  ETH_P_ARP,
  ETH_P_IP,
  ETH_P_IPV6,
  arpRequest,
  eth,
  ipv4,
  ipv6,
  udp,
  vlan,
} from './frames.js';
import { MAC, V4, V6 } from './lab.js';
import {
  OBJ,
  PASS,
  REDIRECT,
  extra,
  fk,
  passed,
  run,
  skip,
  slotCounters,
  u32,
  useTestbed,
  v4,
  v6,
  variant,
} from './testbed.js';

useTestbed();

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

  it('every slot: actions = results + reasons decided before a lookup; redirect = success - reasons after it', () => {
    let checked = 0;
    const post = new Set<string>(POST_LOOKUP_REASONS);
    for (let slot = 0; slot < 9; slot++) {
      const c = slotCounters(fk, slot);
      const sum = (r: Record<string, { packets: number }>, keep: (k: string) => boolean) =>
        Object.entries(r).reduce((s, [k, v]) => s + (keep(k) ? v.packets : 0), 0);
      const all = () => true;
      expect(sum(c.actions, all), `slot ${slot}`).toBe(
        sum(c.results, all) + sum(c.reasons, (k) => !post.has(k)),
      );
      expect(c.actions.redirect.packets, `slot ${slot}`).toBe(
        c.results.success.packets - sum(c.reasons, (k) => post.has(k)),
      );
      checked += sum(c.actions, all);
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('a slot the agent has not written yet passes everything (not_ready)', () => {
    const off = variant(9, {});
    const saved = fk.maps.state.lookup(u32(0))!;
    try {
      const st = decodeState(saved);
      st.dev[9] = { ...st.dev[9]!, ready: false };
      fk.maps.state.update(u32(0), encodeState(st));
      expect(run(off, v4(V4.server), { slot: 9 }).moved.sort()).toEqual(
        passed('reasons.not_ready'),
      );
    } finally {
      fk.maps.state.update(u32(0), saved);
    }
    expect(run(off, v4(V4.server), { slot: 9 }).retval).toBe(REDIRECT);
  });
});
