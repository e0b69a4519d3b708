// Timers on the injected clock. KeyScheduler: timers for many keys with one clock timer; each
// key has at most one due time; when the earliest is reached, every key that is due is handed
// to `fire` in due order (equal due times in the order they were scheduled). Keys due
// together (a burst for 1,000 IPs assigned at once) fire in one callback. Periodic: one
// callback again and again, each run a period after the previous one ended.
import type { Clock, TimerHandle } from './clock.js';
import { Deadlines } from './deadlines.js';
import { unref, type TimerOptions } from './timer.js';

export interface KeySchedulerOptions {
  /** Keys may be scheduled, but nothing fires until start() (default: running at once). */
  paused?: boolean;
}

export class KeyScheduler {
  readonly #clock: Clock;
  readonly #fire: (keys: string[]) => void;
  readonly #due = new Deadlines();
  #timer: TimerHandle | undefined;
  #timerDue = Infinity;
  #paused: boolean;
  #stopped = false;

  constructor(clock: Clock, fire: (keys: string[]) => void, opts: KeySchedulerOptions = {}) {
    this.#clock = clock;
    this.#fire = fire;
    this.#paused = opts.paused === true;
  }

  /** Starts the timer of a scheduler made paused: keys due meanwhile fire now. Idempotent. */
  start(): void {
    this.#paused = false;
    this.#arm();
  }

  /** Schedules `key` at `due` (clock ms), replacing its earlier due time if any. */
  at(key: string, due: number): void {
    if (this.#stopped) return;
    this.#due.schedule({ key, due });
    this.#arm();
  }

  /** Cancels `key`. Cancelling a key that is not scheduled is not an error. */
  cancel(key: string): void {
    this.#due.cancel(key);
    if (this.#due.size === 0) this.#disarm();
  }

  has(key: string): boolean {
    return this.#due.has(key);
  }

  dueOf(key: string): number | undefined {
    return this.#due.get(key)?.due;
  }

  get size(): number {
    return this.#due.size;
  }

  /** Cancels everything; later calls to at() do nothing. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#due.clear();
    this.#disarm();
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.#timerDue = Infinity;
    const due = this.#due.takeDue(this.#clock.now()).map((e) => e.key);
    try {
      if (due.length > 0) this.#fire(due);
    } finally {
      this.#arm();
    }
  }

  #arm(): void {
    if (this.#stopped || this.#paused) return;
    const next = this.#due.next();
    if (next === Infinity) return this.#disarm();
    if (this.#timer !== undefined && this.#timerDue <= next) return;
    this.#disarm();
    this.#timerDue = next;
    this.#timer = this.#clock.setTimeout(
      () => this.#onTimer(),
      Math.max(0, next - this.#clock.now()),
    );
    unref(this.#timer);
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Infinity;
  }
}

/**
 * Runs `fn` every `periodMs` between start() and stop(), each run a period after the
 * previous one ended (a slow run delays the next, runs never overlap).
 */
export class Periodic {
  readonly #clock: Clock;
  readonly #periodMs: number;
  readonly #fn: () => void;
  readonly #unref: boolean;
  #timer: TimerHandle | undefined;
  #running = false;

  constructor(clock: Clock, periodMs: number, fn: () => void, opts: TimerOptions = {}) {
    this.#clock = clock;
    this.#periodMs = periodMs;
    this.#fn = fn;
    this.#unref = opts.unref === true;
  }

  get running(): boolean {
    return this.#running;
  }

  /** Idempotent. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#arm();
  }

  /** Idempotent; a later start() begins a new period. */
  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    if (!this.#running || this.#timer !== undefined) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      try {
        this.#fn();
      } finally {
        this.#arm();
      }
    }, this.#periodMs);
    if (this.#unref) unref(this.#timer);
  }
}
