// Work the reconciler has scheduled for later: retries (and requeues) by due time, and rows
// waiting for their refresh in the order they were done.
import { Deadlines } from '../sched/index.js';
import type { Row } from './types.js';

export interface RetryEntry<Obj> {
  readonly key: string;
  readonly op: 'update' | 'delete';
  /** The version to apply (update) or the last object the deleted row held (delete). */
  readonly row: Row<Obj>;
  readonly due: number;
}

/**
 * At most one entry per key, earliest due first; among equal due times, the one scheduled
 * first (the one deadline queue of src/sched).
 */
export class RetryQueue<Obj> extends Deadlines<RetryEntry<Obj>> {
  /** Cancels every update retry (a full resync updates every row anyway). */
  cancelUpdates(): void {
    this.cancelWhere((e) => e.op === 'update');
  }
}

export interface RefreshEntry {
  readonly key: string;
  readonly revision: number;
  /** When the row was done; the entry is current while the row's status still says so. */
  readonly at: number;
}

/** FIFO of rows by the time they were done (times only grow, so the head is due first). */
export class RefreshQueue {
  #items: (RefreshEntry | undefined)[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(entry: RefreshEntry): void {
    this.#items.push(entry);
  }

  peek(): RefreshEntry | undefined {
    return this.#items[this.#head];
  }

  shift(): RefreshEntry | undefined {
    const e = this.#items[this.#head];
    if (e === undefined) return undefined;
    this.#items[this.#head++] = undefined;
    if (this.#head === this.#items.length) this.clear();
    else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return e;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}
