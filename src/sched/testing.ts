// The fake clock of every root-free test: time moves only when told to. advance() fires the
// timers that come due in (due, creation) order; advanceAsync() does the same and lets
// promises settle between timers (for code that awaits between its timers); jump() moves
// time without firing any, as a stopped process sees it. turns() lets other promises and
// events interleave.
import type { Clock, TimerHandle } from './clock.js';

interface FakeTimer {
  due: number;
  seq: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  #now = 1_000_000;
  #seq = 0;
  readonly #timers = new Set<FakeTimer>();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t = { due: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.add(t);
    return t;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as FakeTimer);
  }

  /** Timers set and neither fired nor cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time by `ms` without running any timer (they run late, at the next advance). */
  jump(ms: number): void {
    this.#now += ms;
  }

  /** Moves time forward by `ms`, firing every timer that becomes due, in order. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (let t = this.#next(end); t !== undefined; t = this.#next(end)) this.#run(t);
    this.#now = end;
  }

  /**
   * Moves time forward by `ms` like advance(), letting promises settle (a few macrotask
   * turns) before the first timer and after each one.
   */
  async advanceAsync(ms: number): Promise<void> {
    const end = this.#now + ms;
    await turns(3);
    for (let t = this.#next(end); t !== undefined; t = this.#next(end)) {
      this.#run(t);
      await turns(3);
    }
    this.#now = end;
    await turns(3);
  }

  #next(end: number): FakeTimer | undefined {
    let next: FakeTimer | undefined;
    for (const t of this.#timers) {
      if (t.due <= end && (!next || t.due < next.due || (t.due === next.due && t.seq < next.seq)))
        next = t;
    }
    return next;
  }

  #run(t: FakeTimer): void {
    this.#timers.delete(t);
    this.#now = Math.max(this.#now, t.due);
    t.fn();
  }
}

/** Resolves after `n` macrotask turns (lets other promises and events interleave). */
export async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}
