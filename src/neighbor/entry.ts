// The entries of the observed neighbor table, packed in columns per device: state, flags,
// the low NDA_FLAGS_EXT bits, the protocol and the table's own marks in one small integer, a
// 6-byte lladdr in two 24-bit halves. Private to observed.ts.
import { formatMacHalves } from '../ipaddr/index.js';
import { NeighFields, type Neigh } from '../netlink/index.js';
import { isForeign, type NeighState } from './ownership.js';

/** The kernel's "no protocol" and the bits an entry keeps of NDA_FLAGS_EXT. */
const NO_PROTOCOL = 0x1ff;
const EXT_BITS = 0x3;
/** Seen foreign (sticky until the entry disappears): above the protocol's 9 bits. */
const FOREIGN = 1 << 27;
/** Which load (dump) saw the entry last, as a parity bit: the others are gone. */
export const MARK = 1 << 28;
/** The last load changed or added the entry (until takeChanges hands it over). */
export const CHANGED = 1 << 29;
/** The bits of an entry that are its own, not the message's. */
const KEEP = FOREIGN | MARK | CHANGED;

/**
 * The entries of one device, in columns: a map from the entry's key (an IPv4 address as a
 * number, an IPv6 address as text) to a slot, and per slot the packed bits and the MAC's two
 * halves in typed arrays (an address of another length as text, aside). No object per entry:
 * 12 bytes of columns and a map entry, where an object of its own took 56 bytes more.
 */
export class Entries<K> {
  readonly #slots = new Map<K, number>();
  bits = new Int32Array(16);
  macHi = new Int32Array(16);
  macLo = new Int32Array(16);
  /** Slot → MAC text, for the rare address that is not 6 bytes. */
  readonly macText = new Map<number, string>();
  #free: number[] = [];
  #next = 0;

  get size(): number {
    return this.#slots.size;
  }

  /** The live entry of `k` (a view: read it at once), or undefined. */
  get(k: K): Entry | undefined {
    const slot = this.#slots.get(k);
    return slot === undefined ? undefined : new Entry(this, slot);
  }

  /** A new, empty entry for `k` (not present yet). */
  add(k: K): Entry {
    let slot = this.#free.pop();
    if (slot === undefined) {
      slot = this.#next++;
      if (slot === this.bits.length) this.#grow();
    }
    this.bits[slot] = 0;
    this.macHi[slot] = -1;
    this.macLo[slot] = -1;
    this.#slots.set(k, slot);
    return new Entry(this, slot);
  }

  delete(k: K): boolean {
    const slot = this.#slots.get(k);
    if (slot === undefined) return false;
    this.#slots.delete(k);
    this.macText.delete(slot);
    this.#free.push(slot);
    return true;
  }

  *[Symbol.iterator](): IterableIterator<[K, Entry]> {
    for (const [k, slot] of this.#slots) yield [k, new Entry(this, slot)];
  }

  *values(): IterableIterator<Entry> {
    for (const slot of this.#slots.values()) yield new Entry(this, slot);
  }

  #grow(): void {
    const n = this.bits.length * 2;
    const grow = (a: Int32Array): Int32Array<ArrayBuffer> => {
      const b = new Int32Array(n);
      b.set(a);
      return b;
    };
    this.bits = grow(this.bits);
    this.macHi = grow(this.macHi);
    this.macLo = grow(this.macLo);
  }
}

/**
 * One entry, packed: state, flags, the low NDA_FLAGS_EXT bits and the protocol in one small
 * integer, a 6-byte lladdr in two 24-bit halves (any other length as text) — a view of its
 * device's columns (Entries): read it at once, an event changes it in place and a deleted
 * entry's slot is used again.
 */
export class Entry implements NeighState {
  readonly #e: Entries<unknown>;
  readonly #slot: number;

  constructor(e: Entries<unknown>, slot: number) {
    this.#e = e;
    this.#slot = slot;
  }

  /**
   * state | flags << 8 | (flagsExt & EXT_BITS) << 16 | (protocol ?? NO_PROTOCOL) << 18
   * | FOREIGN | MARK | CHANGED
   */
  get bits(): number {
    return this.#e.bits[this.#slot]!;
  }
  set bits(v: number) {
    this.#e.bits[this.#slot] = v;
  }

  get state(): number {
    return this.bits & 0xff;
  }
  get flags(): number {
    return (this.bits >>> 8) & 0xff;
  }
  get flagsExt(): number {
    return (this.bits >>> 16) & EXT_BITS;
  }
  get protocol(): number | undefined {
    const p = (this.bits >>> 18) & NO_PROTOCOL;
    return p === NO_PROTOCOL ? undefined : p;
  }
  get foreign(): boolean {
    return (this.bits & FOREIGN) !== 0;
  }
  get mark(): number {
    return this.bits & MARK;
  }
  setMark(mark: number): void {
    this.bits = (this.bits & ~MARK) | mark;
  }
  get lladdr(): string | undefined {
    const text = this.#e.macText.get(this.#slot);
    if (text !== undefined) return text;
    const hi = this.#e.macHi[this.#slot]!;
    if (hi < 0) return undefined;
    return formatMacHalves(hi, this.#e.macLo[this.#slot]!);
  }

  /**
   * Sets the entry from a message; false when nothing changed. Marks it foreign (for good)
   * when it looks foreign to `protocol`, fibkeeper's mark.
   */
  set(n: NeighMessage, protocol: number): boolean {
    const e = this.#e;
    const slot = this.#slot;
    const p = n.protocol === undefined || n.protocol > 0xff ? NO_PROTOCOL : n.protocol;
    const old = e.bits[slot]!;
    const bits =
      (n.state & 0xff) |
      ((n.flags & 0xff) << 8) |
      ((n.flagsExt & EXT_BITS) << 16) |
      (p << 18) |
      (old & KEEP);
    let hi = -1;
    let lo = -1;
    let text: string | undefined = undefined;
    // A message read in place has a 6-byte address as numbers already: no text to parse.
    const fields = n instanceof NeighFields && n.macHi >= 0;
    const mac = fields ? undefined : n.lladdr;
    if (fields) {
      hi = n.macHi;
      lo = n.macLo;
    } else if (mac !== undefined && mac !== '') {
      hi = macHalf(mac, 0);
      lo = hi < 0 ? -1 : macHalf(mac, 9);
      if (lo < 0 || mac.length !== 17 || mac.charCodeAt(8) !== 58) {
        hi = -1;
        lo = -1;
        text = mac;
      }
    }
    if (
      bits === old &&
      hi === e.macHi[slot] &&
      lo === e.macLo[slot] &&
      text === e.macText.get(slot)
    ) {
      return false;
    }
    e.bits[slot] = bits;
    if ((bits & FOREIGN) === 0 && isForeign(this, protocol)) e.bits[slot] = bits | FOREIGN;
    e.macHi[slot] = hi;
    e.macLo[slot] = lo;
    if (text === undefined) e.macText.delete(slot);
    else e.macText.set(slot, text);
    return true;
  }
}

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** Three "xx:" bytes of a MAC at `from` as a 24-bit number; -1 when not in that form. */
function macHalf(mac: string, from: number): number {
  let v = 0;
  for (let i = 0; i < 3; i++) {
    const o = from + 3 * i;
    const a = hexVal(mac.charCodeAt(o));
    const b = hexVal(mac.charCodeAt(o + 1));
    if (a < 0 || b < 0 || (i < 2 && mac.charCodeAt(o + 2) !== 58)) return -1;
    v = (v << 8) | (a << 4) | b;
  }
  return v;
}

export function familyOf(ip: string): 4 | 6 {
  return ip.includes(':') ? 6 : 4;
}

/** What the table reads of a neighbor message: a parsed Neigh or NeighFields read in place. */
export type NeighMessage = Pick<
  Neigh,
  'family' | 'ifindex' | 'state' | 'flags' | 'flagsExt' | 'dst' | 'lladdr' | 'protocol'
>;
