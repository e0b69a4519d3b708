// Ethernet (EUI-48) MAC addresses: "aa:bb:cc:dd:ee:ff" ↔ 6 bytes; and link-layer addresses
// of any length (as netlink carries them: IFLA_ADDRESS, NDA_LLADDR) ↔ bytes.
import { InvalidArgumentError } from '../errors/index.js';
import { hexValue } from './parse.js';

const HEX_PAIR: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, '0'),
);

/** Parses into `out` at 0; true when `text` is exactly six ':'-separated hex pairs. */
function parseMacInto(text: string, out: Uint8Array): boolean {
  if (text.length !== 17) return false;
  for (let i = 0; i < 6; i++) {
    const hi = hexValue(text.charCodeAt(3 * i));
    const lo = hexValue(text.charCodeAt(3 * i + 1));
    if (hi < 0 || lo < 0) return false;
    if (i < 5 && text.charCodeAt(3 * i + 2) !== 58) return false;
    out[i] = (hi << 4) | lo;
  }
  return true;
}

function describeMacProblem(text: string): string {
  const q = JSON.stringify(text);
  if (text.trim() === '') return 'MAC address is empty; write six hex pairs like 02:00:5e:10:00:01';
  if (/^[0-9a-f]{2}([-.])(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}$/i.test(text)) {
    return `${q} uses '${text[2]}' between the pairs; write ${text.toLowerCase().replace(/[-.]/g, ':')}`;
  }
  return `${q} is not a MAC address; write six hex pairs separated by ':', like 02:00:5e:10:00:01`;
}

/** Six bytes of "aa:bb:cc:dd:ee:ff" (either case). Throws InvalidArgumentError otherwise. */
export function parseMac(text: string): Buffer {
  const out = Buffer.alloc(6);
  if (!parseMacInto(text, out)) throw new InvalidArgumentError(describeMacProblem(text));
  return out;
}

/** "aa:bb:cc:dd:ee:ff" (lowercase, as `ip -j` prints it) of the 6 bytes at `offset`. */
export function formatMac(bytes: Uint8Array, offset = 0): string {
  if (offset < 0 || offset + 6 > bytes.length) {
    throw new InvalidArgumentError(
      `a MAC address is 6 bytes; the buffer has ${bytes.length - offset} at offset ${offset}`,
    );
  }
  return formatLinkAddr(bytes, offset, 6);
}

/** True for 00:00:00:00:00:00. */
export function isZeroMac(mac: Uint8Array): boolean {
  return mac.length === 6 && (mac[0]! | mac[1]! | mac[2]! | mac[3]! | mac[4]! | mac[5]!) === 0;
}

/** True when the group bit (I/G, the low bit of the first byte) is set; broadcast included. */
export function isMulticastMac(mac: Uint8Array): boolean {
  return mac.length === 6 && (mac[0]! & 1) === 1;
}

/**
 * A MAC that can be a sender or neighbor address: six bytes, not all zero, not multicast or
 * broadcast. Accepts text or bytes; returns a fresh 6-byte Buffer. Throws InvalidArgumentError.
 */
export function parseUnicastMac(mac: string | Uint8Array): Buffer {
  let bytes: Buffer;
  if (typeof mac === 'string') {
    bytes = parseMac(mac);
  } else {
    if (mac.length !== 6) {
      throw new InvalidArgumentError(`a MAC address is 6 bytes; got ${mac.length}`);
    }
    bytes = Buffer.from(mac);
  }
  const text = formatMac(bytes);
  if (isZeroMac(bytes)) {
    throw new InvalidArgumentError(
      `${text} is the all-zero MAC address; give the unicast MAC of the interface`,
    );
  }
  if (isMulticastMac(bytes)) {
    const kind = text === 'ff:ff:ff:ff:ff:ff' ? 'the broadcast' : 'a multicast';
    throw new InvalidArgumentError(
      `${text} is ${kind} MAC address (the low bit of the first byte is set); give the unicast MAC of the interface`,
    );
  }
  return bytes;
}

/** The kernel's MAX_ADDR_LEN: no link-layer address is longer. */
export const MAX_ADDR_LEN = 32;

/** A 6-byte MAC given as two 24-bit numbers (bytes 0-2 and 3-5), as formatLinkAddr prints it. */
export function formatMacHalves(hi: number, lo: number): string {
  const h = HEX_PAIR;
  return `${h[(hi >>> 16) & 255]}:${h[(hi >>> 8) & 255]}:${h[hi & 255]}:${h[(lo >>> 16) & 255]}:${h[(lo >>> 8) & 255]}:${h[lo & 255]}`;
}

/**
 * "aa:bb:cc:dd:ee:ff" for the `length` bytes at `bytes[offset]`: a link-layer address of any
 * length ("" for none), as `ip -j` prints it. On the netlink dump path: no per-byte strings
 * for the common 6-byte case.
 */
export function formatLinkAddr(bytes: Uint8Array, offset: number, length: number): string {
  const b = bytes;
  const o = offset;
  if (length === 6) {
    return `${HEX_PAIR[b[o]!]}:${HEX_PAIR[b[o + 1]!]}:${HEX_PAIR[b[o + 2]!]}:${HEX_PAIR[b[o + 3]!]}:${HEX_PAIR[b[o + 4]!]}:${HEX_PAIR[b[o + 5]!]}`;
  }
  let s = '';
  for (let i = 0; i < length; i++) s += (i > 0 ? ':' : '') + HEX_PAIR[b[o + i]!]!;
  return s;
}

/**
 * Writes a colon-separated hex link-layer address ("aa:bb:cc:dd:ee:ff": 1 to MAX_ADDR_LEN
 * bytes, one or two hex digits each) into `buf` at `offset`; returns the byte count. The
 * caller leaves MAX_ADDR_LEN bytes of room. Throws InvalidArgumentError for anything else.
 */
export function writeLinkAddr(text: string, buf: Uint8Array, offset: number): number {
  let n = 0;
  let val = 0;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 58;
    if (c === 58) {
      if (digits === 0 || n === MAX_ADDR_LEN) break;
      buf[offset + n++] = val;
      val = 0;
      digits = 0;
      if (i === text.length) return n;
      continue;
    }
    const h = hexValue(c);
    if (h < 0 || digits === 2) break;
    val = (val << 4) | h;
    digits++;
  }
  throw new InvalidArgumentError(`not a link-layer address: ${JSON.stringify(text)}`);
}

const linkAddrScratch = new Uint8Array(MAX_ADDR_LEN);

/** The byte length of a link-layer address text, validating it (see writeLinkAddr). */
export function linkAddrLength(text: string): number {
  return writeLinkAddr(text, linkAddrScratch, 0);
}
