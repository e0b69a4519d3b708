// Write pacing: the kernel sends an event for each neighbor entry it creates or resolves,
// and a writer that runs far ahead of its own events overflows the event socket (then the
// whole table is dumped again: at 1,000,000 entries, seconds of work). The pacer keeps the
// events owed (those the writes caused, less the events read since) and makes a write wait
// only when they would exceed what the socket holds (`budget`).
//
// While a burst of large batches whose events fit the budget is written, the event socket
// is not read at all (the kernel queues the events): the writes go out first, and the
// events (one per new legacy entry, which only confirm what was written) are read in one
// go when the writer pauses (waiting for next-hop lookups, say) or is done. Read in one go,
// 100,000 entries converged ~8% sooner than with the events read as they came.
//
// A burst larger than the budget is read as it is written, from the batch that would
// exceed the budget until the burst is over: the kernel writes go out on the socket's send
// thread (NetlinkSocket.submit), so the reading overlaps them, where a paused socket left
// the writer waiting for its events batch after batch (1,000,000 entries: 12.1-13.1 s read
// as written, 14.0-21.5 s paused; docs/neighbor.md). Each batch still waits while more
// than the budget is owed, until half of it is, for at most PACE_MAX_MS.
//
// What the socket already holds counts too (`queued`, the kernel's own count): events
// nobody wrote (a table's entries going STALE in one tick of the kernel's timer wheel:
// ~250,000 at once, 20 s after 1,000,000 were written; a backlog left while the agent was
// stopped) fill the socket as the burst's would. A burst that would pause reading over
// them is read as it is written instead (docs/neighbor.md, "The STALE wave").
export interface WritePacerParams {
  /** Events caused by the writes that may be unread at most; 0: never wait, never pause. */
  budget: number;
  /** Neighbor events read so far (a count that only grows). */
  read(): number;
  /** Events waiting in the event socket now, unread, whoever caused them (default 0). */
  queued?(): number;
  /** Overflows of the event socket so far: each settles everything owed (a dump follows). */
  overflows?(): number;
  /** Stops (false) or resumes (true) reading the event socket. */
  reading?(on: boolean): void;
  /** Runs `fn` once the current turn of the event loop is over (default setImmediate). */
  later?(fn: () => void): void;
  /** Lets the event loop run (and read) once (default: a setImmediate). */
  turn?(): Promise<void>;
  /** Milliseconds, for the wait's limit (default Date.now). */
  now?(): number;
}

/** Batches that create fewer entries than this do not pause the reading. */
export const PAUSE_FROM = 1024;
/** The longest wait for events: they may have been lost (an overflow), or never come. */
export const PACE_MAX_MS = 200;
/**
 * The longest reading stays paused through a burst: events nobody wrote (entries of the
 * burst's first seconds going STALE, refreshes) fill the socket too, and the pacer does not
 * count them. 1,000,000 entries written in ~50 s on a loaded machine overflowed it 3 times
 * with reading paused throughout.
 */
export const PAUSE_MAX_MS = 100;

export class WritePacer {
  readonly #p: WritePacerParams;
  #owedEvents = 0;
  #readAt: number;
  #overflowsAt: number;
  #paused = false;
  /** Bumped by every large batch: an end of burst scheduled before it is void. */
  #generation = 0;
  /** This burst has exceeded the budget: it is read as it is written until it is over. */
  #overBudget = false;
  /** When reading was paused (p.now). */
  #pausedAt = 0;

  constructor(p: WritePacerParams) {
    this.#p = p;
    this.#readAt = p.read();
    this.#overflowsAt = p.overflows?.() ?? 0;
  }

  /** Events caused by the writes and not read yet (as far as the pacer can tell). */
  get owed(): number {
    const read = this.#p.read();
    const overflows = this.#p.overflows?.() ?? 0;
    if (overflows !== this.#overflowsAt) {
      this.#overflowsAt = overflows;
      this.#owedEvents = 0;
    }
    this.#owedEvents = Math.max(0, this.#owedEvents - Math.max(0, read - this.#readAt));
    this.#readAt = read;
    return this.#owedEvents;
  }

  /** Whether the event socket's reading is paused (a burst of writes is under way). */
  get readingPaused(): boolean {
    return this.#paused;
  }

  /**
   * A batch that creates `entries` new entries, and causes `events` events, is about to be
   * written. Its events are owed from now on: those read while it is written (the writes go
   * out on the send thread, and a burst over the budget is read as it is written) settle
   * them. A large batch pauses the reading of events until the burst is over, unless the
   * burst has exceeded the budget.
   */
  writing(entries: number, events: number = entries): void {
    const budget = this.#p.budget;
    if (budget <= 0) return;
    const before = this.owed;
    this.#owedEvents = before + events;
    if (entries < PAUSE_FROM || this.#p.reading === undefined) return;
    // What will wait in the socket: what is queued now (the owed events that have arrived
    // among it) or what is owed, whichever is more, and this batch's events.
    const ahead = Math.max(before, this.#p.queued?.() ?? 0) + events;
    if (this.#overBudget || ahead > budget) {
      this.#generation++;
      this.#overBudget = true;
      this.#setReading(true);
      return;
    }
    // Paused for long: the resume scheduled by the last batch stands (events get read
    // between this batch's writes), and the next batch pauses afresh.
    if (this.#paused && this.#now() - this.#pausedAt >= PAUSE_MAX_MS) return;
    this.#generation++;
    this.#setReading(false);
  }

  /** Whether the burst under way has exceeded the budget (read as it is written). */
  get overBudget(): boolean {
    return this.#overBudget;
  }

  /**
   * The batch announced by writing() was written; `notCaused` of its events will not come
   * (its failed deletes). Resolves once what is owed fits the budget.
   */
  async written(notCaused = 0): Promise<void> {
    const budget = this.#p.budget;
    if (budget <= 0) return;
    this.#owedEvents = Math.max(0, this.owed - notCaused);
    if (this.#owedEvents > budget) {
      // Read down to half the budget, so that the next wait is a few batches away.
      this.#setReading(true);
      const now = (): number => this.#now();
      const turn = this.#p.turn ?? (() => new Promise<void>((r) => setImmediate(r)));
      const until = now() + PACE_MAX_MS;
      // The events of a large table come at the pace of its ARP resolution: what is still
      // owed after the limit is waited for by the next batch.
      while (this.owed > budget / 2 && now() < until) await turn();
    }
    this.#resumeLater();
  }

  /**
   * Once this turn is over, unless another large batch starts first, the burst is over:
   * reading resumes.
   */
  #resumeLater(): void {
    if (!this.#paused && !this.#overBudget) return;
    const gen = this.#generation;
    const later = this.#p.later ?? ((fn: () => void) => setImmediate(fn));
    later(() => {
      if (gen !== this.#generation) return;
      this.#overBudget = false;
      this.#setReading(true);
    });
  }

  #now(): number {
    return this.#p.now?.() ?? Date.now();
  }

  #setReading(on: boolean): void {
    if (this.#paused === !on) return;
    this.#paused = !on;
    if (!on) this.#pausedAt = this.#now();
    this.#p.reading?.(on);
  }
}
