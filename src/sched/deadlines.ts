// Keys due at times: at most one entry per key, taken earliest due first and, among equal
// due times, in the order they were scheduled. A binary min-heap with lazy deletion: the
// map says which entry of a key is current; replaced and cancelled entries are dropped when
// they reach the top, and the heap is rebuilt from the map if they pile up. Pure: no clock,
// no timers (scheduler.ts adds those).

/** What is scheduled: a key and its due time (clock ms); entries may carry more. */
export interface Deadline {
  readonly key: string;
  readonly due: number;
}

interface Slot<E> {
  readonly due: number;
  /** Scheduling order, to break ties between equal due times. */
  readonly seq: number;
  readonly entry: E;
}

/** Dead slots the heap may hold beyond twice the live ones before it is rebuilt. */
const SLACK = 1024;

export class Deadlines<E extends Deadline = Deadline> {
  readonly #byKey = new Map<string, Slot<E>>();
  #heap: Slot<E>[] = [];
  #seq = 0;

  /** Keys scheduled. */
  get size(): number {
    return this.#byKey.size;
  }

  /** The current entry of `key`. */
  get(key: string): E | undefined {
    return this.#byKey.get(key)?.entry;
  }

  has(key: string): boolean {
    return this.#byKey.has(key);
  }

  /** Schedules `entry`, replacing the key's earlier entry if any. */
  schedule(entry: E): void {
    const slot: Slot<E> = { due: entry.due, seq: this.#seq++, entry };
    this.#byKey.set(entry.key, slot);
    this.#push(slot);
    if (this.#heap.length > 2 * this.#byKey.size + SLACK) this.#rebuild();
  }

  /** Cancels `key`. Cancelling a key that is not scheduled is not an error. */
  cancel(key: string): void {
    if (this.#byKey.size > 0) this.#byKey.delete(key);
  }

  /** Cancels every entry for which `pred` holds. */
  cancelWhere(pred: (entry: E) => boolean): void {
    for (const [key, slot] of this.#byKey) if (pred(slot.entry)) this.#byKey.delete(key);
  }

  /** The current entry with the earliest due time. */
  peek(): E | undefined {
    return this.#top()?.entry;
  }

  /** The earliest due time, or Infinity when nothing is scheduled. */
  next(): number {
    return this.#top()?.due ?? Infinity;
  }

  /** Removes and returns the current entry with the earliest due time. */
  take(): E | undefined {
    const top = this.#top();
    if (top === undefined) return undefined;
    this.#pop();
    this.#byKey.delete(top.entry.key);
    return top.entry;
  }

  /** Removes and returns the entries due at or before `now`, in order. */
  takeDue(now: number): E[] {
    const out: E[] = [];
    for (let top = this.#top(); top !== undefined && top.due <= now; top = this.#top()) {
      this.#pop();
      this.#byKey.delete(top.entry.key);
      out.push(top.entry);
    }
    return out;
  }

  clear(): void {
    this.#byKey.clear();
    this.#heap = [];
  }

  /** The current top slot; dead slots above it are dropped. */
  #top(): Slot<E> | undefined {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || this.#byKey.get(top.entry.key) === top) return top;
      this.#pop();
    }
  }

  #rebuild(): void {
    this.#heap = [];
    for (const s of this.#byKey.values()) this.#push(s);
  }

  // --- binary min-heap on (due, seq) ------------------------------------------------------

  #push(slot: Slot<E>): void {
    const h = this.#heap;
    h.push(slot);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const up = h[parent]!;
      if (!less(slot, up)) break;
      h[i] = up;
      i = parent;
    }
    h[i] = slot;
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && less(h[r]!, h[l]!) ? r : l;
      const child = h[c]!;
      if (!less(child, last)) break;
      h[i] = child;
      i = c;
    }
    h[i] = last;
  }
}

function less<E>(a: Slot<E>, b: Slot<E>): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}
