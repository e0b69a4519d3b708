// 16- and 32-bit integer reads and writes of a Buffer, for the codecs that see every netlink
// message and packet. Node's own (buf.readUInt32LE and the rest) validate their arguments
// through a wrapper that allocates an array per call, which only TurboFan's inlining removes;
// `fibkeeper run` optimizes with Maglev alone (src/cli/node-flags.ts), and there 20,000,000
// reads took 18x as long and ran 2,442 scavenges where these run none (docs/neighbor.md,
// "The fifth pass"). Like Node's, they throw a RangeError for an offset outside the buffer
// or (writes) a value outside the type; unlike Node's, they allocate nothing.

function outside(buf: Uint8Array, off: number, size: number): RangeError {
  return new RangeError(`offset ${off} (${size} bytes) is outside a buffer of ${buf.length} bytes`);
}

function check(buf: Uint8Array, off: number, size: number): void {
  // Also false for a non-integer or NaN offset.
  if (!(off >= 0 && off + size <= buf.length && (off | 0) === off)) throw outside(buf, off, size);
}

function checkValue(v: number, min: number, max: number): void {
  if (!(v >= min && v <= max)) throw new RangeError(`value ${v} is outside [${min}, ${max}]`);
}

export function u16le(buf: Uint8Array, off: number): number {
  check(buf, off, 2);
  return buf[off]! | (buf[off + 1]! << 8);
}

export function u16be(buf: Uint8Array, off: number): number {
  check(buf, off, 2);
  return (buf[off]! << 8) | buf[off + 1]!;
}

export function i32le(buf: Uint8Array, off: number): number {
  check(buf, off, 4);
  return buf[off]! | (buf[off + 1]! << 8) | (buf[off + 2]! << 16) | (buf[off + 3]! << 24);
}

export function u32le(buf: Uint8Array, off: number): number {
  return i32le(buf, off) >>> 0;
}

export function i32be(buf: Uint8Array, off: number): number {
  check(buf, off, 4);
  return (buf[off]! << 24) | (buf[off + 1]! << 16) | (buf[off + 2]! << 8) | buf[off + 3]!;
}

export function u32be(buf: Uint8Array, off: number): number {
  return i32be(buf, off) >>> 0;
}

/** Writes `v` (0 to 65535) at `off`; returns the offset after it. */
export function w16le(buf: Uint8Array, v: number, off: number): number {
  check(buf, off, 2);
  checkValue(v, 0, 0xffff);
  buf[off] = v;
  buf[off + 1] = v >>> 8;
  return off + 2;
}

export function w16be(buf: Uint8Array, v: number, off: number): number {
  check(buf, off, 2);
  checkValue(v, 0, 0xffff);
  buf[off] = v >>> 8;
  buf[off + 1] = v;
  return off + 2;
}

function put32le(buf: Uint8Array, v: number, off: number): number {
  buf[off] = v;
  buf[off + 1] = v >>> 8;
  buf[off + 2] = v >>> 16;
  buf[off + 3] = v >>> 24;
  return off + 4;
}

function put32be(buf: Uint8Array, v: number, off: number): number {
  buf[off] = v >>> 24;
  buf[off + 1] = v >>> 16;
  buf[off + 2] = v >>> 8;
  buf[off + 3] = v;
  return off + 4;
}

/** Writes `v` (0 to 2^32 - 1) at `off`; returns the offset after it. */
export function w32le(buf: Uint8Array, v: number, off: number): number {
  check(buf, off, 4);
  checkValue(v, 0, 0xffffffff);
  return put32le(buf, v, off);
}

/** Writes `v` (-2^31 to 2^31 - 1) at `off`; returns the offset after it. */
export function wi32le(buf: Uint8Array, v: number, off: number): number {
  check(buf, off, 4);
  checkValue(v, -0x80000000, 0x7fffffff);
  return put32le(buf, v, off);
}

export function w32be(buf: Uint8Array, v: number, off: number): number {
  check(buf, off, 4);
  checkValue(v, 0, 0xffffffff);
  return put32be(buf, v, off);
}
