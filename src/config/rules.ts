// The rules every forwardable IP, external IP and owner name obeys, wherever it comes from:
// the config file (`forwardable.static`, `extip.static`), the control API, and the state
// file the agent restores at start. One definition, so that whatever was accepted once is
// accepted again when it is loaded. These are the static rules; the running agent adds the
// ones that depend on the node (its own addresses, IPv6 on the external interface).
import { ConflictError, InvalidArgumentError } from '../errors/index.js';
import {
  canonicalIp,
  classifyIp,
  markCanonicalUnicast,
  parseIp,
  validateUnicastIp,
  type ParsedIp,
} from '../ipaddr/index.js';

/** Owner names: 1-63 characters, letters, digits and ._:/@-, starting with a letter or digit. */
export const OWNER_RE = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,62}$/;

/** The owner of `forwardable.static`. */
export const CONFIG_OWNER = 'config';
/** The owner of next hops learned from XDP misses. */
export const MISS_OWNER = 'xdp-miss';
/** The owner of the other cluster members' node IPs (cluster mode). */
export const CLUSTER_OWNER = 'cluster';

/** Owners the agent manages itself, with where their IPs come from. */
export const RESERVED_OWNERS: ReadonlyMap<string, string> = new Map([
  [CONFIG_OWNER, 'forwardable.static in the config file'],
  [MISS_OWNER, 'the XDP miss tracker'],
  [CLUSTER_OWNER, "the other cluster members' node IPs (cluster mode)"],
]);

/** The most IPs one request (or one config list) may carry. */
export const MAX_IPS_PER_REQUEST = 100_000;
/** Rejected IPs quoted in one error; the rest are counted. */
const QUOTED = 3;

/** An owner name that the API may use: valid and not reserved. Throws InvalidArgumentError. */
export function checkOwner(v: unknown): string {
  if (typeof v !== 'string' || !OWNER_RE.test(v)) {
    throw new InvalidArgumentError(
      `owner ${JSON.stringify(v)} is not a valid owner name (1-63 characters: letters, digits and ._:/@-, starting with a letter or digit)`,
    );
  }
  const reserved = RESERVED_OWNERS.get(v);
  if (reserved !== undefined) {
    throw new InvalidArgumentError(
      `owner "${v}" is managed by the agent itself (${reserved}); use another owner name`,
    );
  }
  return v;
}

/**
 * A forwardable or external IP: the unicast address of a host (not loopback, multicast,
 * link-local, unspecified, broadcast, IPv4-mapped, no zone). Returns the canonical text.
 */
export function checkIp(v: unknown): string {
  return checkParsedIp(v).address;
}

function checkParsedIp(v: unknown): ParsedIp {
  if (typeof v !== 'string') throw new InvalidArgumentError(`${JSON.stringify(v)} is not a string`);
  return validateUnicastIp(v);
}

/** An address to release: it only has to be an address. */
function parseReleasedIp(v: unknown): ParsedIp {
  if (typeof v !== 'string') throw new InvalidArgumentError('not a string');
  return parseIp(v);
}

/**
 * Every IP of a list, parsed once (the API passes these values down; nothing below parses
 * them again), without duplicates: `add` checks them as IPs to add (checkIp), `release` only
 * as addresses (one that became reserved since can still be removed). Or one
 * InvalidArgumentError that names `what` and the bad IPs (nothing is taken from a list with
 * a bad IP).
 */
export function parseIpList(list: unknown, what: string, mode: 'add' | 'release'): ParsedIp[] {
  if (!Array.isArray(list)) throw new InvalidArgumentError(`${what}: expected a list of IPs`);
  if (mode === 'add' && list.length > MAX_IPS_PER_REQUEST) {
    throw new InvalidArgumentError(
      `${what}: ${list.length} IPs; the limit is ${MAX_IPS_PER_REQUEST} per list`,
    );
  }
  const parse = mode === 'add' ? checkParsedIp : parseReleasedIp;
  const out = new Map<string, ParsedIp>();
  const problems: string[] = [];
  for (const v of list as unknown[]) {
    try {
      const ip = parse(v);
      if (!out.has(ip.address)) out.set(ip.address, ip);
    } catch (err) {
      problems.push(`${JSON.stringify(v)}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) {
    const more = problems.length > QUOTED ? `; and ${problems.length - QUOTED} more` : '';
    throw new InvalidArgumentError(`${what}: ${problems.slice(0, QUOTED).join('; ')}${more}`);
  }
  return [...out.values()];
}

/** The most IPs one bulk request (a text body, one IP a line) may carry. */
export const MAX_IPS_PER_BULK = 4_000_000;

/**
 * The IPs of a bulk body (lines, as read: `lines[i]` is line `i + 1`), checked with the rules
 * of parseIpList (`add`: checkIp; `release`: an address) and returned as canonical text — the
 * line itself when it is canonical already, so that a million IPs are not copied again. Empty
 * lines and lines starting with "#" are skipped; spaces around an IP are ignored. Duplicates
 * are kept (every consumer takes a set). Throws one InvalidArgumentError naming the first bad
 * lines by number and counting the rest: nothing is taken from a body with a bad line.
 */
export function parseIpLines(
  lines: readonly string[],
  what: string,
  mode: 'add' | 'release',
): string[] {
  const out: string[] = [];
  const problems: string[] = [];
  let bad = 0;
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    const c0 = line.charCodeAt(0);
    if (c0 === 32 || c0 === 9 || line.charCodeAt(line.length - 1) <= 32) line = line.trim();
    if (line === '' || line.charCodeAt(0) === 35 /* # */) continue;
    try {
      // The common case without a ParsedIp (and its Buffer) per line; anything unusual goes
      // through checkIp for its explained error.
      const fast = mode === 'add' && classifyIp(line) === 'unicast';
      const ip = fast ? canonicalIp(line) : mode === 'add' ? checkIp(line) : parseIp(line).address;
      out.push(ip === line ? line : ip);
    } catch (err) {
      if (++bad <= QUOTED)
        problems.push(`line ${i + 1} ${JSON.stringify(line)}: ${(err as Error).message}`);
    }
  }
  if (bad > 0) {
    const more = bad > QUOTED ? `; and ${bad - QUOTED} more bad lines` : '';
    throw new InvalidArgumentError(`${what}: ${problems.join('; ')}${more}; nothing was changed`);
  }
  if (mode === 'add' && out.length > MAX_IPS_PER_BULK) {
    throw new InvalidArgumentError(
      `${what}: ${out.length} IPs; the limit is ${MAX_IPS_PER_BULK} per request; nothing was changed`,
    );
  }
  return mode === 'add' ? markCanonicalUnicast(out) : out;
}

/** parseIpList(list, what, 'add') as canonical text. */
export function checkIps(list: unknown, what: string): string[] {
  return parseIpList(list, what, 'add').map((ip) => ip.address);
}

/**
 * The rule that ties the two lists: an IP is forwardable (a next hop fibkeeper keeps a
 * neighbor entry for) or external (an address of this node, on the holder), never both —
 * the kernel cannot forward to the node's own address.
 */
export function conflictError(
  ip: string,
  isNow: string,
  wanted: 'forwardable' | 'external',
  fix: string,
): ConflictError {
  return new ConflictError(
    `${ip} is ${isNow}, so it cannot also be ${wanted === 'external' ? 'an external IP' : 'forwardable'} (an IP is forwardable or external, never both); ${fix}`,
  );
}
