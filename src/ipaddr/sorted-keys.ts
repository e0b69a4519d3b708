// A set of keys (numbers or strings, compared with <) that answers range queries in
// O(log n + k). Private to ipaddr; IpRangeIndex builds on it.
//
// Layout, in the spirit of a two-level LSM tree:
//  - `base`: a large sorted array. Deleting a key there only marks it (`ghosts`); the mark is
//    dropped when the key comes back, and the slot when base is rebuilt.
//  - `delta`: a small sorted array (at most `deltaLimit` keys), kept sorted by splicing.
//  - `pending`: unsorted keys added since the last query; bulk adds cost O(1) each and are
//    sorted once, at the next query.
// A query first flushes `pending` (into delta if it fits, else one rebuild of base), then
// binary-searches base and delta. The membership map `live` (key → text) is the truth; base,
// delta and pending only order it.

export class SortedKeys<K extends number | string> {
  readonly #live = new Map<K, string>();
  #base: K[] = [];
  #delta: K[] = [];
  #pending: K[] = [];
  readonly #ghosts = new Set<K>();

  readonly #sortKeys: (keys: K[]) => K[];
  constructor(sortKeys: (keys: K[]) => K[]) {
    this.#sortKeys = sortKeys;
  }

  get size(): number {
    return this.#live.size;
  }

  has(key: K): boolean {
    return this.#live.has(key);
  }

  /** Adds `key` with its text; false (and no change) when already present. */
  add(key: K, text: string): boolean {
    if (this.#live.has(key)) return false;
    this.#live.set(key, text);
    if (!this.#ghosts.delete(key)) this.#pending.push(key);
    return true;
  }

  /** Removes `key`; false when absent. */
  delete(key: K): boolean {
    if (!this.#live.delete(key)) return false;
    const d = lowerBound(this.#delta, key);
    if (d < this.#delta.length && this.#delta[d] === key) {
      this.#delta.splice(d, 1);
    } else {
      const b = lowerBound(this.#base, key);
      if (b < this.#base.length && this.#base[b] === key) this.#ghosts.add(key);
      // else the key is in `pending`; the next flush drops it because it is not live.
    }
    return true;
  }

  clear(): void {
    this.#live.clear();
    this.#base = [];
    this.#delta = [];
    this.#pending = [];
    this.#ghosts.clear();
  }

  /** Every text, in insertion order. */
  values(): IterableIterator<string> {
    return this.#live.values();
  }

  /** The texts of the live keys in [lo, hi], in key order. */
  range(lo: K, hi: K): string[] {
    this.#flush();
    const out: string[] = [];
    const base = this.#base;
    const delta = this.#delta;
    let i = lowerBound(base, lo);
    let j = lowerBound(delta, lo);
    const checkGhosts = this.#ghosts.size > 0;
    for (;;) {
      const bk = i < base.length && base[i]! <= hi ? base[i]! : undefined;
      const dk = j < delta.length && delta[j]! <= hi ? delta[j]! : undefined;
      if (bk === undefined && dk === undefined) break;
      if (dk === undefined || (bk !== undefined && bk < dk)) {
        i++;
        if (checkGhosts && this.#ghosts.has(bk!)) continue;
        out.push(this.#live.get(bk!)!);
      } else {
        j++;
        out.push(this.#live.get(dk)!);
      }
    }
    return out;
  }

  /** Limit of the delta level: about 8·√n, at least 512. */
  #deltaLimit(): number {
    return Math.max(512, Math.floor(8 * Math.sqrt(this.#base.length)));
  }

  #flush(): void {
    if (this.#pending.length > 0) {
      const fresh = this.#sortKeys(this.#pending.filter((k) => this.#live.has(k)));
      this.#pending = [];
      const unique = dedupeSorted(fresh);
      if (unique.length + this.#delta.length <= this.#deltaLimit()) {
        if (unique.length <= 8) {
          // A few keys (the steady state: one add between route changes): splice them in.
          for (const k of unique) this.#delta.splice(lowerBound(this.#delta, k), 0, k);
        } else {
          this.#delta = mergeSorted(this.#delta, unique);
        }
      } else {
        this.#rebuild(unique);
      }
    }
    if (this.#ghosts.size > this.#deltaLimit()) this.#rebuild([]);
  }

  #rebuild(extra: K[]): void {
    const ghosts = this.#ghosts;
    const base = ghosts.size === 0 ? this.#base : this.#base.filter((k) => !ghosts.has(k));
    this.#base = mergeSorted(mergeSorted(base, this.#delta), extra);
    this.#delta = [];
    ghosts.clear();
  }
}

/** First index whose key is ≥ `key`. */
function lowerBound<K extends number | string>(arr: readonly K[], key: K): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function dedupeSorted<K>(arr: K[]): K[] {
  let w = 0;
  for (let r = 0; r < arr.length; r++) {
    if (w === 0 || arr[r] !== arr[w - 1]) arr[w++] = arr[r]!;
  }
  arr.length = w;
  return arr;
}

function mergeSorted<K extends number | string>(a: readonly K[], b: readonly K[]): K[] {
  if (a.length === 0) return b.slice();
  if (b.length === 0) return a.slice();
  const out = new Array<K>(a.length + b.length);
  let i = 0;
  let j = 0;
  let w = 0;
  while (i < a.length && j < b.length) out[w++] = a[i]! < b[j]! ? a[i++]! : b[j++]!;
  while (i < a.length) out[w++] = a[i++]!;
  while (j < b.length) out[w++] = b[j++]!;
  return out;
}
