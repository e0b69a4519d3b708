// Timers for many keys with one clock timer: each key has at most one due time; when the
// earliest is reached, every key that is due is handed to `fire` in due order. Keys due
// together (a burst for 1,000 IPs assigned at once) fire in one callback. Pure: time and
// timers come from the injected clock.
import type { Clock, TimerHandle } from '../statedb/index.js';

interface Slot {
  due: number;
  seq: number;
  key: string;
}

export class KeyScheduler {
  readonly #clock: Clock;
  readonly #fire: (keys: string[]) => void;
  /** The live slot of each key; heap slots that are not live are skipped. */
  readonly #live = new Map<string, Slot>();
  readonly #heap: Slot[] = [];
  #seq = 0;
  #timer: TimerHandle | undefined;
  #timerDue = Infinity;
  #stopped = false;

  constructor(clock: Clock, fire: (keys: string[]) => void) {
    this.#clock = clock;
    this.#fire = fire;
  }

  /** Schedules `key` at `due` (clock ms), replacing its earlier due time if any. */
  at(key: string, due: number): void {
    if (this.#stopped) return;
    const slot: Slot = { due, seq: this.#seq++, key };
    this.#live.set(key, slot);
    this.#push(slot);
    if (this.#heap.length > 2 * this.#live.size + 64) this.#compact();
    this.#arm();
  }

  /** Cancels `key`. Cancelling a key that is not scheduled is not an error. */
  cancel(key: string): void {
    this.#live.delete(key);
    if (this.#live.size === 0) this.#disarm();
  }

  has(key: string): boolean {
    return this.#live.has(key);
  }

  dueOf(key: string): number | undefined {
    return this.#live.get(key)?.due;
  }

  get size(): number {
    return this.#live.size;
  }

  /** Cancels everything; later calls to at() do nothing. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#live.clear();
    this.#heap.length = 0;
    this.#disarm();
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.#timerDue = Infinity;
    const now = this.#clock.now();
    const due: string[] = [];
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || top.due > now) break;
      this.#pop();
      if (this.#live.get(top.key) !== top) continue; // replaced or cancelled
      this.#live.delete(top.key);
      due.push(top.key);
    }
    try {
      if (due.length > 0) this.#fire(due);
    } finally {
      this.#arm();
    }
  }

  #arm(): void {
    if (this.#stopped) return;
    // Drop dead slots at the top so the timer is set for a live one.
    for (let top = this.#heap[0]; top !== undefined && this.#live.get(top.key) !== top;) {
      this.#pop();
      top = this.#heap[0];
    }
    const top = this.#heap[0];
    if (top === undefined) return this.#disarm();
    if (this.#timer !== undefined && this.#timerDue <= top.due) return;
    this.#disarm();
    this.#timerDue = top.due;
    const delay = Math.max(0, top.due - this.#clock.now());
    this.#timer = this.#clock.setTimeout(() => this.#onTimer(), delay);
    const t = this.#timer as { unref?: () => void };
    t.unref?.();
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Infinity;
  }

  /** Rebuilds the heap from the live slots (dead ones pile up when keys are rescheduled). */
  #compact(): void {
    this.#heap.length = 0;
    for (const s of this.#live.values()) this.#push(s);
  }

  // --- binary min-heap on (due, seq) ------------------------------------------------------
  #less(a: Slot, b: Slot): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  #push(s: Slot): void {
    const h = this.#heap;
    h.push(s);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
