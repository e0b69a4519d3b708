// Fast, allocation-free conversion of IP and link-layer addresses between their canonical
// strings and wire bytes. This is on the bulk path (100,000 neighbor entries), so it
// writes straight into the caller's Buffer and parses by char code.
//
// Canonical strings are what `ip -j` prints (glibc inet_ntop): IPv4 dotted decimal; IPv6
// lowercase, the longest run of two or more zero groups compressed (the first such run on
// ties), IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) in dotted form.
import { InvalidArgumentError } from '../errors/index.js';
import { AF_INET, AF_INET6 } from './constants.js';

const groups = new Uint16Array(8);

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** Parses dotted-quad text in s[from, to) into `buf` at `off`; false when malformed. */
function parseV4(s: string, from: number, to: number, buf: Uint8Array, off: number): boolean {
  let part = 0;
  let val = 0;
  let digits = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || part === 3) return false;
      buf[off + part++] = val;
      val = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && val === 0) return false; // leading zero, as inet_pton
      val = val * 10 + (c - 48);
      if (val > 255) return false;
      digits++;
    } else {
      return false;
    }
  }
  if (digits === 0 || part !== 3) return false;
  buf[off + 3] = val;
  return true;
}

/** Parses IPv6 text into `buf` at `off` (16 bytes); false when malformed. */
function parseV6(s: string, buf: Uint8Array, off: number): boolean {
  const n = s.length;
  let count = 0; // groups written
  let gap = -1; // group index where "::" stands
  let i = 0;
  if (n < 2) return false;
  if (s.charCodeAt(0) === 58) {
    if (s.charCodeAt(1) !== 58) return false;
    gap = 0;
    i = 2;
    if (n === 2) {
      buf.fill(0, off, off + 16);
      return true;
    }
  }
  while (i < n) {
    if (count === 8) return false;
    let val = 0;
    let digits = 0;
    const start = i;
    while (i < n && digits <= 4) {
      const h = hexVal(s.charCodeAt(i));
      if (h < 0) break;
      val = (val << 4) | h;
      digits++;
      i++;
    }
    if (i < n && s.charCodeAt(i) === 46) {
      // Trailing dotted IPv4 takes the last two groups.
      if (count > 6 || !parseV4(s, start, n, buf, off + 12)) return false;
      groups[count++] = (buf[off + 12]! << 8) | buf[off + 13]!;
      groups[count++] = (buf[off + 14]! << 8) | buf[off + 15]!;
      i = n;
      break;
    }
    if (digits === 0 || digits > 4) return false;
    groups[count++] = val;
    if (i === n) break;
    if (s.charCodeAt(i) !== 58) return false;
    i++;
    if (i < n && s.charCodeAt(i) === 58) {
      if (gap >= 0) return false;
      gap = count;
      i++;
      if (i === n) break;
    } else if (i === n) {
      return false; // trailing single colon
    }
  }
  if (gap < 0 ? count !== 8 : count > 7) return false;
  const zeros = 8 - count;
  for (let g = 0, src = 0; g < 8; g++) {
    const v = gap >= 0 && g >= gap && g < gap + zeros ? 0 : groups[src++]!;
    buf[off + 2 * g] = v >> 8;
    buf[off + 2 * g + 1] = v & 0xff;
  }
  return true;
}

/**
 * Writes the IP address `ip` into `buf` at `off` and returns its family (AF_INET: 4
 * bytes, AF_INET6: 16 bytes). Throws InvalidArgumentError for anything else.
 */
export function writeIp(buf: Uint8Array, off: number, ip: string): number {
  if (ip.indexOf(':') >= 0) {
    if (parseV6(ip, buf, off)) return AF_INET6;
  } else if (parseV4(ip, 0, ip.length, buf, off)) {
    return AF_INET;
  }
  throw new InvalidArgumentError(`not an IP address: ${JSON.stringify(ip)}`);
}

/** The family of an IP string (AF_INET or AF_INET6), without validating it fully. */
export function ipFamily(ip: string): number {
  return ip.indexOf(':') >= 0 ? AF_INET6 : AF_INET;
}

/** The byte length of an address of `family` (4 or 16). */
export function ipLength(family: number): number {
  return family === AF_INET6 ? 16 : 4;
}

const scratch = new Uint8Array(16);

/** Parses an IP string into a fresh 4- or 16-byte Buffer. */
export function ipToBytes(ip: string): Buffer {
  const family = writeIp(scratch, 0, ip);
  return Buffer.from(scratch.subarray(0, ipLength(family)));
}

/** Canonical text of the IP address of `len` (4 or 16) bytes at `buf[off]`. */
export function readIp(buf: Uint8Array, off: number, len: number): string {
  if (len === 4) return `${buf[off]}.${buf[off + 1]}.${buf[off + 2]}.${buf[off + 3]}`;
  return formatV6(buf, off);
}

function formatV6(buf: Uint8Array, off: number): string {
  let bestBase = -1;
  let bestLen = 0;
  let curBase = -1;
  for (let g = 0; g < 8; g++) {
    const v = (buf[off + 2 * g]! << 8) | buf[off + 2 * g + 1]!;
    groups[g] = v;
    if (v === 0) {
      if (curBase < 0) curBase = g;
      if (g - curBase + 1 > bestLen) {
        bestLen = g - curBase + 1;
        bestBase = curBase;
      }
    } else {
      curBase = -1;
    }
  }
  if (bestLen < 2) bestBase = -1;
  // IPv4-compatible (::a.b.c.d, best run of exactly 6) and IPv4-mapped (::ffff:a.b.c.d).
  const embedV4 = bestBase === 0 && (bestLen === 6 || (bestLen === 5 && groups[5] === 0xffff));
  let out = '';
  for (let g = 0; g < 8; g++) {
    if (g === bestBase) {
      out += g === 0 ? '::' : ':';
      g += bestLen - 1;
      continue;
    }
    if (embedV4 && g === 6) {
      out += `${buf[off + 12]}.${buf[off + 13]}.${buf[off + 14]}.${buf[off + 15]}`;
      break;
    }
    out += groups[g]!.toString(16);
    if (g < 7) out += ':';
  }
  return out;
}

/** Canonical text of an IP held in a 4- or 16-byte buffer. */
export function bytesToIp(bytes: Uint8Array): string {
  if (bytes.length !== 4 && bytes.length !== 16) {
    throw new InvalidArgumentError(`an IP address has 4 or 16 bytes, not ${bytes.length}`);
  }
  return readIp(bytes, 0, bytes.length);
}

const HEX = '0123456789abcdef';

/** The kernel's MAX_ADDR_LEN: no link-layer address is longer. */
export const MAX_ADDR_LEN = 32;

const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** "aa:bb:cc:dd:ee:ff" for the `len` bytes at `buf[off]` (any length; "" for none). */
export function readMac(buf: Uint8Array, off: number, len: number): string {
  if (len === 6) {
    // The common case in one template: no intermediate string per byte.
    return `${HEX2[buf[off]!]}:${HEX2[buf[off + 1]!]}:${HEX2[buf[off + 2]!]}:${HEX2[buf[off + 3]!]}:${HEX2[buf[off + 4]!]}:${HEX2[buf[off + 5]!]}`;
  }
  let out = '';
  for (let i = 0; i < len; i++) {
    const b = buf[off + i]!;
    if (i > 0) out += ':';
    out += HEX[b >> 4]! + HEX[b & 15]!;
  }
  return out;
}

/**
 * Writes a colon-separated hex link-layer address ("aa:bb:cc:dd:ee:ff", any number of
 * bytes, one or two hex digits each) into `buf` at `off`; returns the byte count.
 */
export function writeMac(buf: Uint8Array, off: number, mac: string): number {
  let n = 0;
  let val = 0;
  let digits = 0;
  for (let i = 0; i <= mac.length; i++) {
    const c = i < mac.length ? mac.charCodeAt(i) : 58;
    if (c === 58) {
      if (digits === 0 || n === MAX_ADDR_LEN) break;
      buf[off + n++] = val;
      val = 0;
      digits = 0;
      if (i === mac.length) return n;
      continue;
    }
    const h = hexVal(c);
    if (h < 0 || digits === 2) break;
    val = (val << 4) | h;
    digits++;
  }
  throw new InvalidArgumentError(`not a link-layer address: ${JSON.stringify(mac)}`);
}

/** The byte length of a link-layer address string, validating it. */
export function macLength(mac: string): number {
  return writeMac(macScratch, 0, mac);
}
const macScratch = new Uint8Array(MAX_ADDR_LEN);
