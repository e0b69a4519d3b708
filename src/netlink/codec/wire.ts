// The netlink wire format underneath every message: the 16-byte nlmsghdr, 4-byte aligned
// TLV attributes (nested ones included), a Writer that encodes straight into one growing
// Buffer, and bounds-checked readers that throw ParseError on malformed input.
//
// Netlink uses host byte order; every supported target (x86_64, aarch64) is little-endian.
import {
  AF_INET,
  AF_INET6,
  MAX_ADDR_LEN,
  writeIp,
  writeLinkAddr,
  type IpArg,
} from '../../ipaddr/index.js';
import { NLA_TYPE_MASK, SIZEOF_NLATTR, SIZEOF_NLMSGHDR } from './constants.js';
import { ParseError } from './errors.js';
import { i32le, u16le, u32le, w16le, w32le, wi32le } from '../../util/index.js';

export const align4 = (n: number): number => (n + 3) & ~3;

// Little-endian stores without Buffer's per-call range checks: the Writer has already
// made room (ensure), and these are the bulk path's hottest lines.
function put16(b: Buffer, o: number, v: number): void {
  b[o] = v;
  b[o + 1] = v >>> 8;
}
function put32(b: Buffer, o: number, v: number): void {
  b[o] = v;
  b[o + 1] = v >>> 8;
  b[o + 2] = v >>> 16;
  b[o + 3] = v >>> 24;
}

/** A netlink message header. */
export interface NlMsgHeader {
  len: number;
  type: number;
  flags: number;
  seq: number;
  pid: number;
}

/** An attribute kept as bytes; `type` includes the NLA_F_NESTED / NET_BYTEORDER bits. */
export interface RawAttr {
  type: number;
  value: Buffer;
}

/**
 * Encodes netlink messages back to back into one Buffer that grows on demand. The bulk
 * path reuses one Writer (reset() between windows), so it allocates nothing per message.
 */
export class Writer {
  buf: Buffer;
  off = 0;

  constructor(initialSize = 4096) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  reset(): void {
    this.off = 0;
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.off + n;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.off);
    this.buf = next;
  }

  /** The bytes written so far (a view, valid until the next write). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.off);
  }

  /** Starts a message; returns its offset for end(). `fixedLen` zeroed bytes follow. */
  begin(type: number, flags: number, fixedLen: number, seq = 0, pid = 0): number {
    this.ensure(SIZEOF_NLMSGHDR + fixedLen + 256);
    const start = this.off;
    const b = this.buf;
    put16(b, start + 4, type);
    put16(b, start + 6, flags);
    put32(b, start + 8, seq);
    put32(b, start + 12, pid);
    const end = start + SIZEOF_NLMSGHDR + align4(fixedLen);
    for (let i = start + SIZEOF_NLMSGHDR; i < end; i++) b[i] = 0;
    this.off = end;
    return start;
  }

  /** Finishes the message begun at `start` by writing its length. */
  end(start: number): void {
    put32(this.buf, start, this.off - start);
  }

  #attrHeader(type: number, valueLen: number): number {
    this.ensure(SIZEOF_NLATTR + valueLen + 3);
    const o = this.off;
    put16(this.buf, o, SIZEOF_NLATTR + valueLen);
    put16(this.buf, o + 2, type);
    return o + SIZEOF_NLATTR;
  }

  #pad(valueEnd: number): void {
    const end = align4(valueEnd);
    for (let i = valueEnd; i < end; i++) this.buf[i] = 0;
    this.off = end;
  }

  u8(type: number, v: number): void {
    const o = this.#attrHeader(type, 1);
    this.buf[o] = v;
    this.#pad(o + 1);
  }

  u16(type: number, v: number): void {
    const o = this.#attrHeader(type, 2);
    w16le(this.buf, v, o);
    this.#pad(o + 2);
  }

  u32(type: number, v: number): void {
    const o = this.#attrHeader(type, 4);
    w32le(this.buf, v >>> 0, o);
    this.off = o + 4;
  }

  s32(type: number, v: number): void {
    const o = this.#attrHeader(type, 4);
    wi32le(this.buf, v, o);
    this.off = o + 4;
  }

  u64(type: number, v: bigint): void {
    const o = this.#attrHeader(type, 8);
    this.buf.writeBigUInt64LE(v, o);
    this.off = o + 8;
  }

  flag(type: number): void {
    this.#attrHeader(type, 0);
    this.off += SIZEOF_NLATTR;
  }

  /** A NUL-terminated string attribute. */
  string(type: number, s: string): void {
    const n = Buffer.byteLength(s);
    const o = this.#attrHeader(type, n + 1);
    this.buf.write(s, o, n, 'utf8');
    this.buf[o + n] = 0;
    this.#pad(o + n + 1);
  }

  bytesAttr(type: number, v: Uint8Array): void {
    const o = this.#attrHeader(type, v.length);
    this.buf.set(v, o);
    this.#pad(o + v.length);
  }

  /**
   * An address attribute from an IP: text (parsed into the message) or a ParsedIp (its bytes
   * copied, not parsed again); returns its family.
   */
  ip(type: number, ip: IpArg): number {
    this.ensure(SIZEOF_NLATTR + 16);
    const o = this.off + SIZEOF_NLATTR;
    let len: number;
    if (typeof ip === 'string') {
      len = writeIp(ip, this.buf, o);
    } else {
      this.buf.set(ip.bytes, o); // parsed already: the bytes as they are
      len = ip.bytes.length;
    }
    put16(this.buf, this.off, SIZEOF_NLATTR + len);
    put16(this.buf, this.off + 2, type);
    this.off = o + len;
    return len === 16 ? AF_INET6 : AF_INET;
  }

  /** A link-layer address attribute parsed from "aa:bb:...". */
  mac(type: number, mac: string): void {
    this.ensure(SIZEOF_NLATTR + MAX_ADDR_LEN + 3);
    const o = this.off + SIZEOF_NLATTR;
    const len = writeLinkAddr(mac, this.buf, o);
    put16(this.buf, this.off, SIZEOF_NLATTR + len);
    put16(this.buf, this.off + 2, type);
    this.#pad(o + len);
  }

  /** Opens a nested attribute (the caller ORs in NLA_F_NESTED if it wants it). */
  nest(type: number): number {
    const start = this.off;
    this.#attrHeader(type, 0);
    this.off += SIZEOF_NLATTR;
    return start;
  }

  nestEnd(start: number): void {
    put16(this.buf, start, this.off - start);
  }

  raw(attrs: readonly RawAttr[] | undefined): void {
    if (attrs) for (const a of attrs) this.bytesAttr(a.type, a.value);
  }
}

// --- reading --------------------------------------------------------------------------------

/** Reads and validates the header of the message at `off`; `end` bounds the buffer. */
export function readHeader(buf: Buffer, off: number, end: number): NlMsgHeader {
  if (end - off < SIZEOF_NLMSGHDR) throw new ParseError('truncated nlmsghdr', off);
  const len = u32le(buf, off);
  if (len < SIZEOF_NLMSGHDR) throw new ParseError(`nlmsg_len ${len} below header size`, off);
  if (len > end - off) throw new ParseError(`nlmsg_len ${len} exceeds ${end - off} bytes`, off);
  return {
    len,
    type: u16le(buf, off + 4),
    flags: u16le(buf, off + 6),
    seq: u32le(buf, off + 8),
    pid: u32le(buf, off + 12),
  };
}

/**
 * Calls `fn(type, valueOffset, valueLength)` for every attribute in buf[start, end).
 * `type` has the NLA_F_* bits masked off. Throws ParseError on a malformed attribute.
 */
export function forEachAttr(
  buf: Buffer,
  start: number,
  end: number,
  fn: (type: number, off: number, len: number) => void,
): void {
  let p = start;
  while (p < end) {
    if (end - p < SIZEOF_NLATTR) throw new ParseError('truncated attribute header', p);
    const len = u16le(buf, p);
    if (len < SIZEOF_NLATTR || len > end - p) {
      throw new ParseError(`attribute length ${len} out of bounds`, p);
    }
    fn(u16le(buf, p + 2) & NLA_TYPE_MASK, p + SIZEOF_NLATTR, len - SIZEOF_NLATTR);
    p += align4(len);
  }
}

/** Copies every attribute in buf[start, end) as RawAttr (flag bits kept in `type`). */
export function readRawAttrs(buf: Buffer, start: number, end: number): RawAttr[] {
  const out: RawAttr[] = [];
  let p = start;
  while (p < end) {
    if (end - p < SIZEOF_NLATTR) throw new ParseError('truncated attribute header', p);
    const len = u16le(buf, p);
    if (len < SIZEOF_NLATTR || len > end - p) {
      throw new ParseError(`attribute length ${len} out of bounds`, p);
    }
    out.push({
      type: u16le(buf, p + 2),
      value: Buffer.from(buf.subarray(p + SIZEOF_NLATTR, p + len)),
    });
    p += align4(len);
  }
  return out;
}

export function expectLen(off: number, len: number, want: number, what: string): void {
  if (len !== want) throw new ParseError(`${what}: ${len} bytes, expected ${want}`, off);
}

export function getU8(buf: Buffer, off: number, len: number, what: string): number {
  expectLen(off, len, 1, what);
  return buf[off]!;
}

export function getU16(buf: Buffer, off: number, len: number, what: string): number {
  expectLen(off, len, 2, what);
  return u16le(buf, off);
}

export function getU32(buf: Buffer, off: number, len: number, what: string): number {
  expectLen(off, len, 4, what);
  return u32le(buf, off);
}

export function getS32(buf: Buffer, off: number, len: number, what: string): number {
  expectLen(off, len, 4, what);
  return i32le(buf, off);
}

/** A string attribute: up to the first NUL (the kernel always sends one). */
export function getString(buf: Buffer, off: number, len: number): string {
  let e = off;
  const end = off + len;
  while (e < end && buf[e] !== 0) e++;
  return buf.toString('utf8', off, e);
}

/** Throws unless `need` bytes of fixed header fit in a message of `len` at `off`. */
export function expectFixed(off: number, len: number, need: number, what: string): void {
  if (len < SIZEOF_NLMSGHDR + need) {
    throw new ParseError(`${what}: message of ${len} bytes is shorter than its header`, off);
  }
}
