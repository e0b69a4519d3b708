// Bursts summarized: the first occurrence after a quiet window is reported at once, every
// further one within the window only in a summary at its end (how many, a few examples), and
// the summaries go on while occurrences do. A load of a million entries is thus a handful
// of events, and each occurrence costs an addition (its examples are made only while the
// summary has room for them). Time from the injected clock.
import { Timer, type Clock } from '../sched/index.js';
import type { EventFields, EventSink, EventType } from './types.js';

/** Examples kept per event. */
export const SAMPLE_SIZE = 5;

export interface BurstParams {
  sink: EventSink;
  clock: Clock;
  type: EventType;
  /** Length of a summary window, ms. */
  windowMs: number;
  /** The event's summary line for `count` occurrences and their examples. */
  describe(count: number, sample: readonly string[]): string;
  /** Fields added to every event of this burst. */
  fields?: EventFields;
}

export class Burst {
  readonly #p: BurstParams;
  #timer: Timer | undefined;
  #count = 0;
  #sample: string[] = [];

  constructor(p: BurstParams) {
    this.#p = p;
  }

  /**
   * `n` occurrences; `examples(max)` names up to `max` of them (called only while the
   * summary wants more examples).
   */
  add(n: number, examples?: (max: number) => readonly string[]): void {
    if (n <= 0) return;
    const room = SAMPLE_SIZE - this.#sample.length;
    if (room > 0 && examples !== undefined) {
      for (const x of examples(room).slice(0, room)) this.#sample.push(x);
    }
    this.#count += n;
    if (this.#timer?.pending !== true) {
      this.#flush();
      this.#open();
    }
  }

  /** Reports what is pending and stops the window. Idempotent. */
  stop(): void {
    this.#timer?.cancel();
    this.#flush();
  }

  #open(): void {
    this.#timer ??= new Timer(this.#p.clock, { unref: true });
    this.#timer.start(this.#p.windowMs, () => {
      if (this.#flush()) this.#open(); // occurrences went on: keep summarizing
    });
  }

  #flush(): boolean {
    if (this.#count === 0) return false;
    const count = this.#count;
    const sample = this.#sample;
    this.#count = 0;
    this.#sample = [];
    this.#p.sink.emit(this.#p.type, this.#p.describe(count, sample), {
      ...this.#p.fields,
      count,
      sample,
    });
    return true;
  }
}
