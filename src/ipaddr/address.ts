// Single IP addresses: text ↔ bytes ↔ canonical text.
import { InvalidArgumentError } from '../errors/index.js';
import { describeIpProblem } from './diagnose.js';
import { formatV4, formatV6 } from './format.js';
import { isMappedBytes, parseIpInto, parseV4, parseV6, type IpFamily } from './parse.js';

export type { IpFamily };

/** Linux address family numbers, as netlink carries them. */
export const AF_INET = 2;
export const AF_INET6 = 10;

/** A parsed address. `address` is the canonical text and the key for maps and tables. */
export interface ParsedIp {
  readonly family: IpFamily;
  /** Canonical text, as `ip -j` prints it: "192.0.2.1", "2001:db8::1". */
  readonly address: string;
  /** Network byte order; 4 bytes for IPv4, 16 for IPv6. A fresh Buffer owned by the caller. */
  readonly bytes: Buffer;
}

/**
 * An IP as a caller has it: text (from a file, a flag, the wire), or a value parsed once at
 * the edge and passed down, which the checks below take as it is instead of parsing again.
 */
export type IpArg = string | ParsedIp;

/** The text of an IpArg, for messages and keys (canonical when it was parsed). */
export function ipArgText(ip: IpArg): string {
  return typeof ip === 'string' ? ip : ip.address;
}

export interface ParseIpOptions {
  /**
   * Accept IPv4-mapped IPv6 addresses (::ffff:0:0/96). Default false: user input such as
   * "::ffff:10.0.0.1" is rejected with "use the IPv4 address 10.0.0.1 instead".
   */
  allowMapped?: boolean;
}

const scratch = new Uint8Array(16);

function invalid(text: string): InvalidArgumentError {
  return new InvalidArgumentError(describeIpProblem(text));
}

function mappedError(text: string, bytes: Uint8Array): InvalidArgumentError {
  return new InvalidArgumentError(
    `${JSON.stringify(text)} is an IPv4-mapped IPv6 address; use the IPv4 address ${formatV4(bytes, 12)} instead`,
  );
}

/**
 * Parses an IPv4 (dotted decimal, four octets, no leading zeros) or IPv6 (RFC 4291 text) address.
 * Any spelling is accepted ("2001:DB8::0:1"); the result carries the canonical text.
 * Throws InvalidArgumentError naming the problem and the fix for anything else: empty text,
 * whitespace, a prefix length, a zone ID, brackets, bad octets or groups, IPv4-mapped (unless
 * `allowMapped`).
 */
export function parseIp(text: string, options?: ParseIpOptions): ParsedIp {
  const family = parseIpInto(text, scratch, 0);
  if (family === 0) throw invalid(text);
  if (family === 4) {
    return { family, address: formatV4(scratch, 0), bytes: Buffer.from(scratch.subarray(0, 4)) };
  }
  if (options?.allowMapped !== true && isMappedBytes(scratch, 0)) throw mappedError(text, scratch);
  return { family, address: formatV6(scratch, 0), bytes: Buffer.from(scratch) };
}

/** The canonical text of an address ("2001:DB8::0:1" → "2001:db8::1"). Throws like parseIp. */
export function canonicalIp(text: string, options?: ParseIpOptions): string {
  const family = parseIpInto(text, scratch, 0);
  if (family === 0) throw invalid(text);
  if (family === 4) return formatV4(scratch, 0);
  if (options?.allowMapped !== true && isMappedBytes(scratch, 0)) throw mappedError(text, scratch);
  return formatV6(scratch, 0);
}

/** 4 or 6 when `text` is a valid address (IPv4-mapped included), else 0. Never throws. */
export function ipFamilyOf(text: string): IpFamily | 0 {
  return parseIpInto(text, scratch, 0);
}

/**
 * Writes the bytes of `text` into `buf` at `offset` and returns how many (4 or 16). A wire
 * conversion: every valid spelling is accepted, IPv4-mapped included, so that any address
 * read with ipFromBytes can be written back. Throws InvalidArgumentError for invalid text or
 * when `buf` has no room; on an invalid text, bytes at `buf[offset..]` may have been written.
 * The netlink bulk writers call this for every entry: it parses straight into `buf`.
 */
export function writeIp(text: string, buf: Uint8Array, offset = 0): 4 | 16 {
  const v6 = text.indexOf(':') >= 0; // as parseIpInto decides
  const n = v6 ? 16 : 4;
  if (offset < 0 || offset + n > buf.length) {
    throw new InvalidArgumentError(
      `no room for ${n} address bytes at offset ${offset} in a ${buf.length}-byte buffer`,
    );
  }
  if (!(v6 ? parseV6(text, buf, offset) : parseV4(text, 0, text.length, buf, offset))) {
    throw invalid(text);
  }
  return n;
}

/**
 * AF_INET6 for a text with a ':', else AF_INET: the family `text` has if it is an address at
 * all. No validation (writeIp validates when the bytes are written); for message headers
 * that are filled before their address attribute.
 */
export function afOfText(text: string): typeof AF_INET | typeof AF_INET6 {
  return text.indexOf(':') >= 0 ? AF_INET6 : AF_INET;
}

/** The 4 or 16 bytes of `text` (any valid spelling, IPv4-mapped included; see writeIp). */
export function ipToBytes(text: string): Buffer {
  const family = parseIpInto(text, scratch, 0);
  if (family === 0) throw invalid(text);
  return Buffer.from(family === 4 ? scratch.subarray(0, 4) : scratch);
}

/**
 * Canonical text of the address in `bytes[offset, offset + length)`; `length` (default: the
 * rest of the buffer) must be 4 (IPv4) or 16 (IPv6). Every 16-byte value is accepted,
 * IPv4-mapped included ("::ffff:10.0.0.1", as inet_ntop prints it).
 */
export function ipFromBytes(bytes: Uint8Array, offset = 0, length = bytes.length - offset): string {
  if (offset < 0 || offset + length > bytes.length || (length !== 4 && length !== 16)) {
    throw new InvalidArgumentError(
      `an IP address is 4 or 16 bytes; got ${length} bytes at offset ${offset} of a ${bytes.length}-byte buffer`,
    );
  }
  return length === 4 ? formatV4(bytes, offset) : formatV6(bytes, offset);
}

/** AF_INET (2) or AF_INET6 (10) for a family. */
export function afOf(family: IpFamily): typeof AF_INET | typeof AF_INET6 {
  return family === 4 ? AF_INET : AF_INET6;
}

/** The family of an AF_* number; throws InvalidArgumentError for anything but 2 and 10. */
export function familyOfAf(af: number): IpFamily {
  if (af === AF_INET) return 4;
  if (af === AF_INET6) return 6;
  throw new InvalidArgumentError(`address family ${af} is neither AF_INET (2) nor AF_INET6 (10)`);
}

/** "IPv4" or "IPv6", for messages. */
export function familyName(family: IpFamily): string {
  return family === 4 ? 'IPv4' : 'IPv6';
}
