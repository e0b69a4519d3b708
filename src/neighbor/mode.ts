// The refresh path in use, and `neighbor.refresh: auto`'s rule for it: managed entries while
// fibkeeper wants at most `neighbor.rateLimit` of them, the legacy path above (the kernel
// probes managed entries in bursts as large as the table; the legacy refresh is paced by the
// rate limit), managed again once the table is down to half of that (no flapping at the
// threshold). docs/neighbor.md, "Why auto switches to the legacy path".
import type { RefreshMode } from './types.js';

export interface RefreshPathParams {
  /** The path to start on (resolveMode of the config and the kernel). */
  initial: RefreshMode;
  /** `auto` on a kernel with managed entries: the path follows the table's size. */
  auto: boolean;
  rateLimit: number;
  /** Desired entries now. */
  size: () => number;
  /** The path was switched (to write the entries of the other path again, count, log). */
  switched(to: RefreshMode, size: number): void;
}

export class RefreshPath {
  readonly #p: RefreshPathParams;
  #now: RefreshMode;

  constructor(p: RefreshPathParams) {
    this.#p = p;
    this.#now = p.initial;
  }

  /** The path in use, as last decided. */
  get mode(): RefreshMode {
    return this.#now;
  }

  /**
   * The path, switched first when `auto` calls for it. Asked before every write and every
   * observed change, so entries are written for the path the table's size calls for.
   */
  current(): RefreshMode {
    if (!this.#p.auto) return this.#now;
    const size = this.#p.size();
    const limit = this.#p.rateLimit;
    if (this.#now === 'managed' && size > limit) this.#switchTo('legacy', size);
    else if (this.#now === 'legacy' && size <= limit / 2) this.#switchTo('managed', size);
    return this.#now;
  }

  #switchTo(to: RefreshMode, size: number): void {
    this.#now = to;
    this.#p.switched(to, size);
  }
}
