// Work the reconciler has scheduled for later: retries (and requeues) by due time, and rows
// waiting for their refresh in the order they were done.
import { MinHeap } from './heap.js';
import type { Row } from './types.js';

export interface RetryEntry<Obj> {
  readonly key: string;
  readonly op: 'update' | 'delete';
  /** The version to apply (update) or the last object the deleted row held (delete). */
  readonly row: Row<Obj>;
  readonly due: number;
}

/** An entry with the order in which it was scheduled, to break ties between equal due times. */
interface Queued<Obj> extends RetryEntry<Obj> {
  readonly seq: number;
}

/** Earliest due first; among equal due times, the one scheduled first. */
function newHeap<Obj>(): MinHeap<Queued<Obj>> {
  return new MinHeap<Queued<Obj>>((a, b) => (a.due === b.due ? a.seq < b.seq : a.due < b.due));
}

/**
 * At most one entry per key. Cancelling only forgets the key; the heap drops entries that
 * are no longer current when they reach the top (and is rebuilt if they pile up).
 */
export class RetryQueue<Obj> {
  private readonly byKey = new Map<string, Queued<Obj>>();
  private heap = newHeap<Obj>();
  private seq = 0;

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): RetryEntry<Obj> | undefined {
    return this.byKey.get(key);
  }

  schedule(entry: RetryEntry<Obj>): void {
    const queued: Queued<Obj> = { ...entry, seq: this.seq++ };
    this.byKey.set(entry.key, queued);
    this.heap.push(queued);
    if (this.heap.size > 2 * this.byKey.size + 1024) this.rebuild();
  }

  cancel(key: string): void {
    if (this.byKey.size > 0) this.byKey.delete(key);
  }

  /** Cancels every update retry (a full resync updates every row anyway). */
  cancelUpdates(): void {
    for (const [key, e] of this.byKey) if (e.op === 'update') this.byKey.delete(key);
  }

  /** The current entry with the earliest due time. */
  peek(): RetryEntry<Obj> | undefined {
    for (;;) {
      const top = this.heap.peek();
      if (top === undefined || this.byKey.get(top.key) === top) return top;
      this.heap.pop();
    }
  }

  /** Removes and returns the current entry with the earliest due time. */
  take(): RetryEntry<Obj> | undefined {
    const top = this.peek();
    if (top === undefined) return undefined;
    this.heap.pop();
    this.byKey.delete(top.key);
    return top;
  }

  private rebuild(): void {
    this.heap = newHeap<Obj>();
    for (const e of this.byKey.values()) this.heap.push(e);
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
  private items: (RefreshEntry | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(entry: RefreshEntry): void {
    this.items.push(entry);
  }

  peek(): RefreshEntry | undefined {
    return this.items[this.head];
  }

  shift(): RefreshEntry | undefined {
    const e = this.items[this.head];
    if (e === undefined) return undefined;
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) this.clear();
    else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return e;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
