// The destination prefixes of every route the kernel has (all tables, both families), and
// for an IP the longest of them that contains it: the key by which next-hop lookups are
// shared (see share.ts).
//
// Why that key is exact: with the default policy rules, the kernel's FIB lookup for a
// destination x (whatever the output device) reads only routes whose prefix contains x.
// Those prefixes are nested; if P is the longest of them, every other one contains P too,
// so "the routes containing x" is the same set for every x whose longest containing prefix
// is P. Two such IPs therefore get the same answer from the kernel (the same route, or the
// same error); only an on-link leg names the destination itself as the next hop.
import { parseDottedQuadI32, writeIp } from '../ipaddr/index.js';

/** An IP's group: the longest route prefix containing it (NO_GROUP when there is none). */
export type GroupKey = number | string;

/**
 * The groups of IPs that no route contains, one per family. Keys of the two families never
 * meet: IPv4 keys are numbers (length·2³² + network), IPv6 keys strings ("len/bytes").
 */
export const NO_GROUP4: GroupKey = -1;
export const NO_GROUP6: GroupKey = '-1/';

/** The prefix length of a group (-1 for the IPs no route contains). */
export function groupLength(key: GroupKey): number {
  return typeof key === 'number' ? Math.floor(key / 0x1_0000_0000) : parseInt(key, 10);
}

const scratch = new Uint8Array(16);

/** Prefix lengths present, longest first, with the networks of each. */
interface Level<K> {
  len: number;
  /** Network → how many routes have it. */
  nets: Map<K, number>;
  /**
   * Network → its group key, made once: what groupOf answers. A map's value, not an object's
   * field: V8 keeps a number field (an IPv4 key is above 2^31) as a double and boxes it anew
   * on every read, where a map hands back the one it holds.
   */
  keys: Map<K, GroupKey>;
}

class Levels<K> {
  /** Longest first. */
  levels: Level<K>[] = [];
  readonly #keyOf: (len: number, net: K) => GroupKey;

  constructor(keyOf: (len: number, net: K) => GroupKey) {
    this.#keyOf = keyOf;
  }

  add(len: number, net: K): void {
    let l = this.levels.find((x) => x.len === len);
    if (l === undefined) {
      l = { len, nets: new Map(), keys: new Map() };
      this.levels.push(l);
      this.levels.sort((a, b) => b.len - a.len);
    }
    const n = l.nets.get(net) ?? 0;
    l.nets.set(net, n + 1);
    if (n === 0) l.keys.set(net, this.#keyOf(len, net));
  }

  remove(len: number, net: K): void {
    const i = this.levels.findIndex((x) => x.len === len);
    const l = this.levels[i];
    if (l === undefined) return;
    const n = (l.nets.get(net) ?? 0) - 1;
    if (n > 0) {
      l.nets.set(net, n);
    } else {
      l.nets.delete(net);
      l.keys.delete(net);
    }
    if (l.nets.size === 0) this.levels.splice(i, 1);
  }
}

// IPv4 addresses and networks are signed 32-bit numbers here: to V8 a small integer, where an
// unsigned one from 128.0.0.0 on is a heap number, made per lookup (groupOf runs once per
// forwardable IP in a full resync). Group keys stay unsigned (len·2³² + network), made once.

/** The first `len` bits of an IPv4 address (a signed 32-bit number), as a signed number. */
function v4Net(v: number, len: number): number {
  if (len === 0) return 0;
  const shift = 32 - len;
  return shift === 0 ? v : (v >> shift) << shift;
}

/** An IPv4 address as a signed 32-bit number (any valid spelling); undefined for IPv6. */
function v4Number(ip: string): number | undefined {
  const fast = parseDottedQuadI32(ip);
  if (fast !== undefined) return fast;
  if (writeIp(ip, scratch) !== 4) return undefined;
  return (scratch[0]! << 24) | (scratch[1]! << 16) | (scratch[2]! << 8) | scratch[3]!;
}

/** The group key of the IPv4 network `net` (signed) of length `len`. */
const v4Key = (len: number, net: number): number => len * 0x1_0000_0000 + (net >>> 0);

/** The first `len` bits of the 16 bytes at scratch, as a 16-character string (bytes as chars). */
function v6Net(len: number): string {
  let s = '';
  for (let i = 0; i < 16; i++) {
    const bits = Math.min(8, Math.max(0, len - 8 * i));
    s += String.fromCharCode(bits === 0 ? 0 : scratch[i]! & ((0xff << (8 - bits)) & 0xff));
  }
  return s;
}

export class PrefixIndex {
  readonly #v4 = new Levels<number>(v4Key);
  readonly #v6 = new Levels<string>((len, net) => `${len}/${net}`);

  /** Adds one route's destination ("10.0.0.0/8", "::/0"). */
  add(dst: string): void {
    this.#update(dst, 1);
  }

  /** Removes one route's destination (a prefix stays while another route has it). */
  remove(dst: string): void {
    this.#update(dst, -1);
  }

  #update(dst: string, delta: 1 | -1): void {
    const slash = dst.lastIndexOf('/');
    const len = Number(dst.slice(slash + 1));
    const v = v4Number(dst.slice(0, slash));
    if (v !== undefined) {
      const net = v4Net(v, len);
      if (delta > 0) this.#v4.add(len, net);
      else this.#v4.remove(len, net);
    } else {
      writeIp(dst.slice(0, slash), scratch);
      const net = v6Net(len);
      if (delta > 0) this.#v6.add(len, net);
      else this.#v6.remove(len, net);
    }
  }

  /**
   * The group of `ip` (canonical or any valid spelling): its longest containing prefix as a
   * key, NO_GROUP4/NO_GROUP6 when no route contains it. Cost: one map probe per prefix
   * length present. Throws InvalidArgumentError for text that is no address.
   */
  groupOf(ip: string): GroupKey {
    const v = v4Number(ip);
    // Indexed loops: an array iterator is an object per call where Maglev keeps it.
    if (v !== undefined) {
      const levels = this.#v4.levels;
      for (let i = 0; i < levels.length; i++) {
        const key = levels[i]!.keys.get(v4Net(v, levels[i]!.len));
        if (key !== undefined) return key;
      }
      return NO_GROUP4;
    }
    writeIp(ip, scratch);
    const levels = this.#v6.levels;
    for (let i = 0; i < levels.length; i++) {
      const key = levels[i]!.keys.get(v6Net(levels[i]!.len));
      if (key !== undefined) return key;
    }
    return NO_GROUP6;
  }

  /** The group key of a route destination ("10.0.0.0/8"): what groupOf answers inside it. */
  keyOf(dst: string): GroupKey {
    const slash = dst.lastIndexOf('/');
    const len = Number(dst.slice(slash + 1));
    const v = v4Number(dst.slice(0, slash));
    if (v !== undefined) return v4Key(len, v4Net(v, len));
    writeIp(dst.slice(0, slash), scratch);
    return `${len}/${v6Net(len)}`;
  }

  /** Distinct prefixes, both families (for status and tests). */
  get size(): number {
    let n = 0;
    for (const l of this.#v4.levels) n += l.nets.size;
    for (const l of this.#v6.levels) n += l.nets.size;
    return n;
  }
}
