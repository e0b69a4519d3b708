// Hot-path text → bytes parsing for IPv4 and IPv6. No regular expressions, no allocation on
// success: the netlink codec and the neighbor subsystem run this for 100,000s of addresses.
// A failed parse returns 0; `diagnose.ts` then explains the problem (slow, error path only).

/** 4 for IPv4, 6 for IPv6 (the values `net.isIP` returns). */
export type IpFamily = 4 | 6;

const CH_0 = 48;
const CH_9 = 57;
const CH_DOT = 46;
const CH_COLON = 58;

/** Value of a hex digit character code, or -1. */
export function hexValue(c: number): number {
  if (c >= CH_0 && c <= CH_9) return c - CH_0;
  const lower = c | 0x20;
  if (lower >= 97 && lower <= 102) return lower - 87;
  return -1;
}

/**
 * Parses `text` (any valid spelling, IPv4-mapped included) into `out` at `offset`: 4 bytes
 * for IPv4, 16 for IPv6. Returns the family, or 0 when `text` is not a valid address; on 0
 * the bytes at `out[offset..]` are unspecified.
 */
export function parseIpInto(text: string, out: Uint8Array, offset: number): IpFamily | 0 {
  if (text.indexOf(':') >= 0) return parseV6(text, out, offset) ? 6 : 0;
  return parseV4(text, 0, text.length, out, offset) ? 4 : 0;
}

/**
 * Dotted-decimal IPv4 in text[start, end): exactly four octets of 1–3 digits, value ≤ 255,
 * no leading zeros (inet_aton would read "010" as octal 8; we refuse to guess).
 */
export function parseV4(
  text: string,
  start: number,
  end: number,
  out: Uint8Array,
  offset: number,
): boolean {
  let octet = 0;
  let value = 0;
  let digits = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= CH_0 && c <= CH_9) {
      if (digits === 1 && value === 0) return false; // leading zero
      value = value * 10 + (c - CH_0);
      if (value > 255) return false;
      digits++;
    } else if (c === CH_DOT) {
      if (digits === 0 || octet === 3) return false;
      out[offset + octet++] = value;
      value = 0;
      digits = 0;
    } else {
      return false;
    }
  }
  if (digits === 0 || octet !== 3) return false;
  out[offset + 3] = value;
  return true;
}

/**
 * RFC 4291 section 2.2 text: up to 8 groups of 1–4 hex digits, at most one "::" standing for
 * one or more zero groups, optionally a dotted IPv4 tail for the last 32 bits.
 */
export function parseV6(text: string, out: Uint8Array, offset: number): boolean {
  const n = text.length;
  let groups = 0; // 16-bit groups written so far
  let gap = -1; // group index where "::" stands, or -1
  let i = 0;
  if (n >= 2 && text.charCodeAt(0) === CH_COLON) {
    if (text.charCodeAt(1) !== CH_COLON) return false; // a single leading ':'
    gap = 0;
    i = 2;
  }
  while (i < n) {
    const groupStart = i;
    let value = 0;
    let digits = 0;
    let h: number;
    while (i < n && (h = hexValue(text.charCodeAt(i))) >= 0) {
      value = (value << 4) | h;
      digits++;
      i++;
    }
    if (i < n && text.charCodeAt(i) === CH_DOT) {
      // Dotted IPv4 tail: it must end the text and fit in the remaining groups.
      if (groups > 6) return false;
      if (!parseV4(text, groupStart, n, out, offset + groups * 2)) return false;
      groups += 2;
      break;
    }
    if (digits === 0 || digits > 4 || groups === 8) return false;
    out[offset + groups * 2] = value >> 8;
    out[offset + groups * 2 + 1] = value & 0xff;
    groups++;
    if (i === n) break;
    if (text.charCodeAt(i) !== CH_COLON) return false;
    i++;
    if (i === n) return false; // a single trailing ':'
    if (text.charCodeAt(i) === CH_COLON) {
      if (gap >= 0) return false; // a second "::"
      gap = groups;
      i++;
    }
  }
  if (gap < 0) return groups === 8;
  if (groups > 7) return false; // "::" must stand for at least one group
  // Move the groups after the gap to the end and zero the gap.
  const tail = (groups - gap) * 2;
  const dst = offset + 16 - tail;
  out.copyWithin(dst, offset + gap * 2, offset + groups * 2);
  out.fill(0, offset + gap * 2, dst);
  return true;
}

/** True for ::ffff:0:0/96 in 16 bytes at `offset`. */
export function isMappedBytes(b: Uint8Array, offset: number): boolean {
  for (let i = 0; i < 10; i++) if (b[offset + i] !== 0) return false;
  return b[offset + 10] === 0xff && b[offset + 11] === 0xff;
}
