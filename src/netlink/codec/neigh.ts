// Neighbors: struct ndmsg + NDA_* attributes, NDA_FLAGS_EXT (the managed flag),
// NDA_PROTOCOL, NDA_LLADDR and NDA_CACHEINFO included. formatNeigh is the bulk path.
import {
  formatLinkAddr,
  formatMacHalves,
  formatV4Number,
  ipFromBytes,
} from '../../ipaddr/index.js';
import {
  NDA_CACHEINFO,
  NDA_DST,
  NDA_FLAGS_EXT,
  NDA_IFINDEX,
  NDA_LLADDR,
  NDA_MASTER,
  NDA_NH_ID,
  NDA_PROBES,
  NDA_PROTOCOL,
  NDA_VLAN,
  NLA_TYPE_MASK,
  NTF_EXT_MANAGED,
  SIZEOF_NDA_CACHEINFO,
  SIZEOF_NDMSG,
  SIZEOF_NLATTR,
  SIZEOF_NLMSGHDR,
} from './constants.js';
import { ParseError } from './errors.js';
import {
  align4,
  expectFixed,
  expectLen,
  forEachAttr,
  getU16,
  getU32,
  getU8,
  Writer,
} from './wire.js';
import { i32be, i32le, u16le, u32le, w16le, w32le, wi32le } from '../../util/index.js';

/** nda_cacheinfo: ages in clock ticks (USER_HZ) since the event. */
export interface NeighCacheInfo {
  confirmed: number;
  used: number;
  updated: number;
  refcnt: number;
}

/** One neighbor entry (RTM_NEWNEIGH / RTM_DELNEIGH), as `ip neigh show` reports it. */
export interface Neigh {
  family: number;
  ifindex: number;
  /** NUD_* */
  state: number;
  /** NTF_* (8-bit ndm_flags) */
  flags: number;
  /** ndm_type (RTN_*) */
  type: number;
  /** NDA_FLAGS_EXT: NTF_EXT_MANAGED and later extended flags; 0 when absent. */
  flagsExt: number;
  dst?: string;
  lladdr?: string;
  /** NDA_PROTOCOL: who installed the entry (RTPROT_* or a private value). */
  protocol?: number;
  probes?: number;
  vlan?: number;
  master?: number;
  /** NDA_IFINDEX (bridge FDB / filter requests) */
  filterIfindex?: number;
  nhid?: number;
  cacheinfo?: NeighCacheInfo;
}

/** True when the entry carries the managed flag (NTF_EXT_MANAGED in NDA_FLAGS_EXT). */
export function isManaged(n: Pick<Neigh, 'flagsExt'>): boolean {
  return (n.flagsExt & NTF_EXT_MANAGED) !== 0;
}

function parseNeighAttr(n: Neigh, buf: Buffer, type: number, off: number, len: number): void {
  switch (type) {
    case NDA_DST:
      if (len !== 4 && len !== 16) throw new ParseError(`NDA_DST: ${len}-byte address`, off);
      n.dst = ipFromBytes(buf, off, len);
      break;
    case NDA_LLADDR:
      n.lladdr = formatLinkAddr(buf, off, len);
      break;
    case NDA_PROTOCOL:
      n.protocol = getU8(buf, off, len, 'NDA_PROTOCOL');
      break;
    case NDA_FLAGS_EXT:
      n.flagsExt = getU32(buf, off, len, 'NDA_FLAGS_EXT');
      break;
    case NDA_PROBES:
      n.probes = getU32(buf, off, len, 'NDA_PROBES');
      break;
    case NDA_VLAN:
      n.vlan = getU16(buf, off, len, 'NDA_VLAN');
      break;
    case NDA_MASTER:
      n.master = getU32(buf, off, len, 'NDA_MASTER');
      break;
    case NDA_IFINDEX:
      n.filterIfindex = getU32(buf, off, len, 'NDA_IFINDEX');
      break;
    case NDA_NH_ID:
      n.nhid = getU32(buf, off, len, 'NDA_NH_ID');
      break;
    case NDA_CACHEINFO:
      expectLen(off, len, SIZEOF_NDA_CACHEINFO, 'NDA_CACHEINFO');
      n.cacheinfo = {
        confirmed: u32le(buf, off),
        used: u32le(buf, off + 4),
        updated: u32le(buf, off + 8),
        refcnt: u32le(buf, off + 12),
      };
      break;
  }
}

/**
 * The fields of a neighbor message a neighbor table keeps, filled in place by
 * readNeighFields: no object per message on the hot path. An IPv4 NDA_DST and a 6-byte
 * NDA_LLADDR are kept as numbers too (`dst4`, `macHi`/`macLo`), and their text is made
 * only when `dst` or `lladdr` is read: a table keyed by numbers reads 1,000,000 events
 * without a string each.
 */
export class NeighFields {
  family = 0;
  ifindex = 0;
  state = 0;
  flags = 0;
  type = 0;
  flagsExt = 0;
  protocol: number | undefined = undefined;
  /** NDA_DST's length: 0 (none), 4 or 16. */
  dstBytes = 0;
  /** A 4-byte NDA_DST as a signed 32-bit number (a << 24 | b << 16 | c << 8 | d). */
  dst4 = 0;
  /** A 6-byte NDA_LLADDR as two 24-bit numbers (bytes 0-2, 3-5); -1 when not 6 bytes. */
  macHi = -1;
  macLo = -1;
  #dst: string | undefined = undefined;
  #lladdr: string | undefined = undefined;

  /** NDA_DST as text (made on the first read of an IPv4 one). */
  get dst(): string | undefined {
    if (this.#dst === undefined && this.dstBytes === 4) this.#dst = formatV4Number(this.dst4);
    return this.#dst;
  }

  /** NDA_LLADDR as text (made on the first read of a 6-byte one). */
  get lladdr(): string | undefined {
    if (this.#lladdr === undefined && this.macHi >= 0) {
      this.#lladdr = formatMacHalves(this.macHi, this.macLo);
    }
    return this.#lladdr;
  }

  /** Reads the message (readNeighFields). */
  read(buf: Buffer, off: number, len: number): this {
    expectFixed(off, len, SIZEOF_NDMSG, 'ndmsg');
    const p = off + SIZEOF_NLMSGHDR;
    this.family = buf[p]!;
    this.ifindex = i32le(buf, p + 4);
    this.state = u16le(buf, p + 8);
    this.flags = buf[p + 10]!;
    this.type = buf[p + 11]!;
    this.flagsExt = 0;
    this.protocol = undefined;
    this.dstBytes = 0;
    this.dst4 = 0;
    this.macHi = -1;
    this.macLo = -1;
    this.#dst = undefined;
    this.#lladdr = undefined;
    const end = off + len;
    let a = p + SIZEOF_NDMSG;
    while (a < end) {
      if (end - a < SIZEOF_NLATTR) throw new ParseError('truncated attribute header', a);
      const alen = u16le(buf, a);
      if (alen < SIZEOF_NLATTR || alen > end - a) {
        throw new ParseError(`attribute length ${alen} out of bounds`, a);
      }
      const type = u16le(buf, a + 2) & NLA_TYPE_MASK;
      const o = a + SIZEOF_NLATTR;
      const l = alen - SIZEOF_NLATTR;
      if (type === NDA_DST) {
        if (l !== 4 && l !== 16) throw new ParseError(`NDA_DST: ${l}-byte address`, o);
        this.dstBytes = l;
        if (l === 4) this.dst4 = i32be(buf, o);
        else this.#dst = ipFromBytes(buf, o, l);
      } else if (type === NDA_LLADDR) {
        if (l === 6) {
          this.macHi = (buf[o]! << 16) | (buf[o + 1]! << 8) | buf[o + 2]!;
          this.macLo = (buf[o + 3]! << 16) | (buf[o + 4]! << 8) | buf[o + 5]!;
        } else {
          this.#lladdr = formatLinkAddr(buf, o, l);
        }
      } else if (type === NDA_PROTOCOL) this.protocol = getU8(buf, o, l, 'NDA_PROTOCOL');
      else if (type === NDA_FLAGS_EXT) this.flagsExt = getU32(buf, o, l, 'NDA_FLAGS_EXT');
      else if (type === NDA_CACHEINFO) expectLen(o, l, SIZEOF_NDA_CACHEINFO, 'NDA_CACHEINFO');
      a += align4(alen);
    }
    return this;
  }
}

/** A NeighFields to reuse with readNeighFields. */
export function neighFields(): NeighFields {
  return new NeighFields();
}

/**
 * parseNeigh without an object per message: fills `into` with the header, NDA_DST,
 * NDA_LLADDR, NDA_PROTOCOL and NDA_FLAGS_EXT of the RTM_*NEIGH message at `off` (the other
 * attributes are skipped) and returns it. Throws ParseError where parseNeigh would. For a
 * subscription that sees 200,000 messages when a large table is written (onMessage).
 */
export function readNeighFields(
  buf: Buffer,
  off: number,
  len: number,
  into: NeighFields,
): NeighFields {
  return into.read(buf, off, len);
}

/** Parses the RTM_*NEIGH message of `len` bytes at `off` (header included). */
export function parseNeigh(buf: Buffer, off: number, len: number): Neigh {
  expectFixed(off, len, SIZEOF_NDMSG, 'ndmsg');
  const p = off + SIZEOF_NLMSGHDR;
  const n: Neigh = {
    family: buf[p]!,
    ifindex: i32le(buf, p + 4),
    state: u16le(buf, p + 8),
    flags: buf[p + 10]!,
    type: buf[p + 11]!,
    flagsExt: 0,
  };
  forEachAttr(buf, p + SIZEOF_NDMSG, off + len, (t, o, l) => parseNeighAttr(n, buf, t, o, l));
  return n;
}

/**
 * Encodes an RTM_*NEIGH message. NDA_FLAGS_EXT is written only when non-zero (kernels
 * before 5.16 reject the attribute).
 */
export function formatNeigh(w: Writer, type: number, flags: number, n: Neigh, seq = 0): void {
  const start = w.begin(type, flags, SIZEOF_NDMSG, seq);
  const b = w.buf;
  const p = start + SIZEOF_NLMSGHDR;
  b[p] = n.family;
  wi32le(b, n.ifindex, p + 4);
  w16le(b, n.state, p + 8);
  b[p + 10] = n.flags;
  b[p + 11] = n.type;
  if (n.dst !== undefined) w.ip(NDA_DST, n.dst);
  if (n.lladdr !== undefined) w.mac(NDA_LLADDR, n.lladdr);
  if (n.protocol !== undefined) w.u8(NDA_PROTOCOL, n.protocol);
  if (n.flagsExt !== 0) w.u32(NDA_FLAGS_EXT, n.flagsExt);
  if (n.probes !== undefined) w.u32(NDA_PROBES, n.probes);
  if (n.vlan !== undefined) w.u16(NDA_VLAN, n.vlan);
  if (n.master !== undefined) w.u32(NDA_MASTER, n.master);
  if (n.filterIfindex !== undefined) w.u32(NDA_IFINDEX, n.filterIfindex);
  if (n.nhid !== undefined) w.u32(NDA_NH_ID, n.nhid);
  if (n.cacheinfo) {
    const c = n.cacheinfo;
    const a = w.nest(NDA_CACHEINFO);
    w.ensure(SIZEOF_NDA_CACHEINFO);
    w32le(w.buf, c.confirmed >>> 0, w.off);
    w32le(w.buf, c.used >>> 0, w.off + 4);
    w32le(w.buf, c.updated >>> 0, w.off + 8);
    w32le(w.buf, c.refcnt >>> 0, w.off + 12);
    w.off += SIZEOF_NDA_CACHEINFO;
    w.nestEnd(a);
  }
  w.end(start);
}
