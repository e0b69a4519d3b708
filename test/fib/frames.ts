// Frames for bpf_prog_test_run: Ethernet + IPv4/IPv6 + UDP with correct checksums, and the
// odd ones (options, extension headers, VLAN, ARP, truncations).
import { parseMac } from '../../src/ipaddr/index.js';
import { ipToBytes } from '../../src/ipaddr/index.js';

export const ETH_P_IP = 0x0800;
export const ETH_P_IPV6 = 0x86dd;
export const ETH_P_ARP = 0x0806;
export const ETH_P_8021Q = 0x8100;
export const ETH_P_8021AD = 0x88a8;

export function eth(dst: string, src: string, type: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(14);
  parseMac(dst).copy(h, 0);
  parseMac(src).copy(h, 6);
  h.writeUInt16BE(type, 12);
  return Buffer.concat([h, payload]);
}

/** The Internet checksum (RFC 1071) of `b`, as stored (one's complement of the sum). */
export function inetChecksum(b: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < b.length; i += 2) sum += b.readUInt16BE(i);
  if (b.length % 2) sum += (b[b.length - 1] ?? 0) << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

export interface Ip4Options {
  src: string;
  dst: string;
  ttl?: number;
  proto?: number;
  /** IPv4 options bytes (padded to 4 by the caller). */
  options?: Buffer;
  /** Fragment field (flags + offset) as on the wire. */
  frag?: number;
  tos?: number;
  /** Overrides the total length field. */
  totLen?: number;
}

export function ipv4(o: Ip4Options, payload: Buffer): Buffer {
  const opts = o.options ?? Buffer.alloc(0);
  const hlen = 20 + opts.length;
  const h = Buffer.alloc(hlen);
  h[0] = 0x40 | (hlen / 4);
  h[1] = o.tos ?? 0;
  h.writeUInt16BE(o.totLen ?? hlen + payload.length, 2);
  h.writeUInt16BE(0x1234, 4);
  h.writeUInt16BE(o.frag ?? 0x4000, 6); // DF
  h[8] = o.ttl ?? 64;
  h[9] = o.proto ?? 17;
  ipToBytes(o.src).copy(h, 12);
  ipToBytes(o.dst).copy(h, 16);
  opts.copy(h, 20);
  h.writeUInt16BE(inetChecksum(h), 10);
  return Buffer.concat([h, payload]);
}

export function ipv6(
  o: { src: string; dst: string; hopLimit?: number; next?: number; payloadLen?: number },
  payload: Buffer,
): Buffer {
  const h = Buffer.alloc(40);
  h.writeUInt32BE(0x60000000, 0);
  h.writeUInt16BE(o.payloadLen ?? payload.length, 4);
  h[6] = o.next ?? 17;
  h[7] = o.hopLimit ?? 64;
  ipToBytes(o.src).copy(h, 8);
  ipToBytes(o.dst).copy(h, 24);
  return Buffer.concat([h, payload]);
}

/** A UDP header and `size` bytes of payload (checksum 0: not checked by anyone here). */
export function udp(sport: number, dport: number, size = 18): Buffer {
  const b = Buffer.alloc(8 + size, 0xab);
  b.writeUInt16BE(sport, 0);
  b.writeUInt16BE(dport, 2);
  b.writeUInt16BE(8 + size, 4);
  b.writeUInt16BE(0, 6);
  return b;
}

/** An IPv6 extension header (routing/dstopts style: 8 bytes, hdrlen 0). */
export function ext6(next: number): Buffer {
  const b = Buffer.alloc(8);
  b[0] = next;
  b[1] = 0;
  return b;
}

/** An ARP request "who has `target` tell `sender`". */
export function arpRequest(senderMac: string, sender: string, target: string): Buffer {
  const b = Buffer.alloc(28);
  b.writeUInt16BE(1, 0);
  b.writeUInt16BE(ETH_P_IP, 2);
  b[4] = 6;
  b[5] = 4;
  b.writeUInt16BE(1, 6);
  parseMac(senderMac).copy(b, 8);
  ipToBytes(sender).copy(b, 14);
  ipToBytes(target).copy(b, 24);
  return b;
}

/** An 802.1Q (or 802.1ad) tag followed by `type`. */
export function vlan(id: number, type: number, payload: Buffer): Buffer {
  const t = Buffer.alloc(4);
  t.writeUInt16BE(id, 0);
  t.writeUInt16BE(type, 2);
  return Buffer.concat([t, payload]);
}
