// Test doubles for the root-free tests of src/cluster: a clock that moves only when told
// to (advance fires due timers in order; jump moves time without firing any, as a stopped
// process sees it), and a driver that lets promises settle between timer steps.
import type { Clock, TimerHandle } from '../sched/index.js';

interface Timer {
  due: number;
  seq: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  #now = 1_000_000;
  #seq = 0;
  readonly #timers = new Set<Timer>();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t = { due: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.add(t);
    return t;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as Timer);
  }

  /** Moves time by `ms` without running any timer (they run late, at the next advance). */
  jump(ms: number): void {
    this.#now += ms;
  }

  #next(end: number): Timer | undefined {
    let next: Timer | undefined;
    for (const t of this.#timers) {
      if (t.due <= end && (!next || t.due < next.due || (t.due === next.due && t.seq < next.seq)))
        next = t;
    }
    return next;
  }

  /**
   * Moves time forward by `ms`, firing due timers in order and letting promises settle
   * (a few macrotask turns) after each one.
   */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    await settle();
    for (;;) {
      const t = this.#next(end);
      if (!t) break;
      this.#timers.delete(t);
      this.#now = Math.max(this.#now, t.due);
      t.fn();
      await settle();
    }
    this.#now = end;
    await settle();
  }
}

/** Lets queued microtasks and a few macrotask turns run. */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}
