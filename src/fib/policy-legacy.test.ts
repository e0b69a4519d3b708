// The legacy iptables reader: its layouts against the kernel's UAPI headers (a C program
// prints them), and the parsing of a table as the kernel hands it over, on entries that C
// program builds with the headers' own structs.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as L from './policy-legacy.js';

const CC = ['cc', 'gcc', 'clang'].find((c) => spawnSync(c, ['--version']).status === 0);

/** Compiles and runs `body` with the iptables headers; returns its stdout. */
function c(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fk-ipt-'));
  try {
    const src = [
      '#include <stdio.h>',
      '#include <stddef.h>',
      '#include <string.h>',
      '#include <netinet/in.h>',
      '#include <linux/netfilter.h>',
      '#include <linux/netfilter_ipv4/ip_tables.h>',
      '#include <linux/netfilter_ipv6/ip6_tables.h>',
      'int main(void) {',
      body,
      '  return 0;',
      '}',
    ].join('\n');
    writeFileSync(join(dir, 'u.c'), src);
    execFileSync(CC!, ['-Wall', '-Werror', '-o', join(dir, 'u'), join(dir, 'u.c')]);
    return execFileSync(join(dir, 'u'), { encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const PAIRS: [string, number][] = [
  ['sizeof(struct ipt_getinfo)', L.SIZEOF_IPT_GETINFO],
  ['sizeof(struct ip6t_getinfo)', L.SIZEOF_IPT_GETINFO],
  ['offsetof(struct ipt_getinfo, valid_hooks)', 32],
  ['offsetof(struct ipt_getinfo, underflow)', 56],
  ['offsetof(struct ipt_getinfo, num_entries)', 76],
  ['offsetof(struct ip6t_getinfo, underflow)', 56],
  ['offsetof(struct ip6t_getinfo, num_entries)', 76],
  ['offsetof(struct ipt_entry, target_offset)', L.OFFSETOF_IPT_TARGET_OFFSET],
  ['offsetof(struct ip6t_entry, target_offset)', L.OFFSETOF_IP6T_TARGET_OFFSET],
  ['sizeof(struct xt_entry_target)', L.SIZEOF_XT_ENTRY_TARGET],
  ['-NF_ACCEPT - 1', L.XT_VERDICT_ACCEPT],
];

/**
 * A filter table as the kernel would hand it over, built in C: INPUT and OUTPUT policy
 * ACCEPT, FORWARD policy DROP, `extra` more standard entries before the error entry.
 * Prints the getinfo bytes and the entries in hex, one line each.
 */
function table(family: 4 | 6, extra: number): { info: Buffer; entries: Buffer } {
  const p = family === 4 ? 'ipt' : 'ip6t';
  const out = c(`
  struct E { struct ${p}_entry e; struct xt_standard_target t; };
  struct E es[8]; memset(es, 0, sizeof(es));
  struct ${p}_getinfo gi; memset(&gi, 0, sizeof(gi));
  int verdict[3] = { -NF_ACCEPT - 1, -NF_DROP - 1, -NF_ACCEPT - 1 };
  int n = 3 + ${extra} + 1;
  for (int i = 0; i < n; i++) {
    es[i].e.target_offset = sizeof(struct ${p}_entry);
    es[i].e.next_offset = sizeof(struct E);
    es[i].t.target.u.user.target_size = sizeof(struct xt_standard_target);
    es[i].t.verdict = i < 3 ? verdict[i] : -NF_ACCEPT - 1;
  }
  gi.valid_hooks = (1 << NF_INET_LOCAL_IN) | (1 << NF_INET_FORWARD) | (1 << NF_INET_LOCAL_OUT);
  gi.underflow[NF_INET_LOCAL_IN] = 0;
  gi.underflow[NF_INET_FORWARD] = sizeof(struct E);
  gi.underflow[NF_INET_LOCAL_OUT] = 2 * sizeof(struct E);
  gi.num_entries = n;
  gi.size = n * sizeof(struct E);
  unsigned char *b = (unsigned char *)&gi;
  for (size_t i = 0; i < sizeof(gi); i++) printf("%02x", b[i]);
  printf("\\n");
  b = (unsigned char *)es;
  for (size_t i = 0; i < n * sizeof(struct E); i++) printf("%02x", b[i]);
  printf("\\n");`);
  const [info, entries] = out.trim().split('\n');
  return { info: Buffer.from(info!, 'hex'), entries: Buffer.from(entries!, 'hex') };
}

describe.skipIf(CC === undefined)('legacy iptables tables', () => {
  it('the layouts agree with the kernel headers', () => {
    const theirs = c(PAIRS.map(([e]) => `  printf("%lld\\n", (long long)(${e}));`).join('\n'))
      .trim()
      .split('\n')
      .map(Number);
    expect(Object.fromEntries(PAIRS.map(([e], i) => [e, theirs[i]]))).toEqual(
      Object.fromEntries(PAIRS),
    );
  });

  it('reads the built-in chains policies and counts what else the table holds', () => {
    for (const family of [4, 6] as const) {
      const t = table(family, 0);
      const parsed = L.parseLegacyTable(family, 'filter', t.info, t.entries);
      expect(parsed).toEqual({
        family,
        name: 'filter',
        chains: [
          { hook: 'INPUT', policy: 'ACCEPT' },
          { hook: 'FORWARD', policy: 'DROP' },
          { hook: 'OUTPUT', policy: 'ACCEPT' },
        ],
        extra: 0,
      });
      expect(L.legacyEffect(parsed)).toMatch(/FORWARD policy DROP/);
      const rules = L.parseLegacyTable(
        family,
        'filter',
        ...(Object.values(table(family, 2)) as [Buffer, Buffer]),
      );
      expect(rules.extra).toBe(2);
    }
  });

  it('a table of ACCEPT policies and nothing else does nothing; nat always does', () => {
    const open = { family: 4 as const, name: 'filter', extra: 0 };
    const chains = [{ hook: 'FORWARD' as const, policy: 'ACCEPT' }];
    expect(L.legacyEffect({ ...open, chains })).toBeUndefined();
    expect(L.legacyEffect({ ...open, chains, extra: 1 })).toMatch(/1 rules or chains/);
    expect(L.legacyEffect({ ...open, name: 'nat', chains })).toMatch(/nat/);
  });

  it('refuses a getinfo that is too short', () => {
    expect(() => L.parseLegacyTable(4, 'x', Buffer.alloc(10), Buffer.alloc(0))).toThrow(/84 bytes/);
  });
});
