// layout.ts against bpf/xdp_fwd.h: a small C program includes the header and prints every
// size, offset, constant and name; each must equal ours. Then the encoders and decoders on
// hand-made buffers.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as L from './layout.js';
import * as S from './layout-state.js';

const CC = ['cc', 'gcc', 'clang'].find((c) => spawnSync(c, ['--version']).status === 0);
const BPF_DIR = fileURLToPath(new URL('../../bpf/', import.meta.url));

/** Our value of every name the C side prints. */
function expected(): Map<string, string> {
  const m = new Map<string, string>();
  const num = (k: string, v: number) => m.set(k, String(v));
  m.set('FK_PROG_NAME', L.FK_PROG_NAME);
  m.set('FK_MAP_TX_PORTS', L.FK_MAP_TX_PORTS);
  m.set('FK_MAP_STATS', L.FK_MAP_STATS);
  m.set('FK_MAP_MISS', L.FK_MAP_MISS);
  m.set('FK_CFG_VAR', L.FK_CFG_VAR);
  for (const k of [
    'FK_MAP_STATE',
    'FK_MAP_LOCAL4W',
    'FK_MAP_MPATH4',
    'FK_MAP_MPATH6',
    'FK_MAP_EGRESS',
    'FK_MAP_RPCACHE',
    'FK_MAP_WATCH',
    'FK_MAP_WATCH_UNTIL',
    'FK_WATCH_PROG',
  ] as const) {
    m.set(k, S[k]);
  }
  for (const k of [
    'FK_LPM_MAX',
    'FK_LOCAL4_BITS',
    'FK_LOCAL4_SLOTS',
    'FK_LOCAL4_PROBES',
    'FK_LOCAL4_MUL',
    'FK_EGRESS_MAX',
    'FK_RP_CACHE_BITS',
    'FK_RP_CACHE_SLOTS',
    'FK_WATCH_TICK_NS',
  ] as const) {
    num(k, S[k]);
  }
  num('FK_REASON_POST_LOOKUP', L.FK_REASON_POST_LOOKUP);
  num('FK_STATE_SIZE', S.SIZEOF_FK_STATE);
  for (const k of Object.keys(S) as (keyof typeof S)[]) {
    if (k.startsWith('SIZEOF_') || k.startsWith('OFFSETOF_')) num(k, S[k] as number);
  }
  for (const k of [
    'FK_TX_PORTS_MAX',
    'FK_MAX_SLOTS',
    'FK_MISS_MAX',
    'FK_SLOT_OTHER',
    'FK_RESULT_MAX',
    'FK_ACTION_MAX',
    'FK_REASON_MAX',
    'FK_AF_INET',
    'FK_AF_INET6',
    'FK_FIB_LOOKUP_MARK',
    'BPF_FIB_LOOKUP_DIRECT',
    'BPF_FIB_LOOKUP_OUTPUT',
    'BPF_FIB_LOOKUP_SKIP_NEIGH',
    'BPF_FIB_LOOKUP_TBID',
    'BPF_FIB_LOOKUP_SRC',
  ] as const) {
    num(k, L[k]);
  }
  L.RESULT_NAMES.forEach((n, i) => num(`FK_RESULT_${n.toUpperCase()}`, i));
  L.ACTION_NAMES.forEach((n, i) => num(`FK_ACTION_${n.toUpperCase()}`, i));
  L.REASON_NAMES.forEach((n, i) => num(`FK_REASON_${n.toUpperCase()}`, i));
  num('FK_STATS_SIZE', L.SIZEOF_FK_STATS);
  num('FK_CONFIG_SIZE', L.SIZEOF_FK_CONFIG);
  for (const k of Object.keys(L) as (keyof typeof L)[]) {
    if (k.startsWith('SIZEOF_') || k.startsWith('OFFSETOF_')) num(k, L[k] as number);
  }
  return m;
}

/** The C expression behind each SIZEOF_/OFFSETOF_ name. */
const EXPRS: Record<string, string> = {
  SIZEOF_FK_CTR: 'sizeof(struct fk_ctr)',
  SIZEOF_FK_STATS: 'sizeof(struct fk_stats)',
  OFFSETOF_STATS_ACTION: 'offsetof(struct fk_stats, action)',
  OFFSETOF_STATS_RESULT: 'offsetof(struct fk_stats, result)',
  OFFSETOF_STATS_REASON: 'offsetof(struct fk_stats, reason)',
  SIZEOF_FK_MISS_KEY: 'sizeof(struct fk_miss_key)',
  OFFSETOF_MISS_KEY_IFINDEX: 'offsetof(struct fk_miss_key, ifindex)',
  OFFSETOF_MISS_KEY_FAMILY: 'offsetof(struct fk_miss_key, family)',
  OFFSETOF_MISS_KEY_ADDR: 'offsetof(struct fk_miss_key, addr)',
  SIZEOF_FK_MISS_VAL: 'sizeof(struct fk_miss_val)',
  OFFSETOF_MISS_VAL_HITS: 'offsetof(struct fk_miss_val, hits)',
  OFFSETOF_MISS_VAL_LAST_SEEN: 'offsetof(struct fk_miss_val, last_seen_ns)',
  OFFSETOF_MISS_VAL_NEXTHOP: 'offsetof(struct fk_miss_val, nexthop)',
  OFFSETOF_MISS_VAL_NH_FAMILY: 'offsetof(struct fk_miss_val, nh_family)',
  SIZEOF_FK_CONFIG: 'sizeof(struct fk_config)',
  OFFSETOF_CFG_FIB_FLAGS: 'offsetof(struct fk_config, fib_flags)',
  OFFSETOF_CFG_SLOT: 'offsetof(struct fk_config, slot)',
  OFFSETOF_CFG_TBID: 'offsetof(struct fk_config, tbid)',
  OFFSETOF_CFG_MARK: 'offsetof(struct fk_config, mark)',
  OFFSETOF_CFG_IPV4: 'offsetof(struct fk_config, ipv4)',
  OFFSETOF_CFG_IPV6: 'offsetof(struct fk_config, ipv6)',
  OFFSETOF_CFG_IP4_OPTIONS: 'offsetof(struct fk_config, ip4_options)',
  OFFSETOF_CFG_MISS_TRACK: 'offsetof(struct fk_config, miss_track)',
  OFFSETOF_CFG_DMAC_CHECK: 'offsetof(struct fk_config, dmac_check)',
  OFFSETOF_CFG_DEV_MAC: 'offsetof(struct fk_config, dev_mac)',
  SIZEOF_FK_DEV_STATE: 'sizeof(struct fk_dev_state)',
  OFFSETOF_DEV_READY: 'offsetof(struct fk_dev_state, ready)',
  OFFSETOF_DEV_RP_FILTER: 'offsetof(struct fk_dev_state, rp_filter)',
  OFFSETOF_DEV_V4_ADDR: 'offsetof(struct fk_dev_state, v4_addr)',
  OFFSETOF_DEV_IP6_OFF: 'offsetof(struct fk_dev_state, ip6_off)',
  OFFSETOF_DEV_POLICY4: 'offsetof(struct fk_dev_state, policy4)',
  OFFSETOF_DEV_POLICY6: 'offsetof(struct fk_dev_state, policy6)',
  SIZEOF_FK_STATE: 'sizeof(struct fk_state)',
  OFFSETOF_STATE_MP_POLICY4: 'offsetof(struct fk_state, mp_policy4)',
  OFFSETOF_STATE_MP_POLICY6: 'offsetof(struct fk_state, mp_policy6)',
  OFFSETOF_STATE_MPATH4: 'offsetof(struct fk_state, mpath4)',
  OFFSETOF_STATE_MPATH6: 'offsetof(struct fk_state, mpath6)',
  OFFSETOF_STATE_LOCAL4W: 'offsetof(struct fk_state, local4w)',
  OFFSETOF_STATE_UNWATCHED: 'offsetof(struct fk_state, unwatched)',
  SIZEOF_FK_WATCH: 'sizeof(struct fk_watch)',
  OFFSETOF_STATE_ROUTE_MTU4: 'offsetof(struct fk_state, route_mtu4)',
  OFFSETOF_STATE_ROUTE_MTU6: 'offsetof(struct fk_state, route_mtu6)',
  OFFSETOF_STATE_RP_RULES: 'offsetof(struct fk_state, rp_rules)',
  OFFSETOF_STATE_RP_GEN: 'offsetof(struct fk_state, rp_gen)',
  SIZEOF_FK_RP_ENTRY: 'sizeof(struct fk_rp_entry)',
  SIZEOF_FK_RP_CACHE: 'sizeof(struct fk_rp_cache)',
  OFFSETOF_STATE_DEV: 'offsetof(struct fk_state, dev)',
  OFFSETOF_STATE_LOCAL4: 'offsetof(struct fk_state, local4)',
  SIZEOF_FK_LOCAL4: 'sizeof(((struct fk_state *)0)->local4)',
  SIZEOF_FK_LPM4_KEY: 'sizeof(struct fk_lpm4_key)',
  SIZEOF_FK_LPM6_KEY: 'sizeof(struct fk_lpm6_key)',
  SIZEOF_FK_RERR_KEY: 'sizeof(struct fk_rerr_key)',
  SIZEOF_FK_TRACE_CONFIG: 'sizeof(struct fk_trace_config)',
};

function headerValues(names: string[]): Map<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'fk-xdplayout-'));
  try {
    const lines = names.map((n) => {
      if (/_NAME$|^FK_MAP_|_CFG_VAR$|_PROG$|_TP$/.test(n))
        return `  printf("%s %s\\n", "${n}", ${n});`;
      if (n === 'FK_LOCAL4_MUL') return `  printf("%s %u\\n", "${n}", ${n});`;
      const expr = EXPRS[n] ?? n;
      return `  printf("%s %lld\\n", "${n}", (long long)(${expr}));`;
    });
    const src = [
      '#include <stdio.h>',
      '#include <stddef.h>',
      '#include <linux/bpf.h>',
      '#include "xdp_fwd.h"',
      'int main(void) {',
      ...lines,
      '  return 0;',
      '}',
    ].join('\n');
    writeFileSync(join(dir, 'c.c'), src);
    execFileSync(CC!, ['-Wall', '-Werror', `-I${BPF_DIR}`, '-o', join(dir, 'c'), join(dir, 'c.c')]);
    const out = execFileSync(join(dir, 'c'), { encoding: 'utf8' });
    return new Map(
      out
        .trim()
        .split('\n')
        .map((l) => {
          const i = l.indexOf(' ');
          return [l.slice(0, i), l.slice(i + 1)] as const;
        }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(CC === undefined)('layout.ts against bpf/xdp_fwd.h', () => {
  it('every name, size, offset and constant agrees with the C compiler', () => {
    const ours = expected();
    const theirs = headerValues([...ours.keys()]);
    expect(Object.fromEntries(theirs)).toEqual(Object.fromEntries(ours));
    // and nothing slipped through the EXPRS table
    for (const k of ours.keys()) {
      if (k.startsWith('SIZEOF_') || k.startsWith('OFFSETOF_')) expect(EXPRS[k], k).toBeDefined();
    }
  });
});

describe('fk_config', () => {
  it('encodes every field at its offset and decodes back', () => {
    const cfg: L.FkConfig = {
      fibFlags: L.BPF_FIB_LOOKUP_DIRECT | L.BPF_FIB_LOOKUP_TBID,
      slot: 7,
      tbid: 0x01020304,
      mark: 0xdeadbeef,
      ipv4: true,
      ipv6: false,
      ip4Options: false,
      missTrack: true,
      dmacCheck: true,
      devMac: '02:00:00:aa:bb:cc',
    };
    const b = L.encodeConfig(cfg);
    expect(b.toString('hex')).toBe(
      '09000000' + '07000000' + '04030201' + 'efbeadde' + '0100000101000000' + '020000aabbcc0000',
    );
    expect(L.decodeConfig(b)).toEqual(cfg);
    expect(L.decodeConfig(L.encodeConfig(L.defaultConfig()))).toEqual(L.defaultConfig());
  });

  it('rejects values that do not fit', () => {
    expect(() => L.encodeConfig({ ...L.defaultConfig(), slot: -1 })).toThrow(/slot/);
    expect(() => L.encodeConfig({ ...L.defaultConfig(), devMac: 'nope' })).toThrow();
    expect(() => L.decodeConfig(Buffer.alloc(31))).toThrow(/32 bytes/);
  });
});

describe('fk_stats', () => {
  it('sums packets and bytes over every CPU, at the right index', () => {
    const cpu = (scale: number) => {
      const b = Buffer.alloc(L.SIZEOF_FK_STATS);
      const put = (base: number, i: number, p: number, by: number) => {
        b.writeBigUInt64LE(BigInt(p * scale), base + i * 16);
        b.writeBigUInt64LE(BigInt(by * scale), base + i * 16 + 8);
      };
      put(L.OFFSETOF_STATS_ACTION, 4, 10, 1000); // redirect
      put(L.OFFSETOF_STATS_RESULT, 7, 3, 300); // no_neigh
      put(L.OFFSETOF_STATS_RESULT, 10, 1, 64); // error
      put(L.OFFSETOF_STATS_REASON, L.REASON_NAMES.indexOf('no_txport'), 2, 128);
      put(L.OFFSETOF_STATS_REASON, L.REASON_NAMES.indexOf('netfilter'), 1, 100);
      return b;
    };
    const s = L.decodeStats([cpu(1), cpu(2)]);
    expect(s.actions.redirect).toEqual({ packets: 30, bytes: 3000 });
    // a redirected SUCCESS is counted only as action[REDIRECT]; results.success includes it
    expect(s.results.success).toEqual({ packets: 30, bytes: 3000 });
    expect(s.actions.pass).toEqual({ packets: 0, bytes: 0 });
    expect(s.results.no_neigh).toEqual({ packets: 9, bytes: 900 });
    expect(s.results.error).toEqual({ packets: 3, bytes: 192 });
    expect(s.reasons.no_txport).toEqual({ packets: 6, bytes: 384 });
    expect(s.reasons.netfilter).toEqual({ packets: 3, bytes: 300 });
    expect(Object.keys(s.results)).toEqual([...L.RESULT_NAMES]);
    expect(Object.keys(s.reasons)).toEqual([...L.REASON_NAMES]);
  });
});

describe('fk_miss', () => {
  it('round-trips keys and decodes values of both families', () => {
    for (const k of [
      { egressIfindex: 5, family: 4 as const, dst: '192.0.2.7' },
      { egressIfindex: 70000, family: 6 as const, dst: '2001:db8::7' },
    ]) {
      expect(L.decodeMissKey(L.encodeMissKey(k))).toEqual(k);
    }
    const key = L.encodeMissKey({ egressIfindex: 3, family: 4, dst: '10.0.0.9' });
    expect(key.toString('hex')).toBe('03000000' + '02000000' + '0a000009' + '0'.repeat(24));
    const val = Buffer.alloc(L.SIZEOF_FK_MISS_VAL);
    val.writeBigUInt64LE(42n, 0);
    val.writeBigUInt64LE(123456789012n, 8);
    Buffer.from('fe800000000000000000000000000001', 'hex').copy(val, 16);
    val[32] = L.FK_AF_INET6;
    expect(L.decodeMissEntry(key, val)).toEqual({
      egressIfindex: 3,
      family: 4,
      dst: '10.0.0.9',
      nexthop: 'fe80::1',
      nexthopFamily: 6,
      hits: 42,
      lastSeenNs: 123456789012n,
    });
  });

  it('refuses an address of the wrong family and an unknown family byte', () => {
    expect(() => L.encodeMissKey({ egressIfindex: 1, family: 4, dst: '::1' })).toThrow(/IPv4/);
    const bad = Buffer.alloc(L.SIZEOF_FK_MISS_KEY);
    bad[4] = 99;
    expect(() => L.decodeMissKey(bad)).toThrow(/family 99/);
  });
});

describe.skipIf(CC === undefined)('fk_state.local4 against FK_LOCAL4_HASH', () => {
  it('the table puts every address where the program probes for it', () => {
    const addrs = ['10.61.1.1', '192.0.2.1', '172.16.0.9', '100.64.3.2', '10.0.0.1'];
    const dir = mkdtempSync(join(tmpdir(), 'fk-local4-'));
    try {
      const lines = addrs.map(
        (a) =>
          `  { unsigned char b[4] = {${a.split('.').join(',')}}; __u32 v; memcpy(&v, b, 4); printf("%u\\n", FK_LOCAL4_HASH(v)); }`,
      );
      const src = [
        '#include <stdio.h>',
        '#include <string.h>',
        '#include "xdp_fwd.h"',
        'int main(void) {',
        ...lines,
        '  return 0;',
        '}',
      ].join('\n');
      writeFileSync(join(dir, 'h.c'), src);
      execFileSync(CC!, [
        '-Wall',
        '-Werror',
        `-I${BPF_DIR}`,
        '-o',
        join(dir, 'h'),
        join(dir, 'h.c'),
      ]);
      const c = execFileSync(join(dir, 'h'), { encoding: 'utf8' }).trim().split('\n').map(Number);
      expect(addrs.map((a) => S.local4Hash(a))).toEqual(c);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const { table, overflow } = S.buildLocal4(addrs);
    expect(overflow).toEqual([]);
    for (const a of addrs) {
      const h = S.local4Hash(a);
      const slots = [0, 1, 2, 3].map((p) =>
        [
          ...table.subarray(
            ((h + p) % S.FK_LOCAL4_SLOTS) * 4,
            ((h + p) % S.FK_LOCAL4_SLOTS) * 4 + 4,
          ),
        ].join('.'),
      );
      expect(slots, a).toContain(a);
    }
  });
});

describe('fk_state, its local-address table and the LPM keys', () => {
  it('an address that finds its probe window full overflows (to fk_local4w)', () => {
    // addresses with the same first slot: the fifth has no room
    const same: string[] = [];
    const want = S.local4Hash('10.0.0.1');
    for (let i = 1; same.length < 6 && i < 1 << 20; i++) {
      const a = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      if (S.local4Hash(a) === want) same.push(a);
    }
    const { overflow } = S.buildLocal4(same);
    expect(overflow).toEqual(same.slice(4));
    expect(() => S.buildLocal4(['0.0.0.0'])).toThrow(/empty slot/);
    expect(() => S.buildLocal4(['::1'])).toThrow(/IPv4/);
  });

  it('fk_state encodes and decodes every field', () => {
    const dev = Array.from({ length: 64 }, () => ({ ...S.NOT_READY }));
    const netfilter = L.REASON_NAMES.indexOf('netfilter');
    const xfrm = L.REASON_NAMES.indexOf('xfrm');
    dev[3] = {
      ...{ ready: true, rpFilter: 2 as const, v4Addr: true, ip6Off: true },
      ...{ policy4: netfilter, policy6: xfrm },
    };
    const st = {
      ...{ mpPolicy4: 3, mpPolicy6: 1, mpath4: true, mpath6: false, local4w: true },
      ...{ routeMtu4: 1400, routeMtu6: 0, rpRules: true, rpGen: 0x01020304, dev },
    };
    const b = S.encodeState(st);
    expect(b.length).toBe(S.SIZEOF_FK_STATE);
    expect(b.subarray(0, 16).toString('hex')).toBe('03010100010078050000010004030201');
    expect(b.subarray(16 + 3 * 8, 16 + 4 * 8).toString('hex')).toBe(
      `01020101${netfilter.toString(16).padStart(2, '0')}${xfrm.toString(16).padStart(2, '0')}0000`,
    );
    expect(S.decodeState(b)).toEqual({
      ...st,
      unwatched: false,
      local4: Buffer.alloc(S.SIZEOF_FK_LOCAL4),
    });
    expect(S.decodeState(S.encodeState({ ...st, unwatched: true }))[`unwatched`]).toBe(true);
    expect(S.encodeWatchUntil(0x0102n).toString('hex')).toBe('0201000000000000');
    const { table } = S.buildLocal4(['10.0.0.1']);
    expect(S.decodeState(S.encodeState({ ...st, local4: table })).local4).toEqual(table);
    expect(() => S.encodeState({ ...st, mpPolicy4: 256 })).toThrow(/mpPolicy4/);
    expect(() => S.encodeState({ ...st, rpGen: -1 })).toThrow(/rpGen/);
  });

  it('LPM keys: host-order prefix length, the address masked to it', () => {
    expect(S.lpm4Key('10.99.1.2', 16).toString('hex')).toBe('10000000' + '0a630000');
    expect(S.lpm6Key('fd99:1::5', 32).toString('hex')).toBe(
      '20000000' + 'fd990001' + '0'.repeat(24),
    );
    expect(() => S.lpm4Key('10.0.0.0', 33)).toThrow(/IPv4 prefix/);
  });
});
