// IPv4 addresses as 32-bit numbers, for tables that key a million entries by address: a
// number is hashed and compared without the text, and costs no string (the way back:
// formatV4Number in format.ts).

/**
 * Canonical dotted-decimal text as a 32-bit number (0 to 2^32-1); -1 for anything else
 * (IPv6, or a spelling that is not canonical dotted decimal: leading zeros, missing parts).
 */
export function parseDottedQuad(s: string): number {
  const v = parseDottedQuadI32(s);
  return v === undefined ? -1 : v >>> 0;
}

/**
 * parseDottedQuad as a signed 32-bit number (undefined for anything else): to V8 always a
 * small integer, where an unsigned address from 128.0.0.0 on is a heap number, made per call.
 */
export function parseDottedQuadI32(s: string): number | undefined {
  let v = 0;
  let part = 0;
  let digits = 0;
  let octet = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || part === 3 || octet > 255) return undefined;
      v = (v << 8) | octet;
      part++;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57 && digits < 3 && !(digits > 0 && octet === 0)) {
      octet = octet * 10 + (c - 48);
      digits++;
    } else {
      return undefined;
    }
  }
  if (digits === 0 || part !== 3 || octet > 255) return undefined;
  return (v << 8) | octet;
}
