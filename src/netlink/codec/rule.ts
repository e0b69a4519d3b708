// Policy routing rules: struct fib_rule_hdr + FRA_* attributes (RTM_NEWRULE / RTM_DELRULE),
// as `ip rule` shows them. Attributes this codec does not decode (newer selectors such as
// FRA_DSCP or FRA_FLOWLABEL) are kept raw in `other`, so that a reader can tell a rule it
// does not understand from one without selectors.
import { ipFromBytes } from '../../ipaddr/index.js';
import {
  FRA_DPORT_RANGE,
  FRA_DST,
  FRA_FLOW,
  FRA_FWMARK,
  FRA_FWMASK,
  FRA_GOTO,
  FRA_IIFNAME,
  FRA_IP_PROTO,
  FRA_L3MDEV,
  FRA_OIFNAME,
  FRA_PAD,
  FRA_PRIORITY,
  FRA_PROTOCOL,
  FRA_SPORT_RANGE,
  FRA_SRC,
  FRA_SUPPRESS_IFGROUP,
  FRA_SUPPRESS_PREFIXLEN,
  FRA_TABLE,
  FRA_TUN_ID,
  FRA_UID_RANGE,
  NLA_TYPE_MASK,
  SIZEOF_FIB_RULE_HDR,
  SIZEOF_FIB_RULE_PORT_RANGE,
  SIZEOF_FIB_RULE_UID_RANGE,
  SIZEOF_NLMSGHDR,
} from './constants.js';
import { ParseError } from './errors.js';
import {
  expectFixed,
  expectLen,
  getString,
  getU32,
  getU8,
  readRawAttrs,
  type RawAttr,
  Writer,
} from './wire.js';
import { u16le, u32le, w16le, w32le } from '../../util/index.js';

/** An inclusive range of two numbers (FRA_UID_RANGE, FRA_SPORT_RANGE, FRA_DPORT_RANGE). */
export interface RuleRange {
  start: number;
  end: number;
}

/** One rule (RTM_NEWRULE / RTM_DELRULE), as `ip rule show` reports it. */
export interface Rule {
  family: number;
  dstLen: number;
  srcLen: number;
  tos: number;
  /** The table: FRA_TABLE when present (32-bit), else the header's 8-bit field. */
  table: number;
  /** FR_ACT_* */
  action: number;
  /** FIB_RULE_* */
  flags: number;
  /** FRA_PRIORITY (`pref`); the kernel leaves it out for priority 0. */
  priority?: number;
  /** FRA_DST (`to`), with dstLen. */
  dst?: string;
  /** FRA_SRC (`from`), with srcLen. */
  src?: string;
  /** FRA_IIFNAME (`iif`). */
  iifname?: string;
  /** FRA_OIFNAME (`oif`). */
  oifname?: string;
  /** FRA_GOTO: the priority a goto rule jumps to. */
  goto?: number;
  /** FRA_FWMARK (`fwmark`). */
  fwmark?: number;
  /** FRA_FWMASK (the mask of `fwmark M/MASK`). */
  fwmask?: number;
  /** FRA_FLOW (`realms`). */
  flow?: number;
  /** FRA_TUN_ID (`tun_id`), network byte order on the wire. */
  tunId?: bigint;
  /** FRA_SUPPRESS_IFGROUP (`suppress_ifgroup`); 0xffffffff (-1) means unset. */
  suppressIfgroup?: number;
  /** FRA_SUPPRESS_PREFIXLEN (`suppress_prefixlength`); 0xffffffff (-1) means unset. */
  suppressPrefixlen?: number;
  /** FRA_L3MDEV (`l3mdev`): look up in the table of the VRF device. */
  l3mdev?: number;
  /** FRA_UID_RANGE (`uidrange`). */
  uidRange?: RuleRange;
  /** FRA_PROTOCOL (`protocol`): who installed the rule (RTPROT_*). */
  protocol?: number;
  /** FRA_IP_PROTO (`ipproto`). */
  ipProto?: number;
  /** FRA_SPORT_RANGE (`sport`). */
  sportRange?: RuleRange;
  /** FRA_DPORT_RANGE (`dport`). */
  dportRange?: RuleRange;
  /** Attributes this codec does not decode, raw (type with its NLA_F_* bits). */
  other?: RawAttr[];
}

function ipAttr(buf: Buffer, off: number, len: number, what: string): string {
  if (len !== 4 && len !== 16) throw new ParseError(`${what}: ${len}-byte address`, off);
  return ipFromBytes(buf, off, len);
}

function rangeAttr(buf: Buffer, off: number, len: number, what: string, ports: boolean): RuleRange {
  if (ports) {
    expectLen(off, len, SIZEOF_FIB_RULE_PORT_RANGE, what);
    return { start: u16le(buf, off), end: u16le(buf, off + 2) };
  }
  expectLen(off, len, SIZEOF_FIB_RULE_UID_RANGE, what);
  return { start: u32le(buf, off), end: u32le(buf, off + 4) };
}

/** Decodes one attribute into `r`; false when this codec does not know it. */
function parseRuleAttr(r: Rule, buf: Buffer, type: number, off: number, len: number): boolean {
  switch (type) {
    case FRA_DST:
      r.dst = ipAttr(buf, off, len, 'FRA_DST');
      return true;
    case FRA_SRC:
      r.src = ipAttr(buf, off, len, 'FRA_SRC');
      return true;
    case FRA_IIFNAME:
      r.iifname = getString(buf, off, len);
      return true;
    case FRA_OIFNAME:
      r.oifname = getString(buf, off, len);
      return true;
    case FRA_GOTO:
      r.goto = getU32(buf, off, len, 'FRA_GOTO');
      return true;
    case FRA_PRIORITY:
      r.priority = getU32(buf, off, len, 'FRA_PRIORITY');
      return true;
    case FRA_FWMARK:
      r.fwmark = getU32(buf, off, len, 'FRA_FWMARK');
      return true;
    case FRA_FWMASK:
      r.fwmask = getU32(buf, off, len, 'FRA_FWMASK');
      return true;
    case FRA_FLOW:
      r.flow = getU32(buf, off, len, 'FRA_FLOW');
      return true;
    case FRA_TUN_ID:
      expectLen(off, len, 8, 'FRA_TUN_ID');
      r.tunId = buf.readBigUInt64BE(off);
      return true;
    case FRA_SUPPRESS_IFGROUP:
      r.suppressIfgroup = getU32(buf, off, len, 'FRA_SUPPRESS_IFGROUP');
      return true;
    case FRA_SUPPRESS_PREFIXLEN:
      r.suppressPrefixlen = getU32(buf, off, len, 'FRA_SUPPRESS_PREFIXLEN');
      return true;
    case FRA_TABLE:
      r.table = getU32(buf, off, len, 'FRA_TABLE');
      return true;
    case FRA_L3MDEV:
      r.l3mdev = getU8(buf, off, len, 'FRA_L3MDEV');
      return true;
    case FRA_UID_RANGE:
      r.uidRange = rangeAttr(buf, off, len, 'FRA_UID_RANGE', false);
      return true;
    case FRA_PROTOCOL:
      r.protocol = getU8(buf, off, len, 'FRA_PROTOCOL');
      return true;
    case FRA_IP_PROTO:
      r.ipProto = getU8(buf, off, len, 'FRA_IP_PROTO');
      return true;
    case FRA_SPORT_RANGE:
      r.sportRange = rangeAttr(buf, off, len, 'FRA_SPORT_RANGE', true);
      return true;
    case FRA_DPORT_RANGE:
      r.dportRange = rangeAttr(buf, off, len, 'FRA_DPORT_RANGE', true);
      return true;
    case FRA_PAD:
      return true; // alignment filler before FRA_TUN_ID
  }
  return false;
}

/** Parses the RTM_*RULE message of `len` bytes at `off` (header included). */
export function parseRule(buf: Buffer, off: number, len: number): Rule {
  expectFixed(off, len, SIZEOF_FIB_RULE_HDR, 'fib_rule_hdr');
  const p = off + SIZEOF_NLMSGHDR;
  const r: Rule = {
    family: buf[p]!,
    dstLen: buf[p + 1]!,
    srcLen: buf[p + 2]!,
    tos: buf[p + 3]!,
    table: buf[p + 4]!,
    action: buf[p + 7]!,
    flags: u32le(buf, p + 8),
  };
  for (const a of readRawAttrs(buf, p + SIZEOF_FIB_RULE_HDR, off + len)) {
    const type = a.type & NLA_TYPE_MASK;
    // Offsets inside the copied value: parse from the attribute's own buffer.
    if (!parseRuleAttr(r, a.value, type, 0, a.value.length)) (r.other ??= []).push(a);
  }
  return r;
}

function writeRange(w: Writer, type: number, v: RuleRange, ports: boolean): void {
  const b = Buffer.alloc(ports ? SIZEOF_FIB_RULE_PORT_RANGE : SIZEOF_FIB_RULE_UID_RANGE);
  if (ports) {
    w16le(b, v.start, 0);
    w16le(b, v.end, 2);
  } else {
    w32le(b, v.start >>> 0, 0);
    w32le(b, v.end >>> 0, 4);
  }
  w.bytesAttr(type, b);
}

/**
 * Encodes an RTM_*RULE message. A table that fits in 8 bits goes in the header; a larger
 * one in FRA_TABLE (header RT_TABLE_UNSPEC), as iproute2 does.
 */
export function formatRule(w: Writer, type: number, flags: number, r: Rule, seq = 0): void {
  const start = w.begin(type, flags, SIZEOF_FIB_RULE_HDR, seq);
  const p = start + SIZEOF_NLMSGHDR;
  const b = w.buf;
  b[p] = r.family;
  b[p + 1] = r.dstLen;
  b[p + 2] = r.srcLen;
  b[p + 3] = r.tos;
  b[p + 4] = r.table > 255 ? 0 : r.table;
  b[p + 7] = r.action;
  w32le(b, r.flags >>> 0, p + 8);
  if (r.table > 255) w.u32(FRA_TABLE, r.table);
  if (r.priority !== undefined) w.u32(FRA_PRIORITY, r.priority);
  if (r.dst !== undefined) w.ip(FRA_DST, r.dst);
  if (r.src !== undefined) w.ip(FRA_SRC, r.src);
  if (r.iifname !== undefined) w.string(FRA_IIFNAME, r.iifname);
  if (r.oifname !== undefined) w.string(FRA_OIFNAME, r.oifname);
  if (r.goto !== undefined) w.u32(FRA_GOTO, r.goto);
  if (r.fwmark !== undefined) w.u32(FRA_FWMARK, r.fwmark);
  if (r.fwmask !== undefined) w.u32(FRA_FWMASK, r.fwmask);
  if (r.flow !== undefined) w.u32(FRA_FLOW, r.flow);
  if (r.tunId !== undefined) {
    const v = Buffer.alloc(8);
    v.writeBigUInt64BE(r.tunId);
    w.bytesAttr(FRA_TUN_ID, v);
  }
  if (r.suppressIfgroup !== undefined) w.u32(FRA_SUPPRESS_IFGROUP, r.suppressIfgroup);
  if (r.suppressPrefixlen !== undefined) w.u32(FRA_SUPPRESS_PREFIXLEN, r.suppressPrefixlen);
  if (r.l3mdev !== undefined) w.u8(FRA_L3MDEV, r.l3mdev);
  if (r.uidRange) writeRange(w, FRA_UID_RANGE, r.uidRange, false);
  if (r.protocol !== undefined) w.u8(FRA_PROTOCOL, r.protocol);
  if (r.ipProto !== undefined) w.u8(FRA_IP_PROTO, r.ipProto);
  if (r.sportRange) writeRange(w, FRA_SPORT_RANGE, r.sportRange, true);
  if (r.dportRange) writeRange(w, FRA_DPORT_RANGE, r.dportRange, true);
  w.raw(r.other);
  w.end(start);
}
