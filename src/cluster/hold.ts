// The seam's output: the set of cluster IPs this node may hold now, with the time by which
// it must have dropped them unless a newer set arrives. Listeners see every set in order;
// a slow listener gets the newest set next (sets in between are skipped, never reordered).
// `applied()` resolves once the newest set has been handled by every listener, which is
// how a release waits for the addresses to be gone before it deletes the ownership key.

export type HoldReason =
  | 'start' // the component started: nothing is held yet (drop leftovers)
  | 'claim' // this node claimed an IP
  | 'release' // this node gave an IP up (handover, IP deleted, not eligible)
  | 'renew' // the lease was renewed: the deadline moved
  | 'restore' // a late keep-alive answer proved the lease valid again
  | 'fence' // the lease can no longer be proven valid: drop everything now
  | 'grace' // past the lease's proof, held on the peers' promises (etcd out of reach for all)
  | 'lost' // etcd says the lease is gone (so is its ownership)
  | 'sync' // the view of the cluster changed
  | 'stop'; // the component is stopping

export interface HoldSet {
  /** Canonical IPs this node may hold now, sorted. */
  readonly ips: readonly string[];
  /**
   * Clock time (ms, the component's clock: CLOCK_MONOTONIC by default) by which every IP
   * must have stopped being held unless a newer set extends it. −Infinity when `ips` is empty.
   */
  readonly deadline: number;
  readonly reason: HoldReason;
  /** Clock time at which the set was computed. */
  readonly at: number;
}

/** Takes a hold set; a returned promise means "not applied yet" (addresses being removed). */
export type HoldListener = (set: HoldSet) => void | Promise<void>;

export class HoldPublisher {
  #current: HoldSet;
  readonly #listeners = new Set<HoldListener>();
  #dirty = false;
  #draining: Promise<void> | undefined;
  readonly #onError: (err: unknown) => void;

  constructor(initial: HoldSet, onError: (err: unknown) => void) {
    this.#current = initial;
    this.#onError = onError;
  }

  get current(): HoldSet {
    return this.#current;
  }

  subscribe(fn: HoldListener): () => void {
    this.#listeners.add(fn);
    return () => void this.#listeners.delete(fn);
  }

  /** Publishes a new set (listeners are called from a microtask, in order). */
  publish(set: HoldSet): void {
    this.#current = set;
    this.#dirty = true;
    this.#draining ??= this.#drain();
  }

  async #drain(): Promise<void> {
    await Promise.resolve();
    while (this.#dirty) {
      this.#dirty = false;
      const set = this.#current;
      const pending: Promise<void>[] = [];
      for (const fn of this.#listeners) {
        try {
          const r = fn(set);
          if (r) pending.push(r.catch(this.#onError));
        } catch (err) {
          this.#onError(err);
        }
      }
      if (pending.length > 0) await Promise.all(pending);
    }
    this.#draining = undefined;
  }

  /** Resolves once every listener has handled the newest set. */
  async applied(): Promise<void> {
    while (this.#draining) await this.#draining;
  }
}

export function sameIps(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
