// IPsec policy over NETLINK_XFRM, as `ip xfrm policy list` and `ip xfrm policy getdefault`
// show it: the dump of every policy (struct xfrm_userpolicy_info: selector, priority, index,
// direction, action) and the per-direction default (struct xfrm_userpolicy_default).
import { ipFromBytes } from '../../ipaddr/index.js';
import { AF_INET, AF_INET6, NLM_F_DUMP, NLM_F_REQUEST, SIZEOF_NLMSGHDR } from './constants.js';
import { expectFixed, type Writer } from './wire.js';
import { i32le, u16le, u32le } from '../../util/index.js';

export const NETLINK_XFRM = 6;
export const XFRM_MSG_NEWPOLICY = 0x13;
export const XFRM_MSG_GETPOLICY = 0x15;
export const XFRM_MSG_GETDEFAULT = 0x28;
/** The group of policy changes (and of a changed default). */
export const XFRMNLGRP_POLICY = 4;

export const SIZEOF_XFRM_SELECTOR = 56;
export const SIZEOF_XFRM_USERPOLICY_INFO = 168;
export const SIZEOF_XFRM_USERPOLICY_DEFAULT = 3;
export const OFFSETOF_XFRM_SEL_FAMILY = 40;
export const OFFSETOF_XFRM_POL_PRIORITY = 152;
export const OFFSETOF_XFRM_POL_INDEX = 156;
export const OFFSETOF_XFRM_POL_DIR = 160;
export const OFFSETOF_XFRM_POL_ACTION = 161;

export const XFRM_POLICY_IN = 0;
export const XFRM_POLICY_OUT = 1;
export const XFRM_POLICY_FWD = 2;
export const XFRM_POLICY_ALLOW = 0;
export const XFRM_POLICY_BLOCK = 1;
export const XFRM_USERPOLICY_UNSPEC = 0;
export const XFRM_USERPOLICY_BLOCK = 1;
export const XFRM_USERPOLICY_ACCEPT = 2;

/** One policy: its selector as `ip xfrm policy` prints it, direction, action. */
export interface XfrmPolicy {
  /** The selector's family (AF_INET, AF_INET6; 0 when the selector names none). */
  family: number;
  /** "10.1.0.0/16" (or undefined for a family-less selector). */
  src: string | undefined;
  dst: string | undefined;
  /** The selector's protocol (0: any) and ifindex (0: any). */
  proto: number;
  ifindex: number;
  /** XFRM_POLICY_IN, OUT or FWD. */
  dir: number;
  /** XFRM_POLICY_ALLOW or BLOCK. */
  action: number;
  priority: number;
  index: number;
}

/** The default of each direction: XFRM_USERPOLICY_* (ACCEPT unless set to block). */
export interface XfrmDefault {
  in: number;
  fwd: number;
  out: number;
}

/** The dump of every policy (`ip xfrm policy list`). */
export function formatXfrmPolicyDump(w: Writer): void {
  const start = w.begin(XFRM_MSG_GETPOLICY, NLM_F_REQUEST | NLM_F_DUMP, 0);
  w.end(start);
}

/** `ip xfrm policy getdefault`. */
export function formatXfrmGetDefault(w: Writer): void {
  const start = w.begin(XFRM_MSG_GETDEFAULT, NLM_F_REQUEST, SIZEOF_XFRM_USERPOLICY_DEFAULT);
  w.end(start);
}

function prefix(buf: Buffer, off: number, family: number, len: number): string | undefined {
  if (family === AF_INET) return `${ipFromBytes(buf, off, 4)}/${len}`;
  if (family === AF_INET6) return `${ipFromBytes(buf, off, 16)}/${len}`;
  return undefined;
}

/** An XFRM_MSG_NEWPOLICY message (a dump entry or an event). */
export function parseXfrmPolicy(buf: Buffer, off: number, len: number): XfrmPolicy {
  expectFixed(off, len, SIZEOF_XFRM_USERPOLICY_INFO, 'xfrm policy');
  const p = off + SIZEOF_NLMSGHDR;
  const family = u16le(buf, p + OFFSETOF_XFRM_SEL_FAMILY);
  return {
    family,
    dst: prefix(buf, p, family, buf[p + 42]!),
    src: prefix(buf, p + 16, family, buf[p + 43]!),
    proto: buf[p + 44]!,
    ifindex: i32le(buf, p + 48),
    dir: buf[p + OFFSETOF_XFRM_POL_DIR]!,
    action: buf[p + OFFSETOF_XFRM_POL_ACTION]!,
    priority: u32le(buf, p + OFFSETOF_XFRM_POL_PRIORITY),
    index: u32le(buf, p + OFFSETOF_XFRM_POL_INDEX),
  };
}

/** The answer of XFRM_MSG_GETDEFAULT. */
export function parseXfrmDefault(buf: Buffer, off: number, len: number): XfrmDefault {
  expectFixed(off, len, SIZEOF_XFRM_USERPOLICY_DEFAULT, 'xfrm default');
  const p = off + SIZEOF_NLMSGHDR;
  return { in: buf[p]!, fwd: buf[p + 1]!, out: buf[p + 2]! };
}
