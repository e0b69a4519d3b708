// Traffic control over rtnetlink, as `tc qdisc show` and `tc filter show dev DEV ingress|egress`
// show it: struct tcmsg (family, ifindex, handle, parent, info) and the kind (TCA_KIND).
// Only what tells whether tc acts on a device's traffic: which queueing disciplines the node
// configured and which filters sit on a device's ingress or egress.
import { NLM_F_DUMP, NLM_F_REQUEST, SIZEOF_NLMSGHDR } from './constants.js';
import { expectFixed, forEachAttr, getString, getU32, type Writer } from './wire.js';
import { i32le, u32le, w32le, wi32le } from '../../util/index.js';

export const RTM_NEWQDISC = 36;
export const RTM_DELQDISC = 37;
export const RTM_GETQDISC = 38;
export const RTM_NEWTFILTER = 44;
export const RTM_DELTFILTER = 45;
export const RTM_GETTFILTER = 46;
export const SIZEOF_TCMSG = 20;
export const TCA_KIND = 1;
export const TCA_CHAIN = 11;

export const TC_H_ROOT = 0xffff_ffff;
/** The ingress and clsact qdiscs' parent; their handle is ffff:0. */
export const TC_H_INGRESS = 0xffff_fff1;
export const TC_H_MIN_INGRESS = 0xfff2;
export const TC_H_MIN_EGRESS = 0xfff3;
/** The parent of filters on a device's ingress / egress (clsact; ingress also for `ingress`). */
export const TC_PARENT_INGRESS = (0xffff_0000 | TC_H_MIN_INGRESS) >>> 0;
export const TC_PARENT_EGRESS = (0xffff_0000 | TC_H_MIN_EGRESS) >>> 0;

/** A qdisc or a filter (`tc qdisc show`, `tc filter show`). */
export interface TcObject {
  ifindex: number;
  handle: number;
  parent: number;
  /** Filters: priority << 16 | protocol (network order); qdiscs: reference count. */
  info: number;
  kind: string;
  /** The filter chain, when not 0. */
  chain?: number;
}

/** "8001:" / "ffff:fff2" as tc prints handles. */
export function tcHandle(h: number): string {
  const maj = (h >>> 16).toString(16);
  const min = h & 0xffff;
  return min === 0 ? `${maj}:` : `${maj}:${min.toString(16)}`;
}

/** `tc qdisc show` (every device). */
export function formatQdiscDump(w: Writer): void {
  const start = w.begin(RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, SIZEOF_TCMSG);
  w.end(start);
}

/** `tc filter show dev IFINDEX parent PARENT` (every chain). */
export function formatFilterDump(w: Writer, ifindex: number, parent: number): void {
  const start = w.begin(RTM_GETTFILTER, NLM_F_REQUEST | NLM_F_DUMP, SIZEOF_TCMSG);
  wi32le(w.buf, ifindex, start + SIZEOF_NLMSGHDR + 4);
  w32le(w.buf, parent >>> 0, start + SIZEOF_NLMSGHDR + 12);
  w.end(start);
}

/** RTM_NEWQDISC / RTM_NEWTFILTER (and their DEL forms). */
export function parseTcObject(buf: Buffer, off: number, len: number): TcObject {
  expectFixed(off, len, SIZEOF_TCMSG, 'tcmsg');
  const p = off + SIZEOF_NLMSGHDR;
  const o: TcObject = {
    ifindex: i32le(buf, p + 4),
    handle: u32le(buf, p + 8),
    parent: u32le(buf, p + 12),
    info: u32le(buf, p + 16),
    kind: '',
  };
  forEachAttr(buf, p + SIZEOF_TCMSG, off + len, (type, a, l) => {
    if (type === TCA_KIND) o.kind = getString(buf, a, l);
    else if (type === TCA_CHAIN) {
      const chain = getU32(buf, a, l, 'TCA_CHAIN');
      if (chain !== 0) o.chain = chain;
    }
  });
  return o;
}
