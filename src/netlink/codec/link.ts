// Links: struct ifinfomsg + IFLA_* attributes, IFLA_LINKINFO (kind, kind data, the veth
// peer) included.
import { formatLinkAddr } from '../../ipaddr/index.js';
import {
  IFLA_ADDRESS,
  IFLA_BROADCAST,
  IFLA_CARRIER,
  IFLA_EXT_MASK,
  IFLA_GROUP,
  IFLA_IFALIAS,
  IFLA_IFNAME,
  IFLA_INFO_DATA,
  IFLA_INFO_KIND,
  IFLA_INFO_SLAVE_DATA,
  IFLA_INFO_SLAVE_KIND,
  IFLA_LINK,
  IFLA_LINK_NETNSID,
  IFLA_LINKINFO,
  IFLA_LINKMODE,
  IFLA_MASTER,
  IFLA_MAX_MTU,
  IFLA_MIN_MTU,
  IFLA_MTU,
  IFLA_NET_NS_FD,
  IFLA_NET_NS_PID,
  IFLA_OPERSTATE,
  IFLA_PERM_ADDRESS,
  IFLA_PROMISCUITY,
  IFLA_QDISC,
  IFLA_TXQLEN,
  IFLA_XDP,
  IFLA_XDP_ATTACHED,
  IFLA_XDP_DRV_PROG_ID,
  IFLA_XDP_HW_PROG_ID,
  IFLA_XDP_PROG_ID,
  IFLA_XDP_SKB_PROG_ID,
  NLA_F_NESTED,
  SIZEOF_IFINFOMSG,
  SIZEOF_NLMSGHDR,
  VETH_INFO_PEER,
} from './constants.js';
import { ParseError } from './errors.js';
import {
  expectFixed,
  forEachAttr,
  getS32,
  getString,
  getU32,
  getU8,
  readRawAttrs,
  type RawAttr,
  Writer,
} from './wire.js';
import { i32le, u16le, u32le, w16le, w32le, wi32le } from '../../util/index.js';

/** IFLA_LINKINFO. */
export interface LinkInfo {
  /** IFLA_INFO_KIND: "veth", "bridge", "ifb", "dummy", "vxlan", ... */
  kind?: string;
  /** IFLA_INFO_DATA attributes as bytes (kind-specific), except the veth peer. */
  data?: RawAttr[];
  /** veth only: the peer device (VETH_INFO_PEER inside IFLA_INFO_DATA). */
  peer?: Link;
  slaveKind?: string;
  slaveData?: RawAttr[];
}

/** IFLA_XDP as the kernel reports it: how and which XDP program is attached. */
export interface LinkXdp {
  /** XDP_ATTACHED_* (none, drv, skb, hw, multi). */
  attached: number;
  /** IFLA_XDP_PROG_ID: the program (single attachment). */
  progId?: number;
  drvProgId?: number;
  skbProgId?: number;
  hwProgId?: number;
}

/** One link (RTM_NEWLINK / RTM_DELLINK), as `ip -d link show` reports it. */
export interface Link {
  family: number;
  /** ARPHRD_* */
  type: number;
  index: number;
  /** IFF_* */
  flags: number;
  /** IFF_* bits that `flags` changes (requests) or changed (events). */
  change: number;
  name?: string;
  mtu?: number;
  minMtu?: number;
  maxMtu?: number;
  address?: string;
  broadcast?: string;
  permAddress?: string;
  /** IFLA_MASTER: ifindex of the bridge/bond, 0 to release. */
  master?: number;
  /** IFLA_LINK: the lower device (veth peer index, vlan parent). */
  link?: number;
  /** IFLA_LINK_NETNSID: the namespace `link` lives in. */
  linkNetnsId?: number;
  /** IF_OPER_* */
  operstate?: number;
  linkmode?: number;
  txqlen?: number;
  group?: number;
  promiscuity?: number;
  carrier?: number;
  alias?: string;
  qdisc?: string;
  /** Requests only: move the link into the namespace of this pid / netns fd. */
  netnsPid?: number;
  netnsFd?: number;
  /** Requests only: IFLA_EXT_MASK (RTEXT_FILTER_*). */
  extMask?: number;
  info?: LinkInfo;
  /** Dumps only: the XDP attachment. */
  xdp?: LinkXdp;
}

function parseXdp(buf: Buffer, start: number, end: number): LinkXdp {
  const x: LinkXdp = { attached: 0 };
  forEachAttr(buf, start, end, (type, off, len) => {
    switch (type) {
      case IFLA_XDP_ATTACHED:
        x.attached = getU8(buf, off, len, 'IFLA_XDP_ATTACHED');
        break;
      case IFLA_XDP_PROG_ID:
        x.progId = getU32(buf, off, len, 'IFLA_XDP_PROG_ID');
        break;
      case IFLA_XDP_DRV_PROG_ID:
        x.drvProgId = getU32(buf, off, len, 'IFLA_XDP_DRV_PROG_ID');
        break;
      case IFLA_XDP_SKB_PROG_ID:
        x.skbProgId = getU32(buf, off, len, 'IFLA_XDP_SKB_PROG_ID');
        break;
      case IFLA_XDP_HW_PROG_ID:
        x.hwProgId = getU32(buf, off, len, 'IFLA_XDP_HW_PROG_ID');
        break;
    }
  });
  return x;
}

function writeXdp(w: Writer, x: LinkXdp): void {
  const nest = w.nest(IFLA_XDP | NLA_F_NESTED);
  w.u8(IFLA_XDP_ATTACHED, x.attached);
  if (x.progId !== undefined) w.u32(IFLA_XDP_PROG_ID, x.progId);
  if (x.drvProgId !== undefined) w.u32(IFLA_XDP_DRV_PROG_ID, x.drvProgId);
  if (x.skbProgId !== undefined) w.u32(IFLA_XDP_SKB_PROG_ID, x.skbProgId);
  if (x.hwProgId !== undefined) w.u32(IFLA_XDP_HW_PROG_ID, x.hwProgId);
  w.nestEnd(nest);
}

function parseLinkInfo(buf: Buffer, start: number, end: number): LinkInfo {
  const info: LinkInfo = {};
  let dataStart = -1;
  let dataEnd = -1;
  forEachAttr(buf, start, end, (type, off, len) => {
    switch (type) {
      case IFLA_INFO_KIND:
        info.kind = getString(buf, off, len);
        break;
      case IFLA_INFO_DATA:
        dataStart = off;
        dataEnd = off + len;
        break;
      case IFLA_INFO_SLAVE_KIND:
        info.slaveKind = getString(buf, off, len);
        break;
      case IFLA_INFO_SLAVE_DATA:
        info.slaveData = readRawAttrs(buf, off, off + len);
        break;
    }
  });
  if (dataStart >= 0) {
    const data = readRawAttrs(buf, dataStart, dataEnd);
    if (info.kind === 'veth') {
      const i = data.findIndex((a) => (a.type & ~NLA_F_NESTED) === VETH_INFO_PEER);
      if (i >= 0) {
        const peer = data[i]!.value;
        data.splice(i, 1);
        info.peer = parseLinkBody(peer, 0, peer.length, 0);
      }
    }
    if (data.length > 0 || !info.peer) info.data = data;
  }
  return info;
}

/** Parses ifinfomsg + attributes in buf[p, end); `at` is for error offsets. */
function parseLinkBody(buf: Buffer, p: number, end: number, at: number): Link {
  if (end - p < SIZEOF_IFINFOMSG) throw new ParseError('truncated ifinfomsg', at + p);
  const link: Link = {
    family: buf[p]!,
    type: u16le(buf, p + 2),
    index: i32le(buf, p + 4),
    flags: u32le(buf, p + 8),
    change: u32le(buf, p + 12),
  };
  forEachAttr(buf, p + SIZEOF_IFINFOMSG, end, (type, off, len) => {
    switch (type) {
      case IFLA_IFNAME:
        link.name = getString(buf, off, len);
        break;
      case IFLA_MTU:
        link.mtu = getU32(buf, off, len, 'IFLA_MTU');
        break;
      case IFLA_MIN_MTU:
        link.minMtu = getU32(buf, off, len, 'IFLA_MIN_MTU');
        break;
      case IFLA_MAX_MTU:
        link.maxMtu = getU32(buf, off, len, 'IFLA_MAX_MTU');
        break;
      case IFLA_ADDRESS:
        link.address = formatLinkAddr(buf, off, len);
        break;
      case IFLA_BROADCAST:
        link.broadcast = formatLinkAddr(buf, off, len);
        break;
      case IFLA_PERM_ADDRESS:
        link.permAddress = formatLinkAddr(buf, off, len);
        break;
      case IFLA_MASTER:
        link.master = getU32(buf, off, len, 'IFLA_MASTER');
        break;
      case IFLA_LINK:
        link.link = getU32(buf, off, len, 'IFLA_LINK');
        break;
      case IFLA_LINK_NETNSID:
        link.linkNetnsId = getS32(buf, off, len, 'IFLA_LINK_NETNSID');
        break;
      case IFLA_OPERSTATE:
        link.operstate = getU8(buf, off, len, 'IFLA_OPERSTATE');
        break;
      case IFLA_LINKMODE:
        link.linkmode = getU8(buf, off, len, 'IFLA_LINKMODE');
        break;
      case IFLA_TXQLEN:
        link.txqlen = getU32(buf, off, len, 'IFLA_TXQLEN');
        break;
      case IFLA_GROUP:
        link.group = getU32(buf, off, len, 'IFLA_GROUP');
        break;
      case IFLA_PROMISCUITY:
        link.promiscuity = getU32(buf, off, len, 'IFLA_PROMISCUITY');
        break;
      case IFLA_CARRIER:
        link.carrier = getU8(buf, off, len, 'IFLA_CARRIER');
        break;
      case IFLA_IFALIAS:
        link.alias = getString(buf, off, len);
        break;
      case IFLA_QDISC:
        link.qdisc = getString(buf, off, len);
        break;
      case IFLA_NET_NS_PID:
        link.netnsPid = getU32(buf, off, len, 'IFLA_NET_NS_PID');
        break;
      case IFLA_NET_NS_FD:
        link.netnsFd = getU32(buf, off, len, 'IFLA_NET_NS_FD');
        break;
      case IFLA_EXT_MASK:
        link.extMask = getU32(buf, off, len, 'IFLA_EXT_MASK');
        break;
      case IFLA_LINKINFO:
        link.info = parseLinkInfo(buf, off, off + len);
        break;
      case IFLA_XDP:
        link.xdp = parseXdp(buf, off, off + len);
        break;
    }
  });
  return link;
}

/** Parses the RTM_*LINK message of `len` bytes at `off` (header included). */
export function parseLink(buf: Buffer, off: number, len: number): Link {
  expectFixed(off, len, SIZEOF_IFINFOMSG, 'ifinfomsg');
  return parseLinkBody(buf, off + SIZEOF_NLMSGHDR, off + len, 0);
}

function writeIfinfomsg(w: Writer, link: Link): void {
  w.ensure(SIZEOF_IFINFOMSG);
  const b = w.buf;
  const o = w.off;
  b[o] = link.family;
  b[o + 1] = 0;
  w16le(b, link.type, o + 2);
  wi32le(b, link.index, o + 4);
  w32le(b, link.flags >>> 0, o + 8);
  w32le(b, link.change >>> 0, o + 12);
  w.off = o + SIZEOF_IFINFOMSG;
}

function writeLinkInfo(w: Writer, info: LinkInfo): void {
  const nest = w.nest(IFLA_LINKINFO | NLA_F_NESTED);
  if (info.kind !== undefined) w.string(IFLA_INFO_KIND, info.kind);
  if (info.peer || info.data) {
    const data = w.nest(IFLA_INFO_DATA | NLA_F_NESTED);
    if (info.peer) {
      const peer = w.nest(VETH_INFO_PEER | NLA_F_NESTED);
      writeLinkBody(w, info.peer);
      w.nestEnd(peer);
    }
    w.raw(info.data);
    w.nestEnd(data);
  }
  if (info.slaveKind !== undefined) w.string(IFLA_INFO_SLAVE_KIND, info.slaveKind);
  if (info.slaveData) {
    const sd = w.nest(IFLA_INFO_SLAVE_DATA | NLA_F_NESTED);
    w.raw(info.slaveData);
    w.nestEnd(sd);
  }
  w.nestEnd(nest);
}

function writeLinkBody(w: Writer, link: Link): void {
  writeIfinfomsg(w, link);
  if (link.name !== undefined) w.string(IFLA_IFNAME, link.name);
  if (link.mtu !== undefined) w.u32(IFLA_MTU, link.mtu);
  if (link.minMtu !== undefined) w.u32(IFLA_MIN_MTU, link.minMtu);
  if (link.maxMtu !== undefined) w.u32(IFLA_MAX_MTU, link.maxMtu);
  if (link.address !== undefined) w.mac(IFLA_ADDRESS, link.address);
  if (link.broadcast !== undefined) w.mac(IFLA_BROADCAST, link.broadcast);
  if (link.permAddress !== undefined) w.mac(IFLA_PERM_ADDRESS, link.permAddress);
  if (link.master !== undefined) w.u32(IFLA_MASTER, link.master);
  if (link.link !== undefined) w.u32(IFLA_LINK, link.link);
  if (link.linkNetnsId !== undefined) w.s32(IFLA_LINK_NETNSID, link.linkNetnsId);
  if (link.operstate !== undefined) w.u8(IFLA_OPERSTATE, link.operstate);
  if (link.linkmode !== undefined) w.u8(IFLA_LINKMODE, link.linkmode);
  if (link.txqlen !== undefined) w.u32(IFLA_TXQLEN, link.txqlen);
  if (link.group !== undefined) w.u32(IFLA_GROUP, link.group);
  if (link.promiscuity !== undefined) w.u32(IFLA_PROMISCUITY, link.promiscuity);
  if (link.carrier !== undefined) w.u8(IFLA_CARRIER, link.carrier);
  if (link.alias !== undefined) w.string(IFLA_IFALIAS, link.alias);
  if (link.qdisc !== undefined) w.string(IFLA_QDISC, link.qdisc);
  if (link.netnsPid !== undefined) w.u32(IFLA_NET_NS_PID, link.netnsPid);
  if (link.netnsFd !== undefined) w.u32(IFLA_NET_NS_FD, link.netnsFd);
  if (link.extMask !== undefined) w.u32(IFLA_EXT_MASK, link.extMask);
  if (link.info) writeLinkInfo(w, link.info);
  if (link.xdp) writeXdp(w, link.xdp);
}

/** Encodes an RTM_*LINK message (header type/flags/seq given) for `link`. */
export function formatLink(w: Writer, type: number, flags: number, link: Link, seq = 0): void {
  const start = w.begin(type, flags, 0, seq);
  writeLinkBody(w, link);
  w.end(start);
}
