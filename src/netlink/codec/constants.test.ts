// Every constant of constants.ts against the kernel UAPI headers of this machine: a small C
// program prints the headers' values and sizes, and they must equal ours. Names the
// installed headers do not know yet are dropped (and must stay few).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as C from './constants.js';

const CC = ['cc', 'gcc', 'clang'].find((c) => spawnSync(c, ['--version']).status === 0);
const HEADERS = '/usr/include/linux/rtnetlink.h';

const STRUCTS: Record<string, string> = {
  SIZEOF_NLMSGHDR: 'struct nlmsghdr',
  SIZEOF_NLATTR: 'struct nlattr',
  SIZEOF_NLMSGERR: 'struct nlmsgerr',
  SIZEOF_IFINFOMSG: 'struct ifinfomsg',
  SIZEOF_IFADDRMSG: 'struct ifaddrmsg',
  SIZEOF_RTMSG: 'struct rtmsg',
  SIZEOF_NDMSG: 'struct ndmsg',
  SIZEOF_RTNEXTHOP: 'struct rtnexthop',
  SIZEOF_NDA_CACHEINFO: 'struct nda_cacheinfo',
  SIZEOF_IFA_CACHEINFO: 'struct ifa_cacheinfo',
  SIZEOF_RTA_CACHEINFO: 'struct rta_cacheinfo',
  SIZEOF_FIB_RULE_HDR: 'struct fib_rule_hdr',
  SIZEOF_FIB_RULE_UID_RANGE: 'struct fib_rule_uid_range',
  SIZEOF_FIB_RULE_PORT_RANGE: 'struct fib_rule_port_range',
};

/** Values the kernel defines outside the UAPI headers (checked by hand). */
const NOT_IN_UAPI = new Set(['INFINITY_LIFE_TIME']);

function headerValues(names: string[]): Map<string, number> {
  const dir = mkdtempSync(join(tmpdir(), 'fk-nlconst-'));
  try {
    let pending = names;
    for (let attempt = 0; attempt < 5; attempt++) {
      const lines = pending.map((n) => {
        // NLA_TYPE_MASK is ~(flags), an int in C: compare its 16 bits.
        const expr = STRUCTS[n]
          ? `sizeof(${STRUCTS[n]})`
          : n === 'NLA_TYPE_MASK'
            ? `(unsigned short)${n}`
            : n;
        return `  printf("%s %lld\\n", "${n}", (long long)(${expr}));`;
      });
      const src = [
        '#include <stdio.h>',
        '#include <sys/socket.h>',
        '#include <linux/netlink.h>',
        '#include <linux/rtnetlink.h>',
        '#include <linux/if_link.h>',
        '#include <linux/if_addr.h>',
        '#include <linux/if_arp.h>',
        '#include <linux/neighbour.h>',
        '#include <linux/fib_rules.h>',
        '#include <linux/veth.h>',
        '#include <linux/if.h>',
        'int main(void) {',
        ...lines,
        '  return 0;',
        '}',
      ].join('\n');
      writeFileSync(join(dir, 'c.c'), src);
      const r = spawnSync(CC!, ['-w', '-o', join(dir, 'c'), join(dir, 'c.c')], {
        encoding: 'utf8',
      });
      if (r.status === 0) {
        const out = execFileSync(join(dir, 'c'), { encoding: 'utf8' });
        return new Map(
          out
            .trim()
            .split('\n')
            .map((l) => {
              const [k, v] = l.split(' ');
              return [k!, Number(v)] as const;
            }),
        );
      }
      const unknown = new Set(
        [
          ...r.stderr.matchAll(
            /'([A-Z][A-Z0-9_]+)' undeclared|undeclared identifier '([A-Z][A-Z0-9_]+)'/g,
          ),
        ].map((m) => m[1] ?? m[2]!),
      );
      if (unknown.size === 0) throw new Error(`cc failed: ${r.stderr.slice(0, 2000)}`);
      pending = pending.filter((n) => !unknown.has(n));
    }
    throw new Error('too many unknown names');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!CC || !existsSync(HEADERS))('constants', () => {
  it('equal the kernel UAPI headers', () => {
    const ours = Object.entries(C).filter(
      (e): e is [string, number] => typeof e[1] === 'number' && !NOT_IN_UAPI.has(e[0]),
    );
    const theirs = headerValues(ours.map(([n]) => n));
    const checked = ours.filter(([n]) => theirs.has(n));
    for (const [name, value] of checked) expect(value, name).toBe(theirs.get(name));
    const unknown = ours.filter(([n]) => !theirs.has(n)).map(([n]) => n);
    // Only names newer than the installed headers may be missing.
    expect(unknown.length, `unknown to the headers: ${unknown.join(', ')}`).toBeLessThan(10);
    expect(checked.length).toBeGreaterThan(250);
  });
});
