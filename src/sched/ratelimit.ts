// A token bucket: `rate` tokens per second, at most `burst` saved up. Pure: time comes from
// an injected clock, nothing sleeps. Used to bound the total rate of retries, re-inserts and
// refreshes, so that the ARP/ND traffic they cause stays bounded however large the table.
import { ConfigError } from '../errors/index.js';

export interface RateLimiterOptions {
  /** Tokens added per second; > 0. */
  rate: number;
  /** Bucket size: the most that can be taken at once after a quiet period; >= 1. */
  burst: number;
  /** Clock in ms (default Date.now). */
  now?: () => number;
}

export class RateLimiter {
  readonly rate: number;
  readonly burst: number;
  readonly #now: () => number;
  #tokens: number;
  #last: number;

  constructor(opts: RateLimiterOptions) {
    if (!(Number.isFinite(opts.rate) && opts.rate > 0)) {
      throw new ConfigError(
        'rate',
        `must be a positive number of tokens per second, got ${opts.rate}`,
      );
    }
    if (!(Number.isFinite(opts.burst) && opts.burst >= 1)) {
      throw new ConfigError('burst', `must be a number >= 1, got ${opts.burst}`);
    }
    this.rate = opts.rate;
    this.burst = opts.burst;
    this.#now = opts.now ?? Date.now;
    this.#tokens = opts.burst;
    this.#last = this.#now();
  }

  #refill(): void {
    const t = this.#now();
    if (t > this.#last) {
      this.#tokens = Math.min(this.burst, this.#tokens + ((t - this.#last) * this.rate) / 1000);
    }
    this.#last = t;
  }

  /** Tokens available now (fractional). */
  available(): number {
    this.#refill();
    return this.#tokens;
  }

  /** Takes n tokens if they are all available; otherwise takes none. */
  tryTake(n = 1): boolean {
    this.#refill();
    if (this.#tokens + 1e-9 < n) return false;
    this.#tokens = Math.max(0, this.#tokens - n);
    return true;
  }

  /** Milliseconds until n tokens are available (0 when they are); Infinity if n > burst. */
  delayMs(n = 1): number {
    if (n > this.burst) return Infinity;
    this.#refill();
    const missing = n - this.#tokens;
    return missing <= 1e-9 ? 0 : Math.ceil((missing * 1000) / this.rate);
  }
}
