// "Which of these IPs does this prefix cover?" — the core of incremental recomputation: when
// a route for a prefix changes, only the forwardable IPs inside it need a new lookup.
import { InvalidArgumentError } from '../errors/index.js';
import { describeIpProblem } from './diagnose.js';
import { formatV4Number, formatV6 } from './format.js';
import { parseIpInto } from './parse.js';
import { parsePrefix, type IpPrefix } from './prefix.js';
import { SortedInts } from './sorted-ints.js';
import { SortedKeys } from './sorted-keys.js';

const scratch = new Uint8Array(16);

// An IPv4 key is the address with its top bit flipped, as a signed 32-bit number: in the
// same order as the addresses, and to V8 always a small integer (an unsigned key from
// 128.0.0.0 on — 172.16/12, 192.168/16 — would be a 16-byte heap number per member).
function v4Key(b: Uint8Array, o: number): number {
  return ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) ^ 0x80000000;
}

// IPv6 keys are the 16 bytes as a 16-character string: JS compares strings by UTF-16 code
// unit, which for characters 0–255 is byte order, so string order is address order.
function v6Key(b: Uint8Array, o: number): string {
  return String.fromCharCode(
    b[o]!,
    b[o + 1]!,
    b[o + 2]!,
    b[o + 3]!,
    b[o + 4]!,
    b[o + 5]!,
    b[o + 6]!,
    b[o + 7]!,
    b[o + 8]!,
    b[o + 9]!,
    b[o + 10]!,
    b[o + 11]!,
    b[o + 12]!,
    b[o + 13]!,
    b[o + 14]!,
    b[o + 15]!,
  );
}

/** The text of an IPv4 key (v4Key undone). */
const v4Text = (key: number): string => formatV4Number(key ^ 0x80000000);

function sortStrings(keys: string[]): string[] {
  return keys.sort(); // default sort compares UTF-16 code units: byte order here
}

/**
 * A set of IP addresses (both families) that lists the members inside a prefix in
 * O(log n + k), k the number listed. Bulk adds are sorted in slices of PENDING_LIMIT as they
 * come, and the next query merges the slices (a query after a million adds costs one O(n)
 * merge, not a sort of them all); after that, single adds and deletes cost O(√n) element
 * moves at most, amortised. Members are keyed by their bytes (an IPv4 address as a number, an
 * IPv6 address as a 16-character string) and listed as canonical text; input may be any
 * valid spelling (IPv4-mapped addresses are IPv6 members). An IPv4 member is its key alone
 * (SortedInts); an IPv6 member also keeps its text (SortedKeys).
 */
export class IpRangeIndex {
  /** IPv4 members as keys alone (4 bytes each), their text made when listed. */
  readonly #v4 = new SortedInts();
  readonly #v6 = new SortedKeys<string>(sortStrings);

  /** Number of addresses in the index. */
  get size(): number {
    return this.#v4.size + this.#v6.size;
  }

  /** Adds an address; false when it was already present. Throws InvalidArgumentError for bad text. */
  add(ip: string): boolean {
    const family = parse(ip);
    if (family === 4) return this.#v4.add(v4Key(scratch, 0));
    // Keep the caller's string when it is already canonical: tables hold it anyway.
    const text = formatV6(scratch, 0);
    return this.#v6.add(v6Key(scratch, 0), text === ip ? ip : text);
  }

  /** Removes an address; false when it was absent (not an error). Throws for invalid text. */
  delete(ip: string): boolean {
    const family = parse(ip);
    return family === 4 ? this.#v4.delete(v4Key(scratch, 0)) : this.#v6.delete(v6Key(scratch, 0));
  }

  has(ip: string): boolean {
    const family = parseIpInto(ip, scratch, 0);
    if (family === 0) return false;
    return family === 4 ? this.#v4.has(v4Key(scratch, 0)) : this.#v6.has(v6Key(scratch, 0));
  }

  /**
   * The addresses inside `prefix` (an IpPrefix, or text parsed with host bits cleared), as
   * canonical text in address order.
   */
  covered(prefix: IpPrefix | string): string[] {
    const p = typeof prefix === 'string' ? parsePrefix(prefix, { hostBits: 'clear' }) : prefix;
    const b = p.bytes;
    if (p.family === 4) {
      const lo = v4Key(b, 0);
      return this.#v4.range(lo, lo + 2 ** (32 - p.length) - 1).map(v4Text);
    }
    const hiBytes = Buffer.from(b);
    for (let bit = p.length; bit < 128; bit++) hiBytes[bit >> 3]! |= 0x80 >> (bit & 7);
    return this.#v6.range(v6Key(b, 0), v6Key(hiBytes, 0));
  }

  /** Every address: IPv4 in address order, then IPv6 in insertion order. */
  *values(): IterableIterator<string> {
    for (const k of this.#v4.range()) yield v4Text(k);
    yield* this.#v6.values();
  }

  clear(): void {
    this.#v4.clear();
    this.#v6.clear();
  }
}

function parse(ip: string): 4 | 6 {
  const family = parseIpInto(ip, scratch, 0);
  if (family === 0) throw new InvalidArgumentError(describeIpProblem(ip));
  return family;
}
