// Wire frames of external-IP announcements: gratuitous ARP (IPv4) and unsolicited neighbor
// advertisements (IPv6), built as complete Ethernet frames for an AF_PACKET socket, and a
// decoder for tests and conflict detection. Pure: no I/O.
//
// References: RFC 826 (ARP), RFC 5227 (ARP announcements), RFC 2002 section 4.6 (gratuitous
// ARP reply form), RFC 4861 sections 4.4 and 7.2.6 (NA format, unsolicited NA), RFC 4443
// section 2.3 and RFC 8200 section 8.1 (ICMPv6 checksum and pseudo-header), RFC 2464 section 7
// (IPv6 multicast → 33:33:xx:xx:xx:xx).
import { InvalidArgumentError } from '../errors/index.js';
import {
  formatMac,
  ipFromBytes,
  parseIp,
  parseMac,
  parseUnicastMac,
  validateUnicastIp,
} from '../ipaddr/index.js';
import { u16be, w16be, w32be } from '../util/index.js';

export const ETH_P_IP = 0x0800;
export const ETH_P_ARP = 0x0806;
export const ETH_P_IPV6 = 0x86dd;
export const ETH_HLEN = 14;
export const ARPHRD_ETHER = 1;
export const ARPOP_REQUEST = 1;
export const ARPOP_REPLY = 2;
export const IPPROTO_ICMPV6 = 58;
export const ND_NEIGHBOR_ADVERT = 136;
export const ND_OPT_TARGET_LINKADDR = 2;
/** Ethernet + ARP for IPv4 over Ethernet. Not padded to 60 bytes: the driver does that. */
export const ARP_FRAME_LEN = ETH_HLEN + 28;
/** Ethernet + IPv6 + NA (24 bytes) + target link-layer address option (8 bytes). */
export const NA_FRAME_LEN = ETH_HLEN + 40 + 32;
export const BROADCAST_MAC = 'ff:ff:ff:ff:ff:ff';
export const ALL_NODES_IP = 'ff02::1';
export const ALL_NODES_MAC = '33:33:00:00:00:01';

const NA_ROUTER = 0x80;
const NA_SOLICITED = 0x40;
const NA_OVERRIDE = 0x20;
const ZERO_MAC = Buffer.alloc(6);
const VLAN_TPIDS = new Set([0x8100, 0x88a8]);

/** A MAC as text ("aa:bb:cc:dd:ee:ff") or 6 bytes. */
export type MacInput = string | Uint8Array;

function macBytes(mac: MacInput, what: string): Buffer {
  if (typeof mac === 'string') return parseMac(mac);
  if (mac.length !== 6)
    throw new InvalidArgumentError(`${what}: a MAC is 6 bytes; got ${mac.length}`);
  return Buffer.from(mac);
}

function ipv4Bytes(ip: string, what: string): Buffer {
  const p = parseIp(ip);
  if (p.family !== 4)
    throw new InvalidArgumentError(`${what}: ARP carries IPv4; ${p.address} is IPv6`);
  return p.bytes;
}

function ipv6Bytes(ip: string, what: string): Buffer {
  const p = parseIp(ip, { allowMapped: true });
  if (p.family !== 6)
    throw new InvalidArgumentError(`${what}: ${p.address} is IPv4; NDP carries IPv6`);
  return p.bytes;
}

function writeEthernet(frame: Buffer, dst: Uint8Array, src: Uint8Array, etherType: number): void {
  frame.set(dst, 0);
  frame.set(src, 6);
  w16be(frame, etherType, 12);
}

// ---------------------------------------------------------------------------------------
// ARP

export interface ArpParams {
  /** ARPOP_REQUEST (1) or ARPOP_REPLY (2); other values are written as given. */
  op: number;
  /** Ethernet destination. */
  ethDst: MacInput;
  /** Ethernet source; default `senderMac`. */
  ethSrc?: MacInput;
  senderMac: MacInput;
  senderIp: string;
  targetMac: MacInput;
  targetIp: string;
}

/** Any ARP frame for IPv4 over Ethernet (42 bytes). Throws InvalidArgumentError on bad input. */
export function buildArp(p: ArpParams): Buffer {
  if (!Number.isInteger(p.op) || p.op < 0 || p.op > 0xffff) {
    throw new InvalidArgumentError(`ARP op ${p.op} is not a 16-bit number`);
  }
  const senderMac = macBytes(p.senderMac, 'ARP sender MAC');
  const frame = Buffer.alloc(ARP_FRAME_LEN);
  writeEthernet(
    frame,
    macBytes(p.ethDst, 'Ethernet destination'),
    p.ethSrc === undefined ? senderMac : macBytes(p.ethSrc, 'Ethernet source'),
    ETH_P_ARP,
  );
  w16be(frame, ARPHRD_ETHER, 14); // hardware type
  w16be(frame, ETH_P_IP, 16); // protocol type
  frame[18] = 6; // hardware address length
  frame[19] = 4; // protocol address length
  w16be(frame, p.op, 20);
  frame.set(senderMac, 22);
  frame.set(ipv4Bytes(p.senderIp, 'ARP sender IP'), 28);
  frame.set(macBytes(p.targetMac, 'ARP target MAC'), 32);
  frame.set(ipv4Bytes(p.targetIp, 'ARP target IP'), 38);
  return frame;
}

/**
 * 'request': op 1 (RFC 5227 "ARP Announcement", `arping -U`); 'reply': op 2 (`arping -A`).
 * Switches and hosts differ in which they honour, so announcers commonly send both.
 */
export type GratuitousArpForm = 'request' | 'reply';

export interface GratuitousArpParams {
  /** The external IP (IPv4 unicast): sender IP and target IP. */
  ip: string;
  /** The external interface's MAC (unicast): Ethernet source and sender MAC. */
  mac: MacInput;
  form: GratuitousArpForm;
}

/**
 * A gratuitous ARP for `ip` at `mac`, broadcast (Ethernet destination ff:ff:ff:ff:ff:ff),
 * sender IP = target IP = `ip`, sender MAC = `mac`.
 *
 * Target hardware address: in the request form it is all zeros, as RFC 5227 section 2.3
 * says for announcements (the field is ignored and SHOULD be zero; `arping -U` writes the
 * broadcast address there instead, which receivers ignore as well). In the reply form it is
 * `mac` itself: RFC 2002 section 4.6 sets the target hardware address of a gratuitous ARP
 * reply to the address being announced, and iputils `arping -A` does the same.
 */
export function buildGratuitousArp(p: GratuitousArpParams): Buffer {
  const ip = validateUnicastIp(p.ip, { family: 4 }).address;
  const mac = parseUnicastMac(p.mac);
  return buildArp({
    op: p.form === 'request' ? ARPOP_REQUEST : ARPOP_REPLY,
    ethDst: BROADCAST_MAC,
    senderMac: mac,
    senderIp: ip,
    targetMac: p.form === 'request' ? ZERO_MAC : mac,
    targetIp: ip,
  });
}

export interface ArpReplyParams {
  /** The replying host's MAC: Ethernet source and sender MAC. */
  senderMac: MacInput;
  /** The IP the replying host claims. */
  senderIp: string;
  /** The asking host's MAC: Ethernet destination and target MAC. */
  targetMac: MacInput;
  targetIp: string;
}

/** An ordinary unicast ARP reply from another host ("senderIp is at senderMac"). */
export function buildArpReply(p: ArpReplyParams): Buffer {
  return buildArp({ op: ARPOP_REPLY, ethDst: p.targetMac, ...p });
}

// ---------------------------------------------------------------------------------------
// ICMPv6 neighbor advertisement

/** The ICMPv6 checksum over the RFC 8200 pseudo-header and `icmp` (checksum field zero or not). */
export function icmpv6Checksum(src: Uint8Array, dst: Uint8Array, icmp: Uint8Array): number {
  let sum = 0;
  const add16 = (b: Uint8Array, len: number): void => {
    for (let i = 0; i + 1 < len; i += 2) sum += (b[i]! << 8) | b[i + 1]!;
    if (len & 1) sum += b[len - 1]! << 8;
  };
  add16(src, 16);
  add16(dst, 16);
  sum += Math.floor(icmp.length / 0x10000) + (icmp.length & 0xffff); // upper-layer length
  sum += IPPROTO_ICMPV6; // three zero bytes, then next header
  add16(icmp, icmp.length);
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return ~sum & 0xffff;
}

export interface NeighborAdvertParams {
  ethSrc: MacInput;
  /** Default: the RFC 2464 multicast MAC of `dstIp`; required when `dstIp` is unicast. */
  ethDst?: MacInput;
  srcIp: string;
  /** Default ff02::1 (all nodes). */
  dstIp?: string;
  target: string;
  router?: boolean;
  solicited?: boolean;
  override?: boolean;
  /** Target link-layer address option; omitted when null. Default: `ethSrc`. */
  targetMac?: MacInput | null;
  /** Default 255, the only value receivers accept (RFC 4861 section 7.1.2). */
  hopLimit?: number;
}

/** Any NA frame, with a correct checksum. Throws InvalidArgumentError on bad input. */
export function buildNeighborAdvert(p: NeighborAdvertParams): Buffer {
  const ethSrc = macBytes(p.ethSrc, 'Ethernet source');
  const src = ipv6Bytes(p.srcIp, 'IPv6 source');
  const dst = ipv6Bytes(p.dstIp ?? ALL_NODES_IP, 'IPv6 destination');
  let ethDst: Buffer;
  if (p.ethDst !== undefined) {
    ethDst = macBytes(p.ethDst, 'Ethernet destination');
  } else if (dst[0] === 0xff) {
    ethDst = Buffer.from([0x33, 0x33, dst[12]!, dst[13]!, dst[14]!, dst[15]!]);
  } else {
    throw new InvalidArgumentError('ethDst is required when the IPv6 destination is unicast');
  }
  const hopLimit = p.hopLimit ?? 255;
  if (!Number.isInteger(hopLimit) || hopLimit < 0 || hopLimit > 255) {
    throw new InvalidArgumentError(`hop limit ${hopLimit} is not in 0–255`);
  }
  const tlla = p.targetMac === null ? undefined : macBytes(p.targetMac ?? ethSrc, 'target MAC');
  const icmpLen = 24 + (tlla === undefined ? 0 : 8);
  const frame = Buffer.alloc(ETH_HLEN + 40 + icmpLen);
  writeEthernet(frame, ethDst, ethSrc, ETH_P_IPV6);
  w32be(frame, 0x60000000, 14); // version 6, traffic class 0, flow label 0
  w16be(frame, icmpLen, 18); // payload length
  frame[20] = IPPROTO_ICMPV6; // next header
  frame[21] = hopLimit;
  frame.set(src, 22);
  frame.set(dst, 38);
  const icmp = frame.subarray(54);
  icmp[0] = ND_NEIGHBOR_ADVERT;
  icmp[1] = 0; // code
  icmp[4] =
    (p.router ? NA_ROUTER : 0) | (p.solicited ? NA_SOLICITED : 0) | (p.override ? NA_OVERRIDE : 0);
  icmp.set(ipv6Bytes(p.target, 'NA target'), 8);
  if (tlla !== undefined) {
    icmp[24] = ND_OPT_TARGET_LINKADDR;
    icmp[25] = 1; // length in units of 8 bytes
    icmp.set(tlla, 26);
  }
  w16be(icmp, icmpv6Checksum(src, dst, icmp), 2);
  return frame;
}

export interface UnsolicitedNaParams {
  /** The external IP (IPv6 unicast): the NA target, and its IPv6 source. */
  ip: string;
  /** The external interface's MAC (unicast): Ethernet source and target link-layer address. */
  mac: MacInput;
  /** Set the router flag: the node forwards IPv6 on the interface. Default false. */
  router?: boolean;
}

/**
 * An unsolicited neighbor advertisement (RFC 4861 section 7.2.6) for `ip` at `mac` as the
 * Linux kernel sends one for an address of its own (ndisc_send_unsol_na): from `ip` itself
 * to ff02::1 via 33:33:00:00:00:01, hop limit 255, override set, solicited clear, router as
 * the interface's forwarding setting, with the target link-layer address option. 86 bytes.
 */
export function buildUnsolicitedNa(p: UnsolicitedNaParams): Buffer {
  const ip = validateUnicastIp(p.ip, { family: 6 }).address;
  const mac = parseUnicastMac(p.mac);
  return buildNeighborAdvert({
    ethSrc: mac,
    ethDst: ALL_NODES_MAC,
    srcIp: ip,
    dstIp: ALL_NODES_IP,
    target: ip,
    router: p.router === true,
    solicited: false,
    override: true,
    targetMac: mac,
  });
}

export interface ArpProbeParams {
  /** The address being probed for: the target IP. */
  ip: string;
  /** The prober's MAC (unicast): Ethernet source and sender MAC. */
  mac: MacInput;
}

/**
 * An ARP probe (RFC 5227 section 2.1.1) for `ip`: a broadcast request with sender IP
 * 0.0.0.0 (so that no host's cache learns anything from it), target MAC zero, target IP
 * `ip`. A host that holds `ip` answers it; one that probes for it too sends the same.
 */
export function buildArpProbe(p: ArpProbeParams): Buffer {
  const ip = validateUnicastIp(p.ip, { family: 4 }).address;
  const mac = parseUnicastMac(p.mac);
  return buildArp({
    op: ARPOP_REQUEST,
    ethDst: BROADCAST_MAC,
    senderMac: mac,
    senderIp: '0.0.0.0',
    targetMac: ZERO_MAC,
    targetIp: ip,
  });
}

// ---------------------------------------------------------------------------------------
// Decoding

export interface EthernetInfo {
  dst: string;
  src: string;
  /** The EtherType after any VLAN tags. */
  etherType: number;
  /** VLAN IDs of 802.1Q/802.1ad tags, outermost first; usually empty. */
  vlans: number[];
}

export interface ArpFrame {
  kind: 'arp';
  eth: EthernetInfo;
  op: number;
  senderMac: string;
  senderIp: string;
  targetMac: string;
  targetIp: string;
  /** Sender IP equals target IP. */
  gratuitous: boolean;
}

export interface NeighborAdvertFrame {
  kind: 'na';
  eth: EthernetInfo;
  srcIp: string;
  dstIp: string;
  hopLimit: number;
  code: number;
  router: boolean;
  solicited: boolean;
  override: boolean;
  target: string;
  /** The target link-layer address option, if present. */
  targetMac: string | undefined;
  /** Types of all options, in order. */
  optionTypes: number[];
  checksum: number;
  checksumValid: boolean;
}

/** A well-formed frame that is neither ARP for IPv4 nor an NA; `what` says what it is. */
export interface OtherFrame {
  kind: 'other';
  eth: EthernetInfo;
  what: string;
}

/** A frame too short or malformed to decode; `reason` says why. */
export interface InvalidFrame {
  kind: 'invalid';
  eth: EthernetInfo | undefined;
  reason: string;
}

export type DecodedFrame = ArpFrame | NeighborAdvertFrame | OtherFrame | InvalidFrame;

function hex16(n: number): string {
  return '0x' + n.toString(16).padStart(4, '0');
}

/** Ethernet header (with VLAN tags skipped) and the payload offset, or an InvalidFrame. */
function decodeEthernet(f: Uint8Array): { eth: EthernetInfo; offset: number } | InvalidFrame {
  if (f.length < ETH_HLEN) {
    return {
      kind: 'invalid',
      eth: undefined,
      reason: `${f.length} bytes is shorter than an Ethernet header`,
    };
  }
  const view = Buffer.from(f.buffer, f.byteOffset, f.byteLength);
  let offset = 12;
  let etherType = u16be(view, offset);
  const vlans: number[] = [];
  while (VLAN_TPIDS.has(etherType)) {
    if (offset + 6 > f.length) {
      return { kind: 'invalid', eth: undefined, reason: 'truncated VLAN tag' };
    }
    vlans.push(u16be(view, offset + 2) & 0x0fff);
    offset += 4;
    etherType = u16be(view, offset);
  }
  const eth = { dst: formatMac(f, 0), src: formatMac(f, 6), etherType, vlans };
  return { eth, offset: offset + 2 };
}

function decodeArp(f: Buffer, o: number, eth: EthernetInfo): DecodedFrame {
  if (f.length - o < 8) return { kind: 'invalid', eth, reason: 'truncated ARP header' };
  const htype = u16be(f, o);
  const ptype = u16be(f, o + 2);
  if (htype !== ARPHRD_ETHER || ptype !== ETH_P_IP || f[o + 4] !== 6 || f[o + 5] !== 4) {
    return { kind: 'other', eth, what: `ARP for hardware type ${htype}, protocol ${hex16(ptype)}` };
  }
  if (f.length - o < 28)
    return { kind: 'invalid', eth, reason: `ARP body of ${f.length - o} bytes is shorter than 28` };
  const senderIp = ipFromBytes(f, o + 14, 4);
  const targetIp = ipFromBytes(f, o + 24, 4);
  return {
    kind: 'arp',
    eth,
    op: u16be(f, o + 6),
    senderMac: formatMac(f, o + 8),
    senderIp,
    targetMac: formatMac(f, o + 18),
    targetIp,
    gratuitous: senderIp === targetIp,
  };
}

function decodeIpv6(f: Buffer, o: number, eth: EthernetInfo): DecodedFrame {
  if (f.length - o < 40) return { kind: 'invalid', eth, reason: 'truncated IPv6 header' };
  if (f[o]! >> 4 !== 6)
    return { kind: 'invalid', eth, reason: `IP version ${f[o]! >> 4} in an IPv6 frame` };
  const payloadLen = u16be(f, o + 4);
  const nextHeader = f[o + 6]!;
  if (f.length - o - 40 < payloadLen) {
    return {
      kind: 'invalid',
      eth,
      reason: `IPv6 payload length ${payloadLen} exceeds the ${f.length - o - 40} bytes present`,
    };
  }
  if (nextHeader !== IPPROTO_ICMPV6)
    return { kind: 'other', eth, what: `IPv6 next header ${nextHeader}` };
  const src = f.subarray(o + 8, o + 24);
  const dst = f.subarray(o + 24, o + 40);
  const icmp = f.subarray(o + 40, o + 40 + payloadLen);
  if (icmp.length < 4) return { kind: 'invalid', eth, reason: 'truncated ICMPv6 header' };
  if (icmp[0] !== ND_NEIGHBOR_ADVERT) return { kind: 'other', eth, what: `ICMPv6 type ${icmp[0]}` };
  if (icmp.length < 24)
    return { kind: 'invalid', eth, reason: `NA of ${icmp.length} bytes is shorter than 24` };
  return decodeNaBody(icmp, src, dst, f[o + 7]!, eth);
}

function decodeNaBody(
  icmp: Buffer,
  src: Buffer,
  dst: Buffer,
  hopLimit: number,
  eth: EthernetInfo,
): DecodedFrame {
  let targetMac: string | undefined;
  const optionTypes: number[] = [];
  for (let i = 24; i < icmp.length;) {
    if (icmp.length - i < 2) return { kind: 'invalid', eth, reason: 'truncated NA option' };
    const type = icmp[i]!;
    const len = icmp[i + 1]! * 8;
    if (len === 0) return { kind: 'invalid', eth, reason: `NA option type ${type} has length 0` };
    if (i + len > icmp.length)
      return { kind: 'invalid', eth, reason: `NA option type ${type} overruns the packet` };
    optionTypes.push(type);
    if (type === ND_OPT_TARGET_LINKADDR && targetMac === undefined && len >= 8)
      targetMac = formatMac(icmp, i + 2);
    i += len;
  }
  const checksum = u16be(icmp, 2);
  const flags = icmp[4]!;
  return {
    kind: 'na',
    eth,
    srcIp: ipFromBytes(src),
    dstIp: ipFromBytes(dst),
    hopLimit,
    code: icmp[1]!,
    router: (flags & NA_ROUTER) !== 0,
    solicited: (flags & NA_SOLICITED) !== 0,
    override: (flags & NA_OVERRIDE) !== 0,
    target: ipFromBytes(icmp, 8, 16),
    targetMac,
    optionTypes,
    checksum,
    // Summing a packet with its checksum in place gives 0xffff; the complement is 0.
    checksumValid: icmpv6Checksum(src, dst, icmp) === 0,
  };
}

/**
 * Decodes an Ethernet frame into ARP (IPv4 over Ethernet), ICMPv6 NA, 'other' or 'invalid'.
 * Never throws: truncated or garbage input gives `kind: 'invalid'` with a reason. Bytes after
 * the ARP body or the IPv6 payload (Ethernet padding) are ignored. IPv6 extension headers are
 * not followed (NDP messages carry none), so an NA behind one is 'other'.
 */
export function decodeFrame(frame: Uint8Array): DecodedFrame {
  const head = decodeEthernet(frame);
  if ('kind' in head) return head;
  const f = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  if (head.eth.etherType === ETH_P_ARP) return decodeArp(f, head.offset, head.eth);
  if (head.eth.etherType === ETH_P_IPV6) return decodeIpv6(f, head.offset, head.eth);
  return { kind: 'other', eth: head.eth, what: `EtherType ${hex16(head.eth.etherType)}` };
}
