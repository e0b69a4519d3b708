// The references of a desired neighbor back to the forwardable IPs that need it. Most next
// hops are needed by one IP (on-link forwardable IPs are their own next hop), so a set of
// one is kept as the string alone and becomes a Set only when a second reference comes:
// with 100,000 entries that saves a hash table per entry. The calculator's rows
// (DesiredRow) are such a set themselves: one object per entry, not two.
import type { DesiredNeighbor } from './types.js';

export class RefSet implements ReadonlySet<string> {
  #one: string | undefined = undefined;
  #many: Set<string> | undefined = undefined;

  get size(): number {
    return this.#many !== undefined ? this.#many.size : this.#one === undefined ? 0 : 1;
  }

  has(ip: string): boolean {
    return this.#many !== undefined ? this.#many.has(ip) : this.#one === ip;
  }

  add(ip: string): void {
    if (this.#many !== undefined) this.#many.add(ip);
    else if (this.#one === undefined) this.#one = ip;
    else if (this.#one !== ip) {
      this.#many = new Set([this.#one, ip]);
      this.#one = undefined;
    }
  }

  delete(ip: string): boolean {
    if (this.#many !== undefined) return this.#many.delete(ip);
    if (this.#one !== ip) return false;
    this.#one = undefined;
    return true;
  }

  *values(): SetIterator<string> {
    if (this.#many !== undefined) yield* this.#many;
    else if (this.#one !== undefined) yield this.#one;
  }

  keys(): SetIterator<string> {
    return this.values();
  }

  *entries(): SetIterator<[string, string]> {
    for (const v of this.values()) yield [v, v];
  }

  [Symbol.iterator](): SetIterator<string> {
    return this.values();
  }

  forEach(fn: (value: string, key: string, set: ReadonlySet<string>) => void): void {
    for (const v of this.values()) fn(v, v, this);
  }
}

/**
 * A row of the DesiredNeighbor table as the calculator writes it: the entry and, being a
 * RefSet, its live references (`refs` is the row itself).
 */
export class DesiredRow extends RefSet implements DesiredNeighbor {
  readonly key: string;
  readonly ifindex: number;
  readonly nexthop: string;
  readonly family: 4 | 6;

  constructor(key: string, ifindex: number, nexthop: string, family: 4 | 6) {
    super();
    this.key = key;
    this.ifindex = ifindex;
    this.nexthop = nexthop;
    this.family = family;
  }

  get refs(): ReadonlySet<string> {
    return this;
  }
}
