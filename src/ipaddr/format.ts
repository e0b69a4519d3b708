// Bytes → canonical text, exactly as glibc inet_ntop (and so `ip -j`) prints it.

const DECIMAL: readonly string[] = Array.from({ length: 256 }, (_, i) => String(i));

/** Dotted decimal of the 4 bytes at `offset`. */
export function formatV4(b: Uint8Array, offset: number): string {
  return (
    DECIMAL[b[offset]!]! +
    '.' +
    DECIMAL[b[offset + 1]!]! +
    '.' +
    DECIMAL[b[offset + 2]!]! +
    '.' +
    DECIMAL[b[offset + 3]!]!
  );
}

/** Dotted decimal of a 32-bit number (signed or unsigned: its low 32 bits). */
export function formatV4Number(v: number): string {
  return (
    DECIMAL[(v >>> 24) & 255]! +
    '.' +
    DECIMAL[(v >>> 16) & 255]! +
    '.' +
    DECIMAL[(v >>> 8) & 255]! +
    '.' +
    DECIMAL[v & 255]!
  );
}

/**
 * RFC 5952 text of the 16 bytes at `offset`: lowercase hex without leading zeros, the longest
 * run of two or more zero groups (the first one on a tie) replaced by "::". Like glibc
 * inet_ntop, an address whose first 96 bits are zero and whose zero run is exactly the first
 * six groups (IPv4-compatible, "::1.2.3.4"), or whose first 80 bits are zero followed by ffff
 * (IPv4-mapped, "::ffff:1.2.3.4"), ends in dotted decimal.
 */
export function formatV6(b: Uint8Array, offset: number): string {
  // Find the longest zero run without allocating the groups.
  let bestStart = -1;
  let bestLen = 0;
  let runStart = -1;
  for (let g = 0; g < 8; g++) {
    const zero = b[offset + 2 * g] === 0 && b[offset + 2 * g + 1] === 0;
    if (zero) {
      if (runStart < 0) runStart = g;
      const len = g - runStart + 1;
      if (len > bestLen) {
        bestLen = len;
        bestStart = runStart;
      }
    } else {
      runStart = -1;
    }
  }
  if (bestLen < 2) bestStart = -1;
  if (bestStart === 0) {
    if (bestLen === 6) return '::' + formatV4(b, offset + 12);
    if (bestLen === 5 && b[offset + 10] === 0xff && b[offset + 11] === 0xff) {
      return '::ffff:' + formatV4(b, offset + 12);
    }
  }
  let s = '';
  for (let g = 0; g < 8; g++) {
    if (g === bestStart) {
      s += '::';
      g += bestLen - 1;
      continue;
    }
    if (g > 0 && g !== bestStart + bestLen) s += ':';
    s += ((b[offset + 2 * g]! << 8) | b[offset + 2 * g + 1]!).toString(16);
  }
  return s;
}
