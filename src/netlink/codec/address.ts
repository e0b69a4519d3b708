// Addresses: struct ifaddrmsg + IFA_* attributes.
import { ipFromBytes, type IpArg } from '../../ipaddr/index.js';
import {
  IFA_ADDRESS,
  IFA_BROADCAST,
  IFA_CACHEINFO,
  IFA_FLAGS,
  IFA_LABEL,
  IFA_LOCAL,
  IFA_PROTO,
  IFA_RT_PRIORITY,
  SIZEOF_IFA_CACHEINFO,
  SIZEOF_IFADDRMSG,
  SIZEOF_NLMSGHDR,
} from './constants.js';
import { ParseError } from './errors.js';
import { expectFixed, expectLen, forEachAttr, getString, getU32, getU8, Writer } from './wire.js';
import { u32le, w32le } from '../../util/index.js';

/** ifa_cacheinfo: lifetimes in seconds (0xffffffff = forever), stamps in 1/100 s. */
export interface AddressCacheInfo {
  preferred: number;
  valid: number;
  created: number;
  updated: number;
}

/** One address (RTM_NEWADDR / RTM_DELADDR), as `ip addr show` reports it. */
export interface Address {
  family: number;
  prefixlen: number;
  /** IFA_F_*: the 32-bit IFA_FLAGS when present, else the 8-bit ifa_flags. */
  flags: number;
  scope: number;
  index: number;
  /** IFA_ADDRESS: the prefix address (the peer on point-to-point links). */
  address?: string;
  /** IFA_LOCAL: the local address (IPv4). */
  local?: string;
  label?: string;
  broadcast?: string;
  cacheinfo?: AddressCacheInfo;
  /** IFA_PROTO: who added it. */
  proto?: number;
  /** IFA_RT_PRIORITY: metric of the prefix route. */
  rtPriority?: number;
}

function ipAttr(buf: Buffer, off: number, len: number, what: string): string {
  if (len !== 4 && len !== 16) throw new ParseError(`${what}: ${len}-byte address`, off);
  return ipFromBytes(buf, off, len);
}

/** Parses the RTM_*ADDR message of `len` bytes at `off` (header included). */
export function parseAddress(buf: Buffer, off: number, len: number): Address {
  expectFixed(off, len, SIZEOF_IFADDRMSG, 'ifaddrmsg');
  const p = off + SIZEOF_NLMSGHDR;
  const a: Address = {
    family: buf[p]!,
    prefixlen: buf[p + 1]!,
    flags: buf[p + 2]!,
    scope: buf[p + 3]!,
    index: u32le(buf, p + 4),
  };
  forEachAttr(buf, p + SIZEOF_IFADDRMSG, off + len, (type, o, l) => {
    switch (type) {
      case IFA_ADDRESS:
        a.address = ipAttr(buf, o, l, 'IFA_ADDRESS');
        break;
      case IFA_LOCAL:
        a.local = ipAttr(buf, o, l, 'IFA_LOCAL');
        break;
      case IFA_BROADCAST:
        a.broadcast = ipAttr(buf, o, l, 'IFA_BROADCAST');
        break;
      case IFA_LABEL:
        a.label = getString(buf, o, l);
        break;
      case IFA_FLAGS:
        a.flags = getU32(buf, o, l, 'IFA_FLAGS');
        break;
      case IFA_PROTO:
        a.proto = getU8(buf, o, l, 'IFA_PROTO');
        break;
      case IFA_RT_PRIORITY:
        a.rtPriority = getU32(buf, o, l, 'IFA_RT_PRIORITY');
        break;
      case IFA_CACHEINFO:
        expectLen(o, l, SIZEOF_IFA_CACHEINFO, 'IFA_CACHEINFO');
        a.cacheinfo = {
          preferred: u32le(buf, o),
          valid: u32le(buf, o + 4),
          created: u32le(buf, o + 8),
          updated: u32le(buf, o + 12),
        };
        break;
    }
  });
  return a;
}

/**
 * Encodes an RTM_*ADDR message. The 8-bit ifa_flags carries the low flag bits and
 * IFA_FLAGS the full 32-bit value whenever any bit above 0xff is set.
 */
/** An address to encode: as Address, with the IPs as text or parsed already. */
export type AddressOut = Omit<Address, 'address' | 'local' | 'broadcast'> & {
  address?: IpArg;
  local?: IpArg;
  broadcast?: IpArg;
};

export function formatAddress(
  w: Writer,
  type: number,
  flags: number,
  a: AddressOut,
  seq = 0,
): void {
  const start = w.begin(type, flags, SIZEOF_IFADDRMSG, seq);
  const p = start + SIZEOF_NLMSGHDR;
  const b = w.buf;
  b[p] = a.family;
  b[p + 1] = a.prefixlen;
  b[p + 2] = a.flags & 0xff;
  b[p + 3] = a.scope;
  w32le(b, a.index >>> 0, p + 4);
  if (a.local !== undefined) w.ip(IFA_LOCAL, a.local);
  if (a.address !== undefined) w.ip(IFA_ADDRESS, a.address);
  if (a.broadcast !== undefined) w.ip(IFA_BROADCAST, a.broadcast);
  if (a.label !== undefined) w.string(IFA_LABEL, a.label);
  if (a.flags > 0xff) w.u32(IFA_FLAGS, a.flags);
  if (a.proto !== undefined) w.u8(IFA_PROTO, a.proto);
  if (a.rtPriority !== undefined) w.u32(IFA_RT_PRIORITY, a.rtPriority);
  if (a.cacheinfo) {
    w.ensure(4 + SIZEOF_IFA_CACHEINFO);
    const c = Buffer.alloc(SIZEOF_IFA_CACHEINFO);
    w32le(c, a.cacheinfo.preferred >>> 0, 0);
    w32le(c, a.cacheinfo.valid >>> 0, 4);
    w32le(c, a.cacheinfo.created >>> 0, 8);
    w32le(c, a.cacheinfo.updated >>> 0, 12);
    w.bytesAttr(IFA_CACHEINFO, c);
  }
  w.end(start);
}
