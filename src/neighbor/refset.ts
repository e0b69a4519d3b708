// The rows of the DesiredNeighbor table as the calculator writes them, with the references
// of a desired neighbor back to the forwardable IPs that need it. Most next hops are needed
// by one IP (on-link forwardable IPs are their own next hop), so a set of one is kept as the
// string alone and becomes a Set only when a second reference comes: with 100,000 entries
// that saves a hash table per entry. A row is such a set itself, and its own statedb node
// (RowNode): one object per entry, not three.
import { RowNode } from '../statedb/index.js';
import type { DesiredNeighbor } from './types.js';

export class RefSet extends RowNode<DesiredNeighbor> implements ReadonlySet<string> {
  /** None (undefined), one (the string) or several (a Set): one field, not two. */
  #refs: string | Set<string> | undefined = undefined;

  get size(): number {
    const r = this.#refs;
    return r === undefined ? 0 : typeof r === 'string' ? 1 : r.size;
  }

  has(ip: string): boolean {
    const r = this.#refs;
    return typeof r === 'string' ? r === ip : r !== undefined && r.has(ip);
  }

  add(ip: string): void {
    const r = this.#refs;
    if (r === undefined) this.#refs = ip;
    else if (typeof r !== 'string') r.add(ip);
    else if (r !== ip) this.#refs = new Set([r, ip]);
  }

  delete(ip: string): boolean {
    const r = this.#refs;
    if (r === undefined) return false;
    if (typeof r !== 'string') return r.delete(ip);
    if (r !== ip) return false;
    this.#refs = undefined;
    return true;
  }

  *values(): SetIterator<string> {
    const r = this.#refs;
    if (typeof r === 'string') yield r;
    else if (r !== undefined) yield* r;
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
  readonly nexthop: string;

  /** `key` is neighKey(ifindex, nexthop): the row keeps no field for what the key says. */
  constructor(key: string, ifindex: number, nexthop: string, family: 4 | 6) {
    super(key);
    this.nexthop = nexthop;
    void ifindex; // the key says it (the ifindex getter)
    void family; // the nexthop says it (the family getter)
  }

  /** The digits of the key before its "|" (a field fewer per row). */
  get ifindex(): number {
    const k = this.key;
    let v = 0;
    for (let i = 0; i < k.length; i++) {
      const c = k.charCodeAt(i);
      if (c === 124 /* | */) break;
      v = v * 10 + (c - 48);
    }
    return v;
  }

  /** From the next hop (a field fewer per row). */
  get family(): 4 | 6 {
    return this.nexthop.includes(':') ? 6 : 4;
  }

  get refs(): ReadonlySet<string> {
    return this;
  }
}
