// Routes: struct rtmsg + RTA_* attributes, RTA_MULTIPATH (struct rtnexthop legs) and
// RTA_VIA included.
import { ipFromBytes, writeIp } from '../../ipaddr/index.js';
import {
  RTA_CACHEINFO,
  RTA_DST,
  RTA_ENCAP_TYPE,
  RTA_EXPIRES,
  RTA_FLOW,
  RTA_GATEWAY,
  RTA_IIF,
  RTA_MARK,
  RTA_METRICS,
  RTA_MULTIPATH,
  RTA_NH_ID,
  RTA_OIF,
  RTA_PREF,
  RTA_PREFSRC,
  RTA_PRIORITY,
  RTA_SRC,
  RTA_TABLE,
  RTA_UID,
  RTA_VIA,
  SIZEOF_NLMSGHDR,
  SIZEOF_RTMSG,
  SIZEOF_RTNEXTHOP,
} from './constants.js';
import { ParseError } from './errors.js';
import {
  align4,
  expectFixed,
  forEachAttr,
  getU32,
  getU8,
  readRawAttrs,
  type RawAttr,
  Writer,
} from './wire.js';
import { i32le, u16le, u32le, w16le, w32le, wi32le } from '../../util/index.js';

/** RTA_VIA: a gateway of another family (an IPv6 next hop for an IPv4 route). */
export interface Via {
  family: number;
  address: string;
}

/** One leg of a multipath route (struct rtnexthop + its attributes). */
export interface Nexthop {
  ifindex: number;
  /** RTNH_F_* */
  flags: number;
  /** rtnh_hops: the weight minus one. */
  hops: number;
  gateway?: string;
  via?: Via;
}

/** One route (RTM_NEWROUTE / RTM_DELROUTE), as `ip route show` reports it. */
export interface Route {
  family: number;
  dstLen: number;
  srcLen: number;
  tos: number;
  /** The table: RTA_TABLE when present (32-bit), else rtm_table. */
  table: number;
  /** RTPROT_* */
  protocol: number;
  /** RT_SCOPE_* */
  scope: number;
  /** RTN_* */
  type: number;
  /** RTM_F_* / RTNH_F_* */
  flags: number;
  dst?: string;
  src?: string;
  iif?: number;
  oif?: number;
  gateway?: string;
  via?: Via;
  /** RTA_PRIORITY: the metric. */
  priority?: number;
  prefsrc?: string;
  mark?: number;
  /** RTA_PREF: IPv6 router preference. */
  pref?: number;
  /** RTA_NH_ID: the nexthop object the route uses. */
  nhid?: number;
  flow?: number;
  uid?: number;
  expires?: number;
  encapType?: number;
  multipath?: Nexthop[];
  /** RTA_METRICS, as raw RTAX_* attributes. */
  metrics?: RawAttr[];
}

function ipAttr(buf: Buffer, off: number, len: number, what: string): string {
  if (len !== 4 && len !== 16) throw new ParseError(`${what}: ${len}-byte address`, off);
  return ipFromBytes(buf, off, len);
}

function parseVia(buf: Buffer, off: number, len: number): Via {
  if (len < 2) throw new ParseError('RTA_VIA too short', off);
  const family = u16le(buf, off);
  return { family, address: ipAttr(buf, off + 2, len - 2, 'RTA_VIA') };
}

function parseNexthopAttrs(buf: Buffer, start: number, end: number, nh: Nexthop): void {
  forEachAttr(buf, start, end, (type, off, len) => {
    if (type === RTA_GATEWAY) nh.gateway = ipAttr(buf, off, len, 'RTA_GATEWAY');
    else if (type === RTA_VIA) nh.via = parseVia(buf, off, len);
  });
}

function parseMultipath(buf: Buffer, start: number, end: number): Nexthop[] {
  const legs: Nexthop[] = [];
  let p = start;
  while (p < end) {
    if (end - p < SIZEOF_RTNEXTHOP) throw new ParseError('truncated rtnexthop', p);
    const len = u16le(buf, p);
    if (len < SIZEOF_RTNEXTHOP || len > end - p) {
      throw new ParseError(`rtnexthop length ${len} out of bounds`, p);
    }
    const nh: Nexthop = { flags: buf[p + 2]!, hops: buf[p + 3]!, ifindex: i32le(buf, p + 4) };
    parseNexthopAttrs(buf, p + SIZEOF_RTNEXTHOP, p + len, nh);
    legs.push(nh);
    p += align4(len);
  }
  return legs;
}

function parseRouteAttr(r: Route, buf: Buffer, type: number, off: number, len: number): void {
  switch (type) {
    case RTA_DST:
      r.dst = ipAttr(buf, off, len, 'RTA_DST');
      break;
    case RTA_SRC:
      r.src = ipAttr(buf, off, len, 'RTA_SRC');
      break;
    case RTA_GATEWAY:
      r.gateway = ipAttr(buf, off, len, 'RTA_GATEWAY');
      break;
    case RTA_PREFSRC:
      r.prefsrc = ipAttr(buf, off, len, 'RTA_PREFSRC');
      break;
    case RTA_VIA:
      r.via = parseVia(buf, off, len);
      break;
    case RTA_IIF:
      r.iif = getU32(buf, off, len, 'RTA_IIF');
      break;
    case RTA_OIF:
      r.oif = getU32(buf, off, len, 'RTA_OIF');
      break;
    case RTA_PRIORITY:
      r.priority = getU32(buf, off, len, 'RTA_PRIORITY');
      break;
    case RTA_TABLE:
      r.table = getU32(buf, off, len, 'RTA_TABLE');
      break;
    case RTA_MARK:
      r.mark = getU32(buf, off, len, 'RTA_MARK');
      break;
    case RTA_PREF:
      r.pref = getU8(buf, off, len, 'RTA_PREF');
      break;
    case RTA_NH_ID:
      r.nhid = getU32(buf, off, len, 'RTA_NH_ID');
      break;
    case RTA_FLOW:
      r.flow = getU32(buf, off, len, 'RTA_FLOW');
      break;
    case RTA_UID:
      r.uid = getU32(buf, off, len, 'RTA_UID');
      break;
    case RTA_EXPIRES:
      r.expires = getU32(buf, off, len, 'RTA_EXPIRES');
      break;
    case RTA_ENCAP_TYPE:
      if (len !== 2) throw new ParseError(`RTA_ENCAP_TYPE: ${len} bytes`, off);
      r.encapType = u16le(buf, off);
      break;
    case RTA_MULTIPATH:
      r.multipath = parseMultipath(buf, off, off + len);
      break;
    case RTA_METRICS:
      r.metrics = readRawAttrs(buf, off, off + len);
      break;
    case RTA_CACHEINFO:
      break; // per-route cache statistics; not needed
  }
}

/** Parses the RTM_*ROUTE message of `len` bytes at `off` (header included). */
export function parseRoute(buf: Buffer, off: number, len: number): Route {
  expectFixed(off, len, SIZEOF_RTMSG, 'rtmsg');
  const p = off + SIZEOF_NLMSGHDR;
  const r: Route = {
    family: buf[p]!,
    dstLen: buf[p + 1]!,
    srcLen: buf[p + 2]!,
    tos: buf[p + 3]!,
    table: buf[p + 4]!,
    protocol: buf[p + 5]!,
    scope: buf[p + 6]!,
    type: buf[p + 7]!,
    flags: u32le(buf, p + 8),
  };
  forEachAttr(buf, p + SIZEOF_RTMSG, off + len, (type, o, l) => parseRouteAttr(r, buf, type, o, l));
  return r;
}

function writeVia(w: Writer, via: Via): void {
  w.ensure(4 + 2 + 16 + 3);
  const start = w.off;
  w16le(w.buf, RTA_VIA, start + 2);
  w16le(w.buf, via.family, start + 4);
  const len = 4 + 2 + writeIp(via.address, w.buf, start + 6);
  w16le(w.buf, len, start);
  w.off = start + len;
  while (w.off & 3) w.buf[w.off++] = 0;
}

function writeMultipath(w: Writer, legs: readonly Nexthop[]): void {
  const nest = w.nest(RTA_MULTIPATH);
  for (const nh of legs) {
    w.ensure(SIZEOF_RTNEXTHOP);
    const start = w.off;
    w.buf[start + 2] = nh.flags;
    w.buf[start + 3] = nh.hops;
    wi32le(w.buf, nh.ifindex, start + 4);
    w.off = start + SIZEOF_RTNEXTHOP;
    if (nh.gateway !== undefined) w.ip(RTA_GATEWAY, nh.gateway);
    if (nh.via) writeVia(w, nh.via);
    w16le(w.buf, w.off - start, start);
  }
  w.nestEnd(nest);
}

/**
 * Encodes an RTM_*ROUTE message. A table that fits in 8 bits goes in rtm_table; a larger
 * one in RTA_TABLE (rtm_table = RT_TABLE_UNSPEC), as iproute2 does.
 */
export function formatRoute(w: Writer, type: number, flags: number, r: Route, seq = 0): void {
  const start = w.begin(type, flags, SIZEOF_RTMSG, seq);
  const p = start + SIZEOF_NLMSGHDR;
  const b = w.buf;
  b[p] = r.family;
  b[p + 1] = r.dstLen;
  b[p + 2] = r.srcLen;
  b[p + 3] = r.tos;
  b[p + 4] = r.table > 255 ? 0 : r.table;
  b[p + 5] = r.protocol;
  b[p + 6] = r.scope;
  b[p + 7] = r.type;
  w32le(b, r.flags >>> 0, p + 8);
  if (r.table > 255) w.u32(RTA_TABLE, r.table);
  if (r.dst !== undefined) w.ip(RTA_DST, r.dst);
  if (r.src !== undefined) w.ip(RTA_SRC, r.src);
  if (r.iif !== undefined) w.u32(RTA_IIF, r.iif);
  if (r.oif !== undefined) w.u32(RTA_OIF, r.oif);
  if (r.gateway !== undefined) w.ip(RTA_GATEWAY, r.gateway);
  if (r.via) writeVia(w, r.via);
  if (r.priority !== undefined) w.u32(RTA_PRIORITY, r.priority);
  if (r.prefsrc !== undefined) w.ip(RTA_PREFSRC, r.prefsrc);
  if (r.mark !== undefined) w.u32(RTA_MARK, r.mark);
  if (r.pref !== undefined) w.u8(RTA_PREF, r.pref);
  if (r.nhid !== undefined) w.u32(RTA_NH_ID, r.nhid);
  if (r.flow !== undefined) w.u32(RTA_FLOW, r.flow);
  if (r.uid !== undefined) w.u32(RTA_UID, r.uid);
  if (r.expires !== undefined) w.u32(RTA_EXPIRES, r.expires);
  if (r.encapType !== undefined) w.u16(RTA_ENCAP_TYPE, r.encapType);
  if (r.multipath) writeMultipath(w, r.multipath);
  if (r.metrics) {
    const m = w.nest(RTA_METRICS);
    w.raw(r.metrics);
    w.nestEnd(m);
  }
  w.end(start);
}
