// What kind of address an IP is, and the check for IPs that fibkeeper may forward to or assign.
import { InvalidArgumentError } from '../errors/index.js';
import { familyName, parseIp, type IpArg, type ParsedIp } from './address.js';
import { isMappedBytes, parseIpInto, type IpFamily } from './parse.js';

/**
 * - unspecified: 0.0.0.0, ::
 * - this-network: 0.0.0.0/8 other than 0.0.0.0 (RFC 1122 "this host on this network";
 *   never a valid destination)
 * - loopback: 127.0.0.0/8, ::1
 * - multicast: 224.0.0.0/4, ff00::/8
 * - broadcast: 255.255.255.255 (limited broadcast)
 * - link-local: 169.254.0.0/16, fe80::/10
 * - ipv4-mapped: ::ffff:0:0/96
 * - unicast: everything else
 */
export type IpClass =
  | 'unspecified'
  | 'this-network'
  | 'loopback'
  | 'multicast'
  | 'broadcast'
  | 'link-local'
  | 'ipv4-mapped'
  | 'unicast';

const scratch = new Uint8Array(16);

function classifyV4(b: Uint8Array, o: number): IpClass {
  const a = b[o]!;
  if (a === 0) return (b[o + 1]! | b[o + 2]! | b[o + 3]!) === 0 ? 'unspecified' : 'this-network';
  if (a === 127) return 'loopback';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a === 255 && (b[o + 1]! & b[o + 2]! & b[o + 3]!) === 255) return 'broadcast';
  if (a === 169 && b[o + 1] === 254) return 'link-local';
  return 'unicast';
}

function classifyV6(b: Uint8Array, o: number): IpClass {
  if (b[o] === 0xff) return 'multicast';
  if (b[o] === 0xfe && (b[o + 1]! & 0xc0) === 0x80) return 'link-local';
  let high = 0;
  for (let i = 0; i < 15; i++) high |= b[o + i]!;
  if (high === 0) {
    if (b[o + 15] === 0) return 'unspecified';
    if (b[o + 15] === 1) return 'loopback';
  }
  if (isMappedBytes(b, o)) return 'ipv4-mapped';
  return 'unicast';
}

/**
 * The class of an address given as text (any valid spelling, IPv4-mapped included) or as 4 or
 * 16 bytes. Throws InvalidArgumentError for invalid text or a wrong byte length.
 */
export function classifyIp(ip: string | Uint8Array): IpClass {
  if (typeof ip === 'string') {
    const family = parseIpInto(ip, scratch, 0);
    if (family === 0) return classifyIp(parseIp(ip).bytes); // throws the explained error
    return family === 4 ? classifyV4(scratch, 0) : classifyV6(scratch, 0);
  }
  if (ip.length === 4) return classifyV4(ip, 0);
  if (ip.length === 16) return classifyV6(ip, 0);
  throw new InvalidArgumentError(`an IP address is 4 or 16 bytes; got ${ip.length}`);
}

/** Why each non-unicast class cannot be forwarded to or assigned, and what to give instead. */
const CLASS_PROBLEM: Record<Exclude<IpClass, 'unicast'>, (ip: ParsedIp) => string> = {
  unspecified: (ip) => `${ip.address} is the unspecified address`,
  'this-network': (ip) => `${ip.address} is in 0.0.0.0/8 ("this network"), never a destination`,
  loopback: (ip) =>
    `${ip.address} is a loopback address (${ip.family === 4 ? '127.0.0.0/8' : '::1'}); it never leaves the host`,
  multicast: (ip) =>
    `${ip.address} is a multicast address (${ip.family === 4 ? '224.0.0.0/4' : 'ff00::/8'})`,
  broadcast: (ip) => `${ip.address} is the limited broadcast address`,
  'link-local': (ip) =>
    `${ip.address} is a link-local address (${ip.family === 4 ? '169.254.0.0/16' : 'fe80::/10'}); it is only meaningful on one link and not supported here`,
  'ipv4-mapped': (ip) => `${ip.address} is an IPv4-mapped IPv6 address`,
};

export interface UnicastIpOptions {
  /** Require this family ("10.0.0.1 is IPv4; this option takes IPv6"). Default: either. */
  family?: IpFamily;
  /**
   * The node's own addresses: canonical text → the device that holds it ("eth0"; may be ""
   * when unknown). Such addresses are rejected.
   */
  nodeAddresses?: ReadonlyMap<string, string>;
}

/**
 * Checks an IP that fibkeeper will forward to (a forwardable IP) or assign (an external IP):
 * a valid unicast address of a host, in the required family, not one of the node's own.
 * Returns the parsed address; throws InvalidArgumentError naming the problem and the fix.
 * An IP parsed already (at the request's edge) is checked from its bytes, not parsed again.
 */
export function validateUnicastIp(text: IpArg, options?: UnicastIpOptions): ParsedIp {
  // parseIp rejects IPv4-mapped with "use the IPv4 address … instead"; so did the edge.
  const ip = typeof text === 'string' ? parseIp(text) : text;
  if (options?.family !== undefined && ip.family !== options.family) {
    throw new InvalidArgumentError(
      `${ip.address} is ${familyName(ip.family)}; this option takes ${familyName(options.family)}`,
    );
  }
  const cls = classifyIp(ip.bytes);
  if (cls !== 'unicast') {
    throw new InvalidArgumentError(
      `${CLASS_PROBLEM[cls](ip)}; give the unicast address of a host on the network`,
    );
  }
  const device = options?.nodeAddresses?.get(ip.address);
  if (device !== undefined) {
    const where = device === '' ? '' : ` (on ${device})`;
    throw new InvalidArgumentError(
      `${ip.address} is an address of this node${where}; fibkeeper does not forward to or assign the node's own addresses`,
    );
  }
  return ip;
}

/** True when `ip` (text or bytes) is a valid address of class 'unicast'. Never throws. */
export function isUnicastIp(ip: string | Uint8Array): boolean {
  if (typeof ip === 'string' && parseIpInto(ip, scratch, 0) === 0) return false;
  if (typeof ip !== 'string' && ip.length !== 4 && ip.length !== 16) return false;
  return classifyIp(ip) === 'unicast';
}

/**
 * Lists of IPs known to be unicast host addresses in canonical text (checked once, at the
 * edge: a bulk API body). A table that takes such a list checks what only it can tell (the
 * node's own addresses) and skips parsing and classifying a million IPs again.
 */
const canonicalLists = new WeakSet<readonly string[]>();

/** Marks `list` as checked unicast canonical IPs (the caller's promise); returns it. */
export function markCanonicalUnicast<T extends readonly string[]>(list: T): T {
  canonicalLists.add(list);
  return list;
}

/** The list was marked by markCanonicalUnicast. */
export function isCanonicalUnicast(list: readonly unknown[]): boolean {
  return canonicalLists.has(list as readonly string[]);
}
