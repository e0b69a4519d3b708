// The constants and layouts of the policy codecs (nftables, xfrm, tc) against the kernel's
// UAPI headers as the C compiler sees them: a small C program prints each, and each must
// equal ours.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as N from './nftables.js';
import * as T from './tc.js';
import * as X from './xfrm.js';

const CC = ['cc', 'gcc', 'clang'].find((c) => spawnSync(c, ['--version']).status === 0);

/** C expression -> our value. */
const PAIRS: [string, number][] = [
  ['NETLINK_NETFILTER', N.NETLINK_NETFILTER],
  ['sizeof(struct nfgenmsg)', N.SIZEOF_NFGENMSG],
  ['NFNETLINK_V0', N.NFNETLINK_V0],
  ['NFNL_SUBSYS_NFTABLES', N.NFNL_SUBSYS_NFTABLES],
  ['NFNLGRP_NFTABLES', N.NFNLGRP_NFTABLES],
  ['NFT_MSG_NEWTABLE', N.NFT_MSG_NEWTABLE],
  ['NFT_MSG_GETTABLE', N.NFT_MSG_GETTABLE],
  ['NFT_MSG_NEWCHAIN', N.NFT_MSG_NEWCHAIN],
  ['NFT_MSG_GETCHAIN', N.NFT_MSG_GETCHAIN],
  ['NFT_MSG_NEWRULE', N.NFT_MSG_NEWRULE],
  ['NFT_MSG_GETRULE', N.NFT_MSG_GETRULE],
  ['NFT_MSG_NEWGEN', N.NFT_MSG_NEWGEN],
  ['NFT_MSG_GETGEN', N.NFT_MSG_GETGEN],
  ['NFTA_TABLE_NAME', N.NFTA_TABLE_NAME],
  ['NFTA_TABLE_FLAGS', N.NFTA_TABLE_FLAGS],
  ['NFT_TABLE_F_DORMANT', N.NFT_TABLE_F_DORMANT],
  ['NFTA_CHAIN_TABLE', N.NFTA_CHAIN_TABLE],
  ['NFTA_CHAIN_NAME', N.NFTA_CHAIN_NAME],
  ['NFTA_CHAIN_HOOK', N.NFTA_CHAIN_HOOK],
  ['NFTA_CHAIN_POLICY', N.NFTA_CHAIN_POLICY],
  ['NFTA_CHAIN_TYPE', N.NFTA_CHAIN_TYPE],
  ['NFTA_CHAIN_FLAGS', N.NFTA_CHAIN_FLAGS],
  ['NFTA_HOOK_HOOKNUM', N.NFTA_HOOK_HOOKNUM],
  ['NFTA_HOOK_PRIORITY', N.NFTA_HOOK_PRIORITY],
  ['NFTA_HOOK_DEV', N.NFTA_HOOK_DEV],
  ['NFTA_HOOK_DEVS', N.NFTA_HOOK_DEVS],
  ['NFTA_DEVICE_NAME', N.NFTA_DEVICE_NAME],
  ['NFTA_RULE_TABLE', N.NFTA_RULE_TABLE],
  ['NFTA_RULE_CHAIN', N.NFTA_RULE_CHAIN],
  ['NFTA_RULE_HANDLE', N.NFTA_RULE_HANDLE],
  ['NFTA_RULE_EXPRESSIONS', N.NFTA_RULE_EXPRESSIONS],
  ['NFTA_LIST_ELEM', N.NFTA_LIST_ELEM],
  ['NFTA_EXPR_NAME', N.NFTA_EXPR_NAME],
  ['NFTA_EXPR_DATA', N.NFTA_EXPR_DATA],
  ['NFTA_DYNSET_EXPR', N.NFTA_DYNSET_EXPR],
  ['NFTA_GEN_ID', N.NFTA_GEN_ID],
  ['NFPROTO_INET', N.NFPROTO_INET],
  ['NFPROTO_IPV4', N.NFPROTO_IPV4],
  ['NFPROTO_ARP', N.NFPROTO_ARP],
  ['NFPROTO_NETDEV', N.NFPROTO_NETDEV],
  ['NFPROTO_BRIDGE', N.NFPROTO_BRIDGE],
  ['NFPROTO_IPV6', N.NFPROTO_IPV6],
  ['NF_INET_PRE_ROUTING', N.NF_INET_PRE_ROUTING],
  ['NF_INET_LOCAL_IN', N.NF_INET_LOCAL_IN],
  ['NF_INET_FORWARD', N.NF_INET_FORWARD],
  ['NF_INET_LOCAL_OUT', N.NF_INET_LOCAL_OUT],
  ['NF_INET_POST_ROUTING', N.NF_INET_POST_ROUTING],
  ['NF_INET_INGRESS', N.NF_INET_INGRESS],
  ['NF_NETDEV_INGRESS', N.NF_NETDEV_INGRESS],
  ['NF_DROP', N.NF_DROP],
  ['NF_ACCEPT', N.NF_ACCEPT],
  ['NETLINK_XFRM', X.NETLINK_XFRM],
  ['XFRM_MSG_NEWPOLICY', X.XFRM_MSG_NEWPOLICY],
  ['XFRM_MSG_GETPOLICY', X.XFRM_MSG_GETPOLICY],
  ['XFRM_MSG_GETDEFAULT', X.XFRM_MSG_GETDEFAULT],
  ['XFRMNLGRP_POLICY', X.XFRMNLGRP_POLICY],
  ['sizeof(struct xfrm_selector)', X.SIZEOF_XFRM_SELECTOR],
  ['sizeof(struct xfrm_userpolicy_info)', X.SIZEOF_XFRM_USERPOLICY_INFO],
  ['sizeof(struct xfrm_userpolicy_default)', X.SIZEOF_XFRM_USERPOLICY_DEFAULT],
  ['offsetof(struct xfrm_selector, family)', X.OFFSETOF_XFRM_SEL_FAMILY],
  ['offsetof(struct xfrm_selector, prefixlen_d)', 42],
  ['offsetof(struct xfrm_selector, prefixlen_s)', 43],
  ['offsetof(struct xfrm_selector, proto)', 44],
  ['offsetof(struct xfrm_selector, ifindex)', 48],
  ['offsetof(struct xfrm_selector, saddr)', 16],
  ['offsetof(struct xfrm_userpolicy_info, priority)', X.OFFSETOF_XFRM_POL_PRIORITY],
  ['offsetof(struct xfrm_userpolicy_info, index)', X.OFFSETOF_XFRM_POL_INDEX],
  ['offsetof(struct xfrm_userpolicy_info, dir)', X.OFFSETOF_XFRM_POL_DIR],
  ['offsetof(struct xfrm_userpolicy_info, action)', X.OFFSETOF_XFRM_POL_ACTION],
  ['XFRM_POLICY_IN', X.XFRM_POLICY_IN],
  ['XFRM_POLICY_OUT', X.XFRM_POLICY_OUT],
  ['XFRM_POLICY_FWD', X.XFRM_POLICY_FWD],
  ['XFRM_POLICY_ALLOW', X.XFRM_POLICY_ALLOW],
  ['XFRM_POLICY_BLOCK', X.XFRM_POLICY_BLOCK],
  ['XFRM_USERPOLICY_UNSPEC', X.XFRM_USERPOLICY_UNSPEC],
  ['XFRM_USERPOLICY_BLOCK', X.XFRM_USERPOLICY_BLOCK],
  ['XFRM_USERPOLICY_ACCEPT', X.XFRM_USERPOLICY_ACCEPT],
  ['RTM_NEWQDISC', T.RTM_NEWQDISC],
  ['RTM_DELQDISC', T.RTM_DELQDISC],
  ['RTM_GETQDISC', T.RTM_GETQDISC],
  ['RTM_NEWTFILTER', T.RTM_NEWTFILTER],
  ['RTM_DELTFILTER', T.RTM_DELTFILTER],
  ['RTM_GETTFILTER', T.RTM_GETTFILTER],
  ['sizeof(struct tcmsg)', T.SIZEOF_TCMSG],
  ['offsetof(struct tcmsg, tcm_ifindex)', 4],
  ['offsetof(struct tcmsg, tcm_parent)', 12],
  ['TCA_KIND', T.TCA_KIND],
  ['TCA_CHAIN', T.TCA_CHAIN],
  ['TC_H_ROOT', T.TC_H_ROOT],
  ['TC_H_INGRESS', T.TC_H_INGRESS],
  ['TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)', T.TC_PARENT_INGRESS],
  ['TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS)', T.TC_PARENT_EGRESS],
];

function fromC(exprs: readonly string[]): number[] {
  const dir = mkdtempSync(join(tmpdir(), 'fk-uapi-'));
  try {
    const src = [
      '#include <stdio.h>',
      '#include <stddef.h>',
      '#include <netinet/in.h>',
      '#include <linux/netlink.h>',
      '#include <linux/rtnetlink.h>',
      '#include <linux/pkt_sched.h>',
      '#include <linux/netfilter.h>',
      '#include <linux/netfilter/nfnetlink.h>',
      '#include <linux/netfilter/nf_tables.h>',
      '#include <linux/xfrm.h>',
      'int main(void) {',
      ...exprs.map((e) => `  printf("%lld\\n", (long long)(${e}));`),
      '  return 0;',
      '}',
    ].join('\n');
    writeFileSync(join(dir, 'u.c'), src);
    execFileSync(CC!, ['-Wall', '-Werror', '-o', join(dir, 'u'), join(dir, 'u.c')]);
    return execFileSync(join(dir, 'u'), { encoding: 'utf8' }).trim().split('\n').map(Number);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(CC === undefined)('policy codecs against the kernel UAPI headers', () => {
  it('every constant, size and offset agrees with the C compiler', () => {
    const theirs = fromC(PAIRS.map(([e]) => e));
    expect(Object.fromEntries(PAIRS.map(([e], i) => [e, theirs[i]]))).toEqual(
      Object.fromEntries(PAIRS),
    );
  });
});
