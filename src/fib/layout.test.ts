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
};

function headerValues(names: string[]): Map<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'fk-xdplayout-'));
  try {
    const lines = names.map((n) => {
      if (/_NAME$|^FK_MAP_|^FK_CFG_VAR$/.test(n)) return `  printf("%s %s\\n", "${n}", ${n});`;
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
      put(L.OFFSETOF_STATS_REASON, 13, 2, 128); // no_txport
      return b;
    };
    const s = L.decodeStats([cpu(1), cpu(2)]);
    expect(s.actions.redirect).toEqual({ packets: 30, bytes: 3000 });
    expect(s.actions.pass).toEqual({ packets: 0, bytes: 0 });
    expect(s.results.no_neigh).toEqual({ packets: 9, bytes: 900 });
    expect(s.results.error).toEqual({ packets: 3, bytes: 192 });
    expect(s.reasons.no_txport).toEqual({ packets: 6, bytes: 384 });
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
