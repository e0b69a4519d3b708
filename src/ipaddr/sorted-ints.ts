// SortedKeys (sorted-keys.ts) for 32-bit integer keys — IPv4 addresses — without a
// per-key object: the keys live in sorted Int32Arrays, 4 bytes each, where SortedKeys keeps
// a map of key → text beside its arrays (~45 bytes per key on 64-bit V8: a million
// forwardable IPv4 addresses are ~40 MiB less). The text of a key is made when a query lists
// it. The levels are SortedKeys' (base, delta, pending, runs, ghosts); membership, which the
// map answered, is answered by the levels themselves: a set of the pending keys (at most
// PENDING_LIMIT), then binary searches of delta, base and the runs (a few: their sizes fall
// like the digits of a binary counter). Private to ipaddr; IpRangeIndex builds on it.
import { PENDING_LIMIT } from './sorted-keys.js';

const EMPTY = new Int32Array(0);

export class SortedInts {
  #base: Int32Array = EMPTY;
  #delta: number[] = [];
  /** Keys added since the last query, unsorted; a key deleted since is out of `#pendingSet`. */
  #pending: number[] = [];
  readonly #pendingSet = new Set<number>();
  #runs: Int32Array[] = [];
  /** Keys deleted from base or a run (still in the array until it is rebuilt). */
  readonly #ghosts = new Set<number>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  has(key: number): boolean {
    if (this.#pendingSet.has(key) || contains(this.#delta, key)) return true;
    return this.#inArrays(key) && !this.#ghosts.has(key);
  }

  /** Adds `key`; false (and no change) when already present. */
  add(key: number): boolean {
    if (this.has(key)) return false;
    this.#size++;
    // A ghost comes back where it still is; anything else waits in pending.
    if (this.#ghosts.delete(key)) return true;
    this.#pendingSet.add(key);
    if (this.#pending.push(key) >= PENDING_LIMIT) this.#slice();
    return true;
  }

  /** Removes `key`; false when absent. */
  delete(key: number): boolean {
    if (this.#pendingSet.delete(key)) {
      // left in `#pending`, which drops what is not in the set when it is sorted
      this.#size--;
      return true;
    }
    const d = lowerBound(this.#delta, key);
    if (d < this.#delta.length && this.#delta[d] === key) {
      this.#delta.splice(d, 1);
    } else if (this.#ghosts.has(key) || !this.#inArrays(key)) {
      return false;
    } else {
      this.#ghosts.add(key);
    }
    this.#size--;
    return true;
  }

  clear(): void {
    this.#base = EMPTY;
    this.#delta = [];
    this.#pending = [];
    this.#pendingSet.clear();
    this.#runs = [];
    this.#ghosts.clear();
    this.#size = 0;
  }

  /** The live keys in [lo, hi], in order (every key when no bounds are given). */
  range(lo = -(2 ** 31), hi = 2 ** 31 - 1): number[] {
    this.#flush();
    const out: number[] = [];
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
        out.push(bk!);
      } else {
        j++;
        out.push(dk);
      }
    }
    return out;
  }

  /** In base or a run (ghost or not). */
  #inArrays(key: number): boolean {
    if (contains(this.#base, key)) return true;
    for (const r of this.#runs) if (contains(r, key)) return true;
    return false;
  }

  /** Limit of the delta level: about 8·√n, at least 512 (SortedKeys'). */
  #deltaLimit(): number {
    return Math.max(512, Math.floor(8 * Math.sqrt(this.#base.length)));
  }

  /** The live keys of pending, sorted and unique; pending is emptied. */
  #sortPending(): Int32Array {
    const live = this.#pendingSet;
    const fresh = new Int32Array(live.size);
    let w = 0;
    // A key deleted and added again is in `#pending` twice and in the set once.
    for (const k of this.#pending) {
      if (live.delete(k)) fresh[w++] = k;
    }
    this.#pending = [];
    live.clear();
    return (w === fresh.length ? fresh : fresh.slice(0, w)).sort();
  }

  /** Pending is full: it becomes a run, merged with the runs of about its size. */
  #slice(): void {
    const runs = this.#runs;
    runs.push(this.#sortPending());
    while (runs.length > 1 && runs.at(-2)!.length <= 2 * runs.at(-1)!.length) {
      const last = runs.pop()!;
      runs.push(merge(runs.pop()!, last, undefined));
    }
  }

  #flush(): void {
    if (this.#runs.length > 0) {
      // Smallest first: the merges copy the small runs more often than the large ones.
      let merged = this.#sortPending();
      for (let r = this.#runs.length - 1; r >= 0; r--) {
        merged = merge(this.#runs[r]!, merged, undefined);
      }
      this.#runs = [];
      this.#rebuild(merged);
    } else if (this.#pending.length > 0) {
      const fresh = this.#sortPending();
      if (fresh.length + this.#delta.length <= this.#deltaLimit()) {
        // A few keys (the steady state: one add between route changes): splice them in.
        for (const k of fresh) this.#delta.splice(lowerBound(this.#delta, k), 0, k);
      } else {
        this.#rebuild(fresh);
      }
    }
    if (this.#ghosts.size > this.#deltaLimit()) this.#rebuild(EMPTY);
  }

  /** A new base of base, delta and `extra` (sorted), without ghosts; delta emptied. */
  #rebuild(extra: Int32Array): void {
    const ghosts = this.#ghosts.size === 0 ? undefined : this.#ghosts;
    const withDelta = merge(this.#base, this.#delta, ghosts);
    this.#base = merge(withDelta, extra, ghosts);
    this.#delta = [];
    this.#ghosts.clear();
  }
}

function contains(arr: ArrayLike<number>, key: number): boolean {
  const i = lowerBound(arr, key);
  return i < arr.length && arr[i] === key;
}

/** First index whose key is ≥ `key`. */
function lowerBound(arr: ArrayLike<number>, key: number): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `a` and `b` (sorted, disjoint) merged into one new array, leaving out the keys of `skip`. */
function merge(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  skip: Set<number> | undefined,
): Int32Array {
  const out = new Int32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let w = 0;
  while (i < a.length || j < b.length) {
    const k = j >= b.length || (i < a.length && a[i]! < b[j]!) ? a[i++]! : b[j++]!;
    if (skip === undefined || !skip.has(k)) out[w++] = k;
  }
  return w === out.length ? out : out.slice(0, w);
}
