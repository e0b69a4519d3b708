// One entry of the observed neighbor table, packed: state, flags, the low NDA_FLAGS_EXT bits,
// the protocol and the table's own marks in one small integer, a 6-byte lladdr in two
// 24-bit halves. Private to observed.ts.
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
 * One entry, packed: state, flags, the low NDA_FLAGS_EXT bits and the protocol in one small
 * integer, a 6-byte lladdr in two 24-bit halves (any other length as text). Updated in
 * place by events, so an event that changes an entry allocates nothing here.
 */
export class Entry implements NeighState {
  /**
   * state | flags << 8 | (flagsExt & EXT_BITS) << 16 | (protocol ?? NO_PROTOCOL) << 18
   * | FOREIGN
   */
  bits = 0;
  macHi = -1;
  macLo = -1;
  macText: string | undefined = undefined;

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
    if (this.macText !== undefined) return this.macText;
    if (this.macHi < 0) return undefined;
    return formatMacHalves(this.macHi, this.macLo);
  }

  /**
   * Sets the entry from a message; false when nothing changed. Marks it foreign (for good)
   * when it looks foreign to `protocol`, fibkeeper's mark.
   */
  set(n: NeighMessage, protocol: number): boolean {
    const p = n.protocol === undefined || n.protocol > 0xff ? NO_PROTOCOL : n.protocol;
    const bits =
      (n.state & 0xff) |
      ((n.flags & 0xff) << 8) |
      ((n.flagsExt & EXT_BITS) << 16) |
      (p << 18) |
      (this.bits & KEEP);
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
    if (bits === this.bits && hi === this.macHi && lo === this.macLo && text === this.macText) {
      return false;
    }
    this.bits = bits;
    if ((bits & FOREIGN) === 0 && isForeign(this, protocol)) this.bits |= FOREIGN;
    this.macHi = hi;
    this.macLo = lo;
    this.macText = text;
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
