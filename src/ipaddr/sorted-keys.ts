// A set of keys (numbers or strings, compared with <) that answers range queries in
// O(log n + k). Private to ipaddr; IpRangeIndex builds on it.
//
// Layout, in the spirit of an LSM tree:
//  - `base`: a large sorted array. Deleting a key there only marks it (`ghosts`); the mark is
//    dropped when the key comes back, and the slot when base is rebuilt.
//  - `delta`: a small sorted array (at most `deltaLimit` keys), kept sorted by splicing.
//  - `pending`: unsorted keys added since the last query; bulk adds cost O(1) each.
//  - `runs`: sorted slices of PENDING_LIMIT keys and merges of them, made as pending fills
//    (run sizes fall from first to last; two runs of about one size are merged, like the
//    digits of a binary counter). A key deleted from a run is a ghost too.
// A query first flushes: with no runs, pending is sorted into delta if it fits, else into a
// rebuild of base; with runs, base, delta, runs and pending are merged into one new base.
// So a query after a bulk load of a million keys merges sorted arrays (an O(n) copy) where
// it once sorted a million keys (the first route change after such a load waited half a
// second for that), and the load pays its sorting in slices of PENDING_LIMIT keys. It then
// binary-searches base and delta. The membership map `live` (key → text) is the truth;
// the arrays only order it.

/** The most keys left unsorted: sorting them costs a few ms. */
export const PENDING_LIMIT = 16_384;

export class SortedKeys<K extends number | string> {
  readonly #live = new Map<K, string>();
  #base: K[] = [];
  #delta: K[] = [];
  #pending: K[] = [];
  #runs: K[][] = [];
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
    if (!this.#ghosts.delete(key) && this.#pending.push(key) >= PENDING_LIMIT) this.#slice();
    return true;
  }

  /** Removes `key`; false when absent. */
  delete(key: K): boolean {
    if (!this.#live.delete(key)) return false;
    const d = lowerBound(this.#delta, key);
    if (d < this.#delta.length && this.#delta[d] === key) {
      this.#delta.splice(d, 1);
    } else if (contains(this.#base, key) || this.#runs.some((r) => contains(r, key))) {
      this.#ghosts.add(key);
    }
    // else the key is in `pending`, which drops what is not live when it is sorted.
    return true;
  }

  clear(): void {
    this.#live.clear();
    this.#base = [];
    this.#delta = [];
    this.#pending = [];
    this.#runs = [];
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

  /** The live keys of pending, sorted and unique; pending is emptied. */
  #sortPending(): K[] {
    const fresh = this.#sortKeys(this.#pending.filter((k) => this.#live.has(k)));
    this.#pending = [];
    return dedupeSorted(fresh);
  }

  /** Pending is full: it becomes a run, merged with the runs of about its size. */
  #slice(): void {
    const runs = this.#runs;
    runs.push(this.#sortPending());
    while (runs.length > 1 && runs.at(-2)!.length <= 2 * runs.at(-1)!.length) {
      const last = runs.pop()!;
      runs.push(mergeSorted(runs.pop()!, last));
    }
  }

  #flush(): void {
    if (this.#runs.length > 0) {
      // Smallest first: the merges copy the small runs more often than the large ones.
      let merged = this.#sortPending();
      for (let r = this.#runs.length - 1; r >= 0; r--) merged = mergeSorted(this.#runs[r]!, merged);
      this.#runs = [];
      this.#rebuild(dedupeSorted(merged));
    } else if (this.#pending.length > 0) {
      const unique = this.#sortPending();
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

  /** A new base of base, delta and `extra` (sorted), without ghosts; delta emptied. */
  #rebuild(extra: K[]): void {
    const ghosts = this.#ghosts;
    const keep = (keys: K[]): K[] =>
      ghosts.size === 0 ? keys : keys.filter((k) => !ghosts.has(k));
    this.#base = mergeSorted(mergeSorted(keep(this.#base), this.#delta), keep(extra));
    this.#delta = [];
    ghosts.clear();
  }
}

function contains<K extends number | string>(arr: readonly K[], key: K): boolean {
  const i = lowerBound(arr, key);
  return i < arr.length && arr[i] === key;
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
