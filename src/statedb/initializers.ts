// The initializers of a table (or of anything that waits for its sources): things that must
// finish before it counts as initialized (the first dump, a config load). Once the last one
// has finished it stays initialized, and registering another throws.
import { InvalidArgumentError } from '../errors/index.js';
import { abortable, deferred, type Deferred } from './util.js';

export class Initializers {
  readonly #what: string;
  readonly #pending = new Set<{ readonly name: string }>();
  #latched = false;
  #waiter: Deferred<void> | undefined = undefined;

  /** `what` names the owner in errors ("table neighbors"). */
  constructor(what: string) {
    this.#what = what;
  }

  /**
   * Registers something that must finish first. Register every initializer before consumers
   * start. Returns the (idempotent) done function.
   */
  register(name: string): () => void {
    if (this.#latched) {
      throw new InvalidArgumentError(
        `${this.#what}: initializer ${name} registered after the table was initialized`,
      );
    }
    const token = { name };
    this.#pending.add(token);
    return () => {
      if (!this.#pending.delete(token) || this.#pending.size > 0) return;
      this.#latched = true;
      const w = this.#waiter;
      this.#waiter = undefined;
      w?.resolve();
    };
  }

  /** True when none is pending (none registered: done). */
  get done(): boolean {
    return this.#pending.size === 0;
  }

  pending(): string[] {
    return [...this.#pending].map((t) => t.name);
  }

  /** Resolves once done; rejects with the signal's reason if it aborts first. */
  wait(signal?: AbortSignal): Promise<void> {
    if (this.done) return Promise.resolve();
    this.#waiter ??= deferred<void>();
    return abortable(this.#waiter.promise, signal);
  }
}
