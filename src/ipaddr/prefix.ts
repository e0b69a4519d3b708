// IP prefixes ("10.0.0.0/8", "2001:db8::/32").
import { InvalidArgumentError } from '../errors/index.js';
import { describeIpProblem } from './diagnose.js';
import { formatV4, formatV6 } from './format.js';
import { parseIpInto, type IpFamily } from './parse.js';

export interface IpPrefix {
  readonly family: IpFamily;
  /** Canonical text of the network address (host bits zero). */
  readonly address: string;
  /** Prefix length: 0–32 for IPv4, 0–128 for IPv6. */
  readonly length: number;
  /** The network address in network byte order (4 or 16 bytes), host bits zero. */
  readonly bytes: Buffer;
  /** Canonical text, "10.0.0.0/8": the key for maps and tables. */
  readonly text: string;
}

export interface ParsePrefixOptions {
  /**
   * What to do when the address has bits set beyond the prefix length ("10.0.0.1/8"):
   * 'reject' (default, for user input: the error names the normalised prefix, 10.0.0.0/8)
   * or 'clear' (zero them, as the kernel does for route destinations).
   */
  hostBits?: 'reject' | 'clear';
}

const scratch = new Uint8Array(16);

/** Zeroes the bits of `b[0, n)` beyond the first `length`; returns true if any were set. */
function clearHostBits(b: Uint8Array, n: number, length: number): boolean {
  let had = 0;
  const full = length >> 3;
  const rem = length & 7;
  for (let i = full; i < n; i++) {
    const keep = i === full && rem !== 0 ? (0xff << (8 - rem)) & 0xff : 0;
    had |= b[i]! & ~keep;
    b[i] = b[i]! & keep;
  }
  return had !== 0;
}

function makePrefix(family: IpFamily, network: Uint8Array, length: number): IpPrefix {
  const address = family === 4 ? formatV4(network, 0) : formatV6(network, 0);
  return { family, address, length, bytes: Buffer.from(network), text: `${address}/${length}` };
}

/** Parses the decimal prefix length; -1 when it is not 0–max without leading zeros. */
function parseLength(text: string, max: number): number {
  if (text.length === 0 || text.length > 3 || (text.length > 1 && text.startsWith('0'))) return -1;
  let v = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v <= max ? v : -1;
}

/**
 * Parses "ADDRESS/LENGTH". The address may be any valid spelling (IPv4-mapped included, as
 * routes to ::ffff:0:0/96 exist); the result is canonical. Host bits: see ParsePrefixOptions.
 * Throws InvalidArgumentError naming the problem and the fix.
 */
export function parsePrefix(text: string, options?: ParsePrefixOptions): IpPrefix {
  const q = JSON.stringify(text);
  const slash = text.indexOf('/');
  if (slash < 0) {
    const family = parseIpInto(text, scratch, 0);
    if (family === 0) throw new InvalidArgumentError(describeIpProblem(text));
    const single = `${family === 4 ? formatV4(scratch, 0) : formatV6(scratch, 0)}/${family === 4 ? 32 : 128}`;
    throw new InvalidArgumentError(
      `${q} has no prefix length; write ${single} for the single address, or a network such as ${family === 4 ? '10.0.0.0/8' : '2001:db8::/32'}`,
    );
  }
  const addrText = text.slice(0, slash);
  const family = parseIpInto(addrText, scratch, 0);
  if (family === 0) {
    throw new InvalidArgumentError(`${q} is not a valid prefix: ${describeIpProblem(addrText)}`);
  }
  const max = family === 4 ? 32 : 128;
  const lenText = text.slice(slash + 1);
  const length = parseLength(lenText, max);
  if (length < 0) {
    throw new InvalidArgumentError(
      `${q} has the prefix length ${JSON.stringify(lenText)}; an ${family === 4 ? 'IPv4' : 'IPv6'} prefix length is a decimal number from 0 to ${max} without leading zeros`,
    );
  }
  const n = family === 4 ? 4 : 16;
  const network = scratch.slice(0, n);
  if (clearHostBits(network, n, length) && options?.hostBits !== 'clear') {
    const normal = makePrefix(family, network, length);
    throw new InvalidArgumentError(
      `${q} has host bits set beyond /${length}; write the network ${normal.text} (or ${family === 4 ? formatV4(scratch, 0) : formatV6(scratch, 0)}/${max} for the single address)`,
    );
  }
  return makePrefix(family, network, length);
}

/**
 * A prefix from `length` and the network bytes in `bytes[offset, offset + 4|16)` (the family
 * is given by `family`), e.g. a route's RTA_DST and rtm_dst_len. Host bits are cleared, never
 * an error: the kernel is the authority for its own routes.
 */
export function prefixFromBytes(
  family: IpFamily,
  bytes: Uint8Array,
  length: number,
  offset = 0,
): IpPrefix {
  const n = family === 4 ? 4 : 16;
  const max = n * 8;
  if (!Number.isInteger(length) || length < 0 || length > max) {
    throw new InvalidArgumentError(`prefix length ${length} is not in 0–${max}`);
  }
  if (offset < 0 || offset + n > bytes.length) {
    throw new InvalidArgumentError(
      `an IPv${family} prefix needs ${n} bytes at offset ${offset}; the buffer has ${bytes.length}`,
    );
  }
  const network = Uint8Array.prototype.slice.call(bytes, offset, offset + n);
  clearHostBits(network, n, length);
  return makePrefix(family, network, length);
}

/** The prefix that holds exactly `ip`: "/32" or "/128". */
export function hostPrefix(ip: string): IpPrefix {
  const family = parseIpInto(ip, scratch, 0);
  if (family === 0) throw new InvalidArgumentError(describeIpProblem(ip));
  return makePrefix(family, scratch.slice(0, family === 4 ? 4 : 16), family === 4 ? 32 : 128);
}

/** True when the first `length` bits of a[ao..] and b[bo..] are equal. */
function samePrefixBits(
  a: Uint8Array,
  ao: number,
  b: Uint8Array,
  bo: number,
  length: number,
): boolean {
  const full = length >> 3;
  for (let i = 0; i < full; i++) if (a[ao + i] !== b[bo + i]) return false;
  const rem = length & 7;
  if (rem === 0) return true;
  const mask = (0xff << (8 - rem)) & 0xff;
  return (a[ao + full]! & mask) === (b[bo + full]! & mask);
}

/**
 * True when `ip` (text in any valid spelling, or 4/16 bytes) lies inside `prefix`. An address
 * of the other family is never inside. Throws InvalidArgumentError for invalid text.
 */
export function prefixContains(prefix: IpPrefix, ip: string | Uint8Array): boolean {
  let bytes: Uint8Array;
  if (typeof ip === 'string') {
    const family = parseIpInto(ip, scratch, 0);
    if (family === 0) throw new InvalidArgumentError(describeIpProblem(ip));
    if (family !== prefix.family) return false;
    bytes = scratch;
  } else {
    if (ip.length !== prefix.bytes.length) return false;
    bytes = ip;
  }
  return samePrefixBits(prefix.bytes, 0, bytes, 0, prefix.length);
}

/** True when every address of `inner` is inside `outer` (a prefix covers itself). */
export function prefixCovers(outer: IpPrefix, inner: IpPrefix): boolean {
  return (
    outer.family === inner.family &&
    outer.length <= inner.length &&
    samePrefixBits(outer.bytes, 0, inner.bytes, 0, outer.length)
  );
}
