// Initialization of the subsystem's plain tables (the forwardable IPs, the observed
// neighbors): the statedb Initializable contract without a statedb Table underneath.
import { InvalidArgumentError } from '../errors/index.js';
import type { Initializable } from '../statedb/index.js';

/**
 * Initialized once every registered initializer has reported done (at once when none was
 * registered). Registering after that throws: consumers may already have relied on it.
 */
export class Initializers implements Initializable {
  readonly name: string;
  readonly #pending = new Set<{ readonly name: string }>();
  #latched = false;
  #waiters: { resolve(): void; reject(reason: unknown): void }[] = [];

  constructor(name: string) {
    this.name = name;
  }

  get initialized(): boolean {
    return this.#pending.size === 0;
  }

  /** Names still pending (for status). */
  pendingNames(): string[] {
    return [...this.#pending].map((t) => t.name);
  }

  /** Returns the (idempotent) done function of a new initializer. */
  register(name: string): () => void {
    if (this.#latched) {
      throw new InvalidArgumentError(
        `${this.name}: initializer ${name} registered after the table was initialized`,
      );
    }
    const token = { name };
    this.#pending.add(token);
    return () => {
      if (!this.#pending.delete(token) || this.#pending.size > 0) return;
      this.#latched = true;
      const w = this.#waiters;
      this.#waiters = [];
      for (const x of w) x.resolve();
    };
  }

  waitInitialized(signal?: AbortSignal): Promise<void> {
    if (this.initialized) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = (): void => {
        this.#waiters = this.#waiters.filter((x) => x !== entry);
        reject(signal?.reason);
      };
      const entry = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      this.#waiters.push(entry);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
