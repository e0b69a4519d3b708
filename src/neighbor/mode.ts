// The refresh path in use, and `neighbor.refresh: auto`'s rule for it: managed entries while
// fibkeeper wants at most `neighbor.rateLimit` of them, the legacy path above (the kernel
// probes managed entries in bursts as large as the table; the legacy refresh is paced by the
// rate limit), managed again once the table is down to half of that (no flapping at the
// threshold). A forced `managed` keeps its path whatever the size, but says when it runs more
// than `rateLimit` entries (the same hysteresis): the kernel's bursts are then unbounded, and
// at 100,000 entries most of them were unusable. docs/neighbor.md, "Why auto switches to the
// legacy path".
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
  /** A forced `managed` went over `rateLimit` entries (true) or back to half of it (false). */
  overLimit?(over: boolean, size: number): void;
}

export class RefreshPath {
  readonly #p: RefreshPathParams;
  #now: RefreshMode;
  #over = false;

  constructor(p: RefreshPathParams) {
    this.#p = p;
    this.#now = p.initial;
  }

  /** The path in use, as last decided. */
  get mode(): RefreshMode {
    return this.#now;
  }

  /**
   * A forced `managed` with more than `rateLimit` desired entries (until they are down to half
   * of it): nothing bounds the kernel's re-probing bursts.
   */
  get overLimit(): boolean {
    return this.#over;
  }

  /**
   * The path, switched first when `auto` calls for it. Asked before every write and every
   * observed change, so entries are written for the path the table's size calls for.
   */
  current(): RefreshMode {
    const size = this.#p.size();
    const limit = this.#p.rateLimit;
    if (!this.#p.auto) {
      if (this.#now === 'managed') this.#checkOver(size, limit);
      return this.#now;
    }
    if (this.#now === 'managed' && size > limit) this.#switchTo('legacy', size);
    else if (this.#now === 'legacy' && size <= limit / 2) this.#switchTo('managed', size);
    return this.#now;
  }

  #checkOver(size: number, limit: number): void {
    const over = this.#over ? size > limit / 2 : size > limit;
    if (over === this.#over) return;
    this.#over = over;
    this.#p.overLimit?.(over, size);
  }

  #switchTo(to: RefreshMode, size: number): void {
    this.#now = to;
    this.#p.switched(to, size);
  }
}
