// nftables over nfnetlink (NETLINK_NETFILTER, subsystem NFNL_SUBSYS_NFTABLES): the dump
// requests of tables, chains and rules, and their answers as `nft list ruleset` shows them —
// only what tells whether the ruleset acts on a packet: a table's flags (dormant), a base
// chain's hook, priority, devices, type and policy, and the expressions of each rule by name.
// Message = nlmsghdr + nfgenmsg (family, version, resource id) + attributes; nf_tables'
// integers are big-endian.
import { ParseError } from './errors.js';
import { expectFixed, forEachAttr, getString, type Writer } from './wire.js';
import { NLM_F_DUMP, NLM_F_REQUEST, SIZEOF_NLMSGHDR } from './constants.js';
import { i32be, u32be } from '../../util/index.js';

export const NETLINK_NETFILTER = 12;
export const SIZEOF_NFGENMSG = 4;
export const NFNETLINK_V0 = 0;
export const NFNL_SUBSYS_NFTABLES = 10;
/** The multicast group of every nf_tables change (a transaction ends with NFT_MSG_NEWGEN). */
export const NFNLGRP_NFTABLES = 7;

export const NFT_MSG_NEWTABLE = 0;
export const NFT_MSG_GETTABLE = 1;
export const NFT_MSG_NEWCHAIN = 3;
export const NFT_MSG_GETCHAIN = 4;
export const NFT_MSG_NEWRULE = 6;
export const NFT_MSG_GETRULE = 7;
export const NFT_MSG_NEWGEN = 15;
export const NFT_MSG_GETGEN = 16;

/** nlmsg_type of an nf_tables message. */
export const nftType = (msg: number): number => (NFNL_SUBSYS_NFTABLES << 8) | msg;

export const NFTA_TABLE_NAME = 1;
export const NFTA_TABLE_FLAGS = 2;
export const NFT_TABLE_F_DORMANT = 0x1;

export const NFTA_CHAIN_TABLE = 1;
export const NFTA_CHAIN_NAME = 3;
export const NFTA_CHAIN_HOOK = 4;
export const NFTA_CHAIN_POLICY = 5;
export const NFTA_CHAIN_TYPE = 7;
export const NFTA_CHAIN_FLAGS = 10;
export const NFTA_HOOK_HOOKNUM = 1;
export const NFTA_HOOK_PRIORITY = 2;
export const NFTA_HOOK_DEV = 3;
export const NFTA_HOOK_DEVS = 4;
export const NFTA_DEVICE_NAME = 1;
/** A device name prefix (a wildcard, Linux 6.16+). */
export const NFTA_DEVICE_PREFIX = 2;

export const NFTA_RULE_TABLE = 1;
export const NFTA_RULE_CHAIN = 2;
export const NFTA_RULE_HANDLE = 3;
export const NFTA_RULE_EXPRESSIONS = 4;
export const NFTA_LIST_ELEM = 1;
export const NFTA_EXPR_NAME = 1;
export const NFTA_EXPR_DATA = 2;
/** dynset: the expressions it attaches to the elements it adds. */
export const NFTA_DYNSET_EXPR = 7;
export const NFTA_DYNSET_EXPRESSIONS = 10;

export const NFTA_GEN_ID = 1;

/** Netfilter families (NFPROTO_*). */
export const NFPROTO_INET = 1;
export const NFPROTO_IPV4 = 2;
export const NFPROTO_ARP = 3;
export const NFPROTO_NETDEV = 5;
export const NFPROTO_BRIDGE = 7;
export const NFPROTO_IPV6 = 10;

/** Hooks of the ip, ip6 and inet families (NF_INET_*); netdev: 0 ingress, 1 egress. */
export const NF_INET_PRE_ROUTING = 0;
export const NF_INET_LOCAL_IN = 1;
export const NF_INET_FORWARD = 2;
export const NF_INET_LOCAL_OUT = 3;
export const NF_INET_POST_ROUTING = 4;
export const NF_INET_INGRESS = 5;
export const NF_NETDEV_INGRESS = 0;
export const NF_NETDEV_EGRESS = 1;

/** Verdicts (a base chain's policy). */
export const NF_DROP = 0;
export const NF_ACCEPT = 1;

/** A table (`nft list tables`). */
export interface NftTable {
  family: number;
  name: string;
  flags: number;
}

/** A chain (`nft list chains`); a base chain has a hook. */
export interface NftChain {
  family: number;
  table: string;
  name: string;
  hook?: {
    num: number;
    priority: number;
    /** Devices of a netdev (or inet ingress) hook; prefixes end in `*`. */
    devices: string[];
  };
  /** NF_ACCEPT or NF_DROP, base chains only. */
  policy?: number;
  /** filter, nat or route, base chains only. */
  type?: string;
  flags: number;
}

/** A rule: where it lives and the names of its expressions (dynset's included). */
export interface NftRule {
  family: number;
  table: string;
  chain: string;
  handle: bigint;
  exprs: string[];
}

/** A dump request of nf_tables objects of every family: `msg` is NFT_MSG_GET*. */
export function formatNftDump(w: Writer, msg: number, family = 0): void {
  const start = w.begin(nftType(msg), NLM_F_REQUEST | NLM_F_DUMP, SIZEOF_NFGENMSG);
  w.buf[start + SIZEOF_NLMSGHDR] = family;
  w.buf[start + SIZEOF_NLMSGHDR + 1] = NFNETLINK_V0;
  w.end(start);
}

/** NFT_MSG_GETGEN: the ruleset's generation (answered by NFT_MSG_NEWGEN). */
export function formatNftGetGen(w: Writer): void {
  const start = w.begin(nftType(NFT_MSG_GETGEN), NLM_F_REQUEST, SIZEOF_NFGENMSG);
  w.end(start);
}

function be32(buf: Buffer, off: number, len: number, what: string): number {
  if (len !== 4) throw new ParseError(`${what}: ${len} bytes, expected 4`, off);
  return u32be(buf, off);
}

/** The nfgenmsg family and where the attributes start and end. */
function body(buf: Buffer, off: number, len: number, what: string) {
  expectFixed(off, len, SIZEOF_NFGENMSG, what);
  return {
    family: buf[off + SIZEOF_NLMSGHDR]!,
    start: off + SIZEOF_NLMSGHDR + SIZEOF_NFGENMSG,
    end: off + len,
  };
}

export function parseNftTable(buf: Buffer, off: number, len: number): NftTable {
  const b = body(buf, off, len, 'nft table');
  const t: NftTable = { family: b.family, name: '', flags: 0 };
  forEachAttr(buf, b.start, b.end, (type, o, l) => {
    if (type === NFTA_TABLE_NAME) t.name = getString(buf, o, l);
    else if (type === NFTA_TABLE_FLAGS) t.flags = be32(buf, o, l, 'NFTA_TABLE_FLAGS');
  });
  return t;
}

function parseHook(buf: Buffer, start: number, end: number): NonNullable<NftChain['hook']> {
  const hook = { num: -1, priority: 0, devices: [] as string[] };
  let single: string | undefined;
  forEachAttr(buf, start, end, (type, o, l) => {
    if (type === NFTA_HOOK_HOOKNUM) hook.num = be32(buf, o, l, 'NFTA_HOOK_HOOKNUM');
    else if (type === NFTA_HOOK_PRIORITY) hook.priority = i32be(buf, o);
    else if (type === NFTA_HOOK_DEV) single = getString(buf, o, l);
    else if (type === NFTA_HOOK_DEVS) {
      forEachAttr(buf, o, o + l, (t, oo, ll) => {
        if (t === NFTA_DEVICE_NAME) hook.devices.push(getString(buf, oo, ll));
        else if (t === NFTA_DEVICE_PREFIX) hook.devices.push(`${getString(buf, oo, ll)}*`);
      });
    }
  });
  if (hook.num < 0) throw new ParseError('nft chain hook without NFTA_HOOK_HOOKNUM', start);
  if (hook.devices.length === 0 && single !== undefined) hook.devices.push(single);
  return hook;
}

export function parseNftChain(buf: Buffer, off: number, len: number): NftChain {
  const b = body(buf, off, len, 'nft chain');
  const c: NftChain = { family: b.family, table: '', name: '', flags: 0 };
  forEachAttr(buf, b.start, b.end, (type, o, l) => {
    if (type === NFTA_CHAIN_TABLE) c.table = getString(buf, o, l);
    else if (type === NFTA_CHAIN_NAME) c.name = getString(buf, o, l);
    else if (type === NFTA_CHAIN_HOOK) c.hook = parseHook(buf, o, o + l);
    else if (type === NFTA_CHAIN_POLICY) c.policy = be32(buf, o, l, 'NFTA_CHAIN_POLICY');
    else if (type === NFTA_CHAIN_TYPE) c.type = getString(buf, o, l);
    else if (type === NFTA_CHAIN_FLAGS) c.flags = be32(buf, o, l, 'NFTA_CHAIN_FLAGS');
  });
  return c;
}

/** The names of the expressions in a list (NFTA_LIST_ELEM*), dynset's own included. */
function exprNames(buf: Buffer, start: number, end: number, out: string[], depth = 0): void {
  if (depth > 4) throw new ParseError('nft expressions nested too deep', start);
  forEachAttr(buf, start, end, (type, o, l) => {
    if (type === NFTA_LIST_ELEM) oneExpr(buf, o, o + l, out, depth);
  });
}

function oneExpr(buf: Buffer, start: number, end: number, out: string[], depth: number): void {
  let name = '';
  let data: [number, number] | undefined;
  forEachAttr(buf, start, end, (t, o, l) => {
    if (t === NFTA_EXPR_NAME) name = getString(buf, o, l);
    else if (t === NFTA_EXPR_DATA) data = [o, o + l];
  });
  out.push(name);
  if (name === 'dynset' && data !== undefined) {
    forEachAttr(buf, data[0], data[1], (t, o, l) => {
      if (t === NFTA_DYNSET_EXPR) oneExpr(buf, o, o + l, out, depth + 1);
      else if (t === NFTA_DYNSET_EXPRESSIONS) exprNames(buf, o, o + l, out, depth + 1);
    });
  }
}

export function parseNftRule(buf: Buffer, off: number, len: number): NftRule {
  const b = body(buf, off, len, 'nft rule');
  const r: NftRule = { family: b.family, table: '', chain: '', handle: 0n, exprs: [] };
  forEachAttr(buf, b.start, b.end, (type, o, l) => {
    if (type === NFTA_RULE_TABLE) r.table = getString(buf, o, l);
    else if (type === NFTA_RULE_CHAIN) r.chain = getString(buf, o, l);
    else if (type === NFTA_RULE_HANDLE && l === 8) r.handle = buf.readBigUInt64BE(o);
    else if (type === NFTA_RULE_EXPRESSIONS) exprNames(buf, o, o + l, r.exprs);
  });
  return r;
}

/** The generation id of an NFT_MSG_NEWGEN message. */
export function parseNftGen(buf: Buffer, off: number, len: number): number {
  const b = body(buf, off, len, 'nft gen');
  let id: number | undefined;
  forEachAttr(buf, b.start, b.end, (type, o, l) => {
    if (type === NFTA_GEN_ID) id = be32(buf, o, l, 'NFTA_GEN_ID');
  });
  if (id === undefined) throw new ParseError('NFT_MSG_NEWGEN without NFTA_GEN_ID', off);
  return id;
}
