// Packet builders of the differential corpus, on top of ../frames.ts: TCP, ICMP and ICMPv6
// with correct checksums, IPv4 options, IPv6 extension headers, ESP/AH, GRE/IPIP, and the
// edits that make a frame wrong on purpose (checksum, IHL, lengths, padding, truncation).
import { ipToBytes } from '../../../src/ipaddr/index.js';
import { inetChecksum } from '../frames.js';

export { ETH_P_8021AD, ETH_P_8021Q, ETH_P_ARP, ETH_P_IP, ETH_P_IPV6 } from '../frames.js';
export { arpRequest, eth, inetChecksum, ipv4, ipv6, udp, vlan } from '../frames.js';

export const PROTO = {
  HOPOPTS: 0,
  ICMP: 1,
  IPIP: 4,
  TCP: 6,
  UDP: 17,
  IPV6: 41,
  ROUTING: 43,
  FRAGMENT: 44,
  GRE: 47,
  ESP: 50,
  AH: 51,
  ICMPV6: 58,
  NONE: 59,
  DSTOPTS: 60,
  SCTP: 132,
  UDPLITE: 136,
} as const;

/** A 20-byte TCP header (checksum 0: no router checks it) and `size` payload bytes. */
export function tcp(sport: number, dport: number, size = 12, flags = 0x18): Buffer {
  const b = Buffer.alloc(20 + size, 0xcd);
  b.writeUInt16BE(sport, 0);
  b.writeUInt16BE(dport, 2);
  b.writeUInt32BE(0x01020304, 4);
  b.writeUInt32BE(0, 8);
  b[12] = 5 << 4;
  b[13] = flags;
  b.writeUInt16BE(512, 14);
  b.writeUInt16BE(0, 16);
  b.writeUInt16BE(0, 18);
  return b;
}

/** Four bytes of "ports" (SCTP, DCCP, UDP-Lite...) and a tail. */
export function ports(sport: number, dport: number, size = 12): Buffer {
  const b = Buffer.alloc(4 + size, 0x5c);
  b.writeUInt16BE(sport, 0);
  b.writeUInt16BE(dport, 2);
  return b;
}

/** An ICMP message with its checksum. */
export function icmp4(type: number, code: number, body: Buffer, rest = 0): Buffer {
  const h = Buffer.alloc(8);
  h[0] = type;
  h[1] = code;
  h.writeUInt32BE(rest >>> 0, 4);
  const b = Buffer.concat([h, body]);
  b.writeUInt16BE(inetChecksum(b), 2);
  return b;
}

/**
 * An ICMPv6 message with its checksum (pseudo header of src and dst): type, code, the 4
 * bytes after the checksum (MTU, pointer, identifier and sequence...) and the body.
 */
export function icmp6(
  src: string,
  dst: string,
  type: number,
  code: number,
  body: Buffer,
  rest = 0,
): Buffer {
  const b = Buffer.alloc(8 + body.length);
  b[0] = type;
  b[1] = code;
  b.writeUInt32BE(rest >>> 0, 4);
  body.copy(b, 8);
  const pseudo = Buffer.alloc(40);
  ipToBytes(src).copy(pseudo, 0);
  ipToBytes(dst).copy(pseudo, 16);
  pseudo.writeUInt32BE(b.length, 32);
  pseudo[39] = PROTO.ICMPV6;
  b.writeUInt16BE(inetChecksum(Buffer.concat([pseudo, b])), 2);
  return b;
}

/** An IPv6 extension header in the routing/destination-options format, `len8` units of 8. */
export function ext(next: number, len8 = 1, fill = 0): Buffer {
  const b = Buffer.alloc(len8 * 8, fill);
  b[0] = next;
  b[1] = len8 - 1;
  if (fill === 0 && len8 * 8 > 2) {
    // PadN over the rest: a valid option area
    b[2] = 1;
    b[3] = len8 * 8 - 4;
  }
  return b;
}

/** A routing header of `type` with `segleft` segments left and one address. */
export function routing(next: number, type: number, segleft: number): Buffer {
  const b = Buffer.alloc(24);
  b[0] = next;
  b[1] = 2;
  b[2] = type;
  b[3] = segleft;
  ipToBytes('fd61:2::99').copy(b, 8);
  return b;
}

/** A fragment header: offset in 8-byte units, more fragments flag, identification. */
export function frag6(next: number, offset: number, more: boolean, id = 0x1234): Buffer {
  const b = Buffer.alloc(8);
  b[0] = next;
  b.writeUInt16BE((offset << 3) | (more ? 1 : 0), 2);
  b.writeUInt32BE(id, 4);
  return b;
}

/** An AH header (12 bytes of ICV): next header, SPI, sequence. */
export function ah(next: number, spi: number): Buffer {
  const b = Buffer.alloc(24, 0x77);
  b[0] = next;
  b[1] = 24 / 4 - 2;
  b.writeUInt16BE(0, 2);
  b.writeUInt32BE(spi >>> 0, 4);
  b.writeUInt32BE(1, 8);
  return b;
}

/** An ESP packet: SPI, sequence and opaque bytes. */
export function esp(spi: number, size = 24): Buffer {
  const b = Buffer.alloc(8 + size, 0x99);
  b.writeUInt32BE(spi >>> 0, 0);
  b.writeUInt32BE(7, 4);
  return b;
}

/** A GRE header (no options) carrying `proto` (0x0800 IPv4, 0x86dd IPv6). */
export function gre(proto: number, inner: Buffer): Buffer {
  const h = Buffer.alloc(4);
  h.writeUInt16BE(proto, 2);
  return Buffer.concat([h, inner]);
}

// --- IPv4 options (the caller pads to a multiple of 4) ------------------------------------
export const OPT = {
  eol: () => Buffer.from([0]),
  nop: () => Buffer.from([1]),
  /** Record route with room for `slots` addresses. */
  rr: (slots = 2, len?: number) => {
    const b = Buffer.alloc(3 + slots * 4);
    b[0] = 7;
    b[1] = len ?? b.length;
    b[2] = 4;
    return b;
  },
  /** Timestamp (flag 0: timestamps only) with room for `slots`. */
  ts: (slots = 2, len?: number) => {
    const b = Buffer.alloc(4 + slots * 4);
    b[0] = 68;
    b[1] = len ?? b.length;
    b[2] = 5;
    b[3] = 0;
    return b;
  },
  /** Loose (131) or strict (137) source route through `hop`. */
  srr: (kind: 131 | 137, hop: string) => {
    const b = Buffer.alloc(7);
    b[0] = kind;
    b[1] = 7;
    b[2] = 4;
    ipToBytes(hop).copy(b, 3);
    return b;
  },
  ra: () => Buffer.from([148, 4, 0, 0]),
  /** An option kind the kernel does not process, with a valid length. */
  other: (kind: number, len = 4) => {
    const b = Buffer.alloc(len, 0x11);
    b[0] = kind;
    b[1] = len;
    return b;
  },
};

/** Options padded with EOL to a multiple of 4 bytes. */
export function options(...parts: Buffer[]): Buffer {
  const b = Buffer.concat(parts);
  return Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
}

// --- edits on a whole Ethernet frame (IPv4/IPv6 header at offset 14) ----------------------
/** Sets the IPv4 header checksum field to `v`. */
export function setCsum4(frame: Buffer, v: number): Buffer {
  const f = Buffer.from(frame);
  f.writeUInt16BE(v, 14 + 10);
  return f;
}

/** Recomputes the IPv4 header checksum after an edit. */
export function fixCsum4(frame: Buffer): Buffer {
  const f = Buffer.from(frame);
  const ihl = (f[14]! & 0xf) * 4;
  f.writeUInt16BE(0, 24);
  f.writeUInt16BE(inetChecksum(f.subarray(14, 14 + Math.max(20, ihl))), 24);
  return f;
}

/** Appends `n` bytes after the packet (Ethernet padding or garbage). */
export function pad(frame: Buffer, n: number, fill = 0): Buffer {
  return Buffer.concat([frame, Buffer.alloc(n, fill)]);
}

/** The first `n` bytes of the frame. */
export function cut(frame: Buffer, n: number): Buffer {
  return Buffer.from(frame.subarray(0, n));
}
