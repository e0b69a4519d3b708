// Neighbor solicitations beyond frames.ts: a cheap first look at raw frames (so that the
// IPv6 listener decodes only neighbor discovery), a solicitation decoder for the NDP
// responder and duplicate address detection (RFC 4861 §4.3, §7.1.1), the solicitation of
// duplicate address detection itself (RFC 4862 §5.4.2, with an RFC 7527 nonce), and the
// solicited-node multicast group of an address (RFC 4291 §2.7.1). Pure.
import { formatMac, ipFromBytes, parseUnicastMac, type ParsedIp } from '../ipaddr/index.js';
import { ETH_HLEN, ETH_P_IPV6, IPPROTO_ICMPV6, icmpv6Checksum } from './frames.js';
import { u16be, w16be, w32be } from '../util/index.js';

export const ND_NEIGHBOR_SOLICIT = 135;
export const ND_NEIGHBOR_ADVERT = 136;
const ND_OPT_SOURCE_LINKADDR = 1;
const ND_OPT_NONCE = 14;
/** The nonce option's payload: 6 bytes, the option is one unit of 8 (RFC 7527 §4). */
export const DAD_NONCE_LEN = 6;
/** Ethernet + IPv6 + NS (24 bytes) + nonce option (8 bytes). */
export const DAD_NS_FRAME_LEN = ETH_HLEN + 40 + 32;

/** ff02::1:ffXX:XXXX, the solicited-node multicast group of an IPv6 address (16 bytes). */
export function solicitedNode(ip: Uint8Array): Buffer {
  const g = Buffer.from('ff0200000000000000000001ff000000', 'hex');
  g.set(ip.subarray(13, 16), 13);
  return g;
}

/** 33:33:ff:XX:XX:XX, the Ethernet address of the solicited-node group (RFC 2464 §7). */
export function solicitedNodeMac(ip: Uint8Array): Buffer {
  return Buffer.from([0x33, 0x33, 0xff, ip[13]!, ip[14]!, ip[15]!]);
}

/**
 * The neighbor solicitation of duplicate address detection for `ip` (RFC 4862 §5.4.2): from
 * the unspecified address to the solicited-node group of `ip` (and its MAC), hop limit 255,
 * no source link-layer address option (RFC 4861 §4.3 forbids it from ::), a nonce option
 * (RFC 7527) by which the sender recognizes its own solicitation looped back. 86 bytes.
 */
export function buildDadSolicit(p: { ip: ParsedIp; mac: Uint8Array; nonce: Uint8Array }): Buffer {
  if (p.ip.family !== 6) throw new Error(`DAD solicitation for IPv4 ${p.ip.address}`);
  if (p.nonce.length !== DAD_NONCE_LEN) throw new Error('the DAD nonce is 6 bytes');
  const mac = parseUnicastMac(p.mac);
  const dst = solicitedNode(p.ip.bytes);
  const f = Buffer.alloc(DAD_NS_FRAME_LEN);
  solicitedNodeMac(p.ip.bytes).copy(f, 0);
  mac.copy(f, 6);
  w16be(f, ETH_P_IPV6, 12);
  w32be(f, 0x60000000, 14); // version 6, traffic class 0, flow label 0
  w16be(f, 32, 18); // payload: NS (24) + nonce option (8)
  f[20] = IPPROTO_ICMPV6;
  f[21] = 255;
  // source :: (bytes 22..37 stay zero)
  dst.copy(f, 38);
  const icmp = f.subarray(54);
  icmp[0] = ND_NEIGHBOR_SOLICIT;
  p.ip.bytes.copy(icmp, 8);
  icmp[24] = ND_OPT_NONCE;
  icmp[25] = 1;
  icmp.set(p.nonce, 26);
  w16be(icmp, icmpv6Checksum(f.subarray(22, 38), dst, icmp), 2);
  return f;
}

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
  /** The nonce option's bytes (RFC 7527), if present. */
  nonce: Buffer | undefined;
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
  const payloadLen = u16be(f, ip + 4);
  if (f[ip + 7] !== 255 || payloadLen < 24 || ip + 40 + payloadLen > f.length) return undefined;
  const src = f.subarray(ip + 8, ip + 24);
  const dst = f.subarray(ip + 24, ip + 40);
  const icmp = f.subarray(ip + 40, ip + 40 + payloadLen);
  if (icmp[1] !== 0 || icmpv6Checksum(src, dst, icmp) !== 0) return undefined;
  if (icmp[8] === 0xff) return undefined; // multicast target
  let sourceMac: string | undefined;
  let nonce: Buffer | undefined;
  for (let i = 24; i < icmp.length;) {
    if (icmp.length - i < 2) return undefined;
    const len = icmp[i + 1]! * 8;
    if (len === 0 || i + len > icmp.length) return undefined;
    if (icmp[i] === ND_OPT_SOURCE_LINKADDR && len >= 8) sourceMac = formatMac(icmp, i + 2);
    if (icmp[i] === ND_OPT_NONCE) nonce = Buffer.from(icmp.subarray(i + 2, i + len));
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
    nonce,
  };
}
