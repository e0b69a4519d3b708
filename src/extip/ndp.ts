// What the listener needs beyond frames.ts: a cheap first look at raw frames (so that the
// IPv6 listener decodes only neighbor discovery), and a neighbor solicitation decoder for
// the NDP responder (RFC 4861 §4.3, §7.1.1). Pure.
import { formatMac, ipFromBytes } from '../ipaddr/index.js';
import { ETH_HLEN, ETH_P_IPV6, IPPROTO_ICMPV6, icmpv6Checksum } from './frames.js';

export const ND_NEIGHBOR_SOLICIT = 135;
export const ND_NEIGHBOR_ADVERT = 136;
const ND_OPT_SOURCE_LINKADDR = 1;

/** The ICMPv6 type of an untagged Ethernet/IPv6/ICMPv6 frame, or -1 for anything else. */
export function icmpv6Type(f: Uint8Array): number {
  if (f.length < ETH_HLEN + 40 + 4) return -1;
  if (((f[12]! << 8) | f[13]!) !== ETH_P_IPV6) return -1;
  if (f[ETH_HLEN + 6] !== IPPROTO_ICMPV6) return -1;
  return f[ETH_HLEN + 40]!;
}

export interface NeighborSolicit {
  ethSrc: string;
  /** "::" for a duplicate address detection probe. */
  srcIp: string;
  dstIp: string;
  target: string;
  /** The source link-layer address option, if present. */
  sourceMac: string | undefined;
}

/**
 * Decodes an untagged Ethernet frame holding a neighbor solicitation that passes the
 * RFC 4861 §7.1.1 checks a responder relies on (hop limit 255, code 0, valid checksum, a
 * unicast target, no source link-layer option from "::"); undefined for anything else.
 */
export function decodeNeighborSolicit(frame: Uint8Array): NeighborSolicit | undefined {
  if (icmpv6Type(frame) !== ND_NEIGHBOR_SOLICIT) return undefined;
  const f = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  const ip = ETH_HLEN;
  const payloadLen = f.readUInt16BE(ip + 4);
  if (f[ip + 7] !== 255 || payloadLen < 24 || ip + 40 + payloadLen > f.length) return undefined;
  const src = f.subarray(ip + 8, ip + 24);
  const dst = f.subarray(ip + 24, ip + 40);
  const icmp = f.subarray(ip + 40, ip + 40 + payloadLen);
  if (icmp[1] !== 0 || icmpv6Checksum(src, dst, icmp) !== 0) return undefined;
  if (icmp[8] === 0xff) return undefined; // multicast target
  let sourceMac: string | undefined;
  for (let i = 24; i < icmp.length;) {
    if (icmp.length - i < 2) return undefined;
    const len = icmp[i + 1]! * 8;
    if (len === 0 || i + len > icmp.length) return undefined;
    if (icmp[i] === ND_OPT_SOURCE_LINKADDR && len >= 8) sourceMac = formatMac(icmp, i + 2);
    i += len;
  }
  const srcIp = ipFromBytes(src);
  if (srcIp === '::' && sourceMac !== undefined) return undefined;
  return {
    ethSrc: formatMac(f, 6),
    srcIp,
    dstIp: ipFromBytes(dst),
    target: ipFromBytes(icmp, 8, 16),
    sourceMac,
  };
}
