// Reconciler: makes a target (the kernel) match a table, through injected idempotent ops.
//
// One round at a time. A round takes the table's changes since the previous round (changes
// committed during a round wait for the next one), applies deletes then updates in batches,
// runs the retries, requeues and refreshes that are due (through the optional rate limiter),
// and prunes when asked to and only once the table and every input are initialized. Between
// rounds the loop sleeps until the table changes, an input initializes, a timer comes due, or
// a trigger or stop() wakes it.
//
// Status: the result of each update is written to the row's status in the table with
// setStatus(key, revision, …) — a compare-and-set on the revision that is not a table write,
// so the reconciler never sees its own status writes as desired changes, and a result for an
// old version never marks a newer one done.
import { ClosedError, describeError, FibkeeperError } from '../errors/index.js';
import { silentLogger, type Logger } from '../log/index.js';
import { systemClock, Timer, type Clock, type RateLimiter } from '../sched/index.js';
import { backoffMs, resolveConfig, type ReconcilerConfig } from './config.js';
import { Applier, type Failure } from './apply.js';
import {
  noopMetrics,
  type Health,
  type HealthError,
  type Operations,
  type ReconcilerMetrics,
} from './ops.js';
import type { ChangeIterator, Table } from './table.js';
import type { Change, Initializable, Row } from './types.js';
import { abortable, deferred, type Deferred } from './util.js';

/** Why a wait of the loop ends: it woke (see #waitForWork). */
const WOKEN = new Error('reconciler woke');

export interface ReconcilerParams<Obj> {
  table: Table<Obj>;
  ops: Operations<Obj>;
  /** For logs, metrics and health (default: the table's name). */
  name?: string;
  /** Overrides of defaultOptions(). */
  config?: Partial<ReconcilerConfig>;
  /** Dotted prefix for option names in ConfigErrors (default "reconciler"). */
  configPath?: string;
  /** Other tables the desired state is computed from: prune waits for them too. */
  inputs?: readonly Initializable[];
  metrics?: ReconcilerMetrics;
  clock?: Clock;
  /** Bounds the total rate of retries, requeues and refreshes (not of new changes). */
  limiter?: RateLimiter;
  log?: Logger;
}

const PRUNE_KEY = '(prune)';
const noop = (): void => undefined;

export class Reconciler<Obj> {
  readonly name: string;
  readonly config: Readonly<ReconcilerConfig>;
  readonly #table: Table<Obj>;
  readonly #ops: Operations<Obj>;
  readonly #inputs: readonly Initializable[];
  readonly #metrics: ReconcilerMetrics;
  readonly #clock: Clock;
  readonly #limiter: RateLimiter | undefined;
  readonly #log: Logger;

  #state: 'new' | 'running' | 'stopped' = 'new';
  #watcher: ChangeIterator<Obj> | undefined = undefined;
  #loopDone: Promise<void> = Promise.resolve();
  #stopDone: Promise<void> | undefined = undefined;
  #wakeFn: (() => void) | undefined = undefined;
  #idle = false;
  #idleWaiters: Deferred<void>[] = [];
  readonly #firstRound = deferred<void>();
  #firstRoundFinished = false;
  #roundFailed = false;

  readonly #apply: Applier<Obj>;
  #pruneFailure: Failure | undefined = undefined;
  #pruneRequested = true;
  #pruneAttempted = false;
  #pruneNotBefore = 0;
  #nextPeriodicPrune = Infinity;
  #resyncRequested = false;

  constructor(params: ReconcilerParams<Obj>) {
    this.#table = params.table;
    this.#ops = params.ops;
    this.name = params.name ?? params.table.name;
    this.config = Object.freeze(resolveConfig(params.config, params.configPath ?? 'reconciler'));
    this.#inputs = params.inputs ?? [];
    this.#metrics = params.metrics ?? noopMetrics();
    this.#clock = params.clock ?? systemClock;
    this.#limiter = params.limiter;
    this.#log = (params.log ?? silentLogger()).child({ reconciler: this.name });
    this.#apply = new Applier<Obj>({
      name: this.name,
      table: this.#table,
      ops: this.#ops,
      config: this.config,
      metrics: this.#metrics,
      clock: this.#clock,
      log: this.#log,
      running: () => this.#running,
    });
    this.#table.claimStatus(this.name);
    this.#firstRound.promise.catch(noop);
  }

  // ---- lifecycle ---------------------------------------------------------------------

  /** Starts the loop. Idempotent; throws ClosedError after stop(). */
  start(): void {
    if (this.#state === 'running') return;
    if (this.#state === 'stopped') throw new ClosedError(`reconciler ${this.name}: stopped`);
    this.#state = 'running';
    this.#watcher = this.#table.changes();
    this.#loopDone = this.#loop();
  }

  /**
   * Stops the loop: the running round finishes the operation in flight and skips the rest
   * (unprocessed rows stay pending). Resolves once the loop has ended. Idempotent.
   */
  stop(): Promise<void> {
    if (this.#stopDone !== undefined) return this.#stopDone;
    this.#state = 'stopped';
    this.#wake();
    this.#stopDone = this.#loopDone.then(() => {
      this.#watcher?.close();
      this.#flushIdle();
      if (!this.#firstRoundFinished) {
        this.#firstRound.reject(
          new ClosedError(`reconciler ${this.name}: stopped before its first round`),
        );
      }
    });
    return this.#stopDone;
  }

  /** Prune in the next round (once everything is initialized), even if a backoff is running. */
  triggerPrune(): void {
    this.#pruneRequested = true;
    this.#pruneNotBefore = 0;
    this.#wake();
  }

  /**
   * After the target may have drifted without us seeing it (an event subscription that
   * overflowed, an interrupted dump): mark every row pending, update them all, then prune.
   */
  triggerFullResync(): void {
    this.#resyncRequested = true;
    this.#wake();
  }

  /**
   * Asks for the row to be updated again although it has not changed (the target lost it).
   * Only done rows are requeued (pending and failing rows are already on their way), no
   * sooner than requeueMinIntervalMs after their last update, and through the rate limiter.
   * `urgent` puts it ahead of the requeues already waiting for the limiter (a repair before
   * a routine refresh). Returns false if the table has no such row.
   */
  requeue(key: string, opts: { urgent?: boolean } = {}): boolean {
    const row = this.#table.row(key);
    const status = this.#table.status(key);
    if (row === undefined || status === undefined) return false;
    if (status.kind !== 'done') return true;
    const now = this.#clock.now();
    const earliest = status.updatedAt + this.config.requeueMinIntervalMs;
    // Due times order the queue the limiter drains: an urgent requeue is due as early as
    // its minimum interval allows, ahead of requeues made "now".
    const due = opts.urgent === true ? earliest : Math.max(now, earliest);
    const existing = this.#apply.retries.get(key);
    if (existing !== undefined && existing.due <= due) return true;
    this.#table.setStatus(key, row.revision, { kind: 'pending', updatedAt: now });
    this.#apply.retries.schedule({ key, op: 'update', row, due });
    this.#wake();
    return true;
  }

  /**
   * Resolves when the loop has nothing to do right now: no unread change, no trigger, no
   * due work (retries scheduled for later do not count). Resolves at once when stopped.
   */
  waitIdle(signal?: AbortSignal): Promise<void> {
    if (this.#state === 'stopped' || (this.#idle && this.#nextDelay() > 0))
      return Promise.resolve();
    const d = deferred<void>();
    this.#idleWaiters.push(d);
    return abortable(d.promise, signal);
  }

  /**
   * Resolves after the first round that started with the table and every input initialized
   * and that ran the initial prune: the moment the agent may report ready. Rejects with
   * ClosedError if stopped before.
   */
  waitFirstRound(signal?: AbortSignal): Promise<void> {
    return abortable(this.#firstRound.promise, signal);
  }

  get firstRoundDone(): boolean {
    return this.#firstRoundFinished;
  }

  /** Retries and requeues scheduled (for the status view). */
  get scheduledRetries(): number {
    return this.#apply.retries.size;
  }

  health(): Health {
    const errors: HealthError[] = [];
    const cap = this.config.maxHealthErrors;
    const p = this.#pruneFailure;
    if (p !== undefined && errors.length < cap) errors.push({ key: PRUNE_KEY, ...pick(p) });
    for (const [key, f] of this.#apply.failures) {
      if (errors.length >= cap) break;
      errors.push({ key, ...pick(f) });
    }
    const errorCount = this.#apply.failures.size + (p === undefined ? 0 : 1);
    return { level: errorCount === 0 ? 'ok' : 'degraded', errors, errorCount };
  }

  // ---- loop --------------------------------------------------------------------------

  get #running(): boolean {
    return this.#state === 'running';
  }

  #wake(): void {
    this.#wakeFn?.();
  }

  #flushIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w.resolve();
  }

  #allInitialized(): boolean {
    return this.#table.initialized && this.#inputs.every((i) => i.initialized);
  }

  async #loop(): Promise<void> {
    while (this.#running) {
      try {
        this.#roundFailed = false;
        await this.#round();
      } catch (err) {
        // A bug, not an op failure (those are caught per object): keep the loop alive.
        this.#roundFailed = true;
        this.#log.error({ err }, 'reconcile round failed');
      }
      if (!this.#running) break;
      await this.#waitForWork();
    }
  }

  /** Milliseconds until the loop has work (0 = now, Infinity = only on a wake-up). */
  #nextDelay(): number {
    const delay = this.#workDelay();
    // After a round that threw (a bug), never spin: wait at least the minimum backoff.
    return this.#roundFailed ? Math.max(delay, this.config.retryBackoffMinMs) : delay;
  }

  #workDelay(): number {
    const watcher = this.#watcher;
    if (!this.#running || watcher === undefined) return 0;
    if (this.#resyncRequested || this.#table.revision > watcher.position) return 0;
    const initialized = this.#allInitialized();
    if (initialized && !this.#firstRoundFinished) return 0;
    const now = this.#clock.now();
    let at = Infinity;
    const retry = this.#apply.retries.peek();
    if (retry !== undefined) at = this.#limitedAt(retry.due, now);
    const refresh = this.#apply.refreshes.peek();
    if (refresh !== undefined && this.config.refreshIntervalMs > 0) {
      at = Math.min(at, this.#limitedAt(refresh.at + this.config.refreshIntervalMs, now));
    }
    if (this.#pruneRequested) {
      if (initialized) at = Math.min(at, this.#pruneNotBefore);
    } else {
      at = Math.min(at, this.#nextPeriodicPrune);
    }
    return Math.max(0, at - now);
  }

  #limitedAt(due: number, now: number): number {
    if (this.#limiter === undefined || due > now) return due;
    return now + this.#limiter.delayMs();
  }

  async #waitForWork(): Promise<void> {
    const delay = this.#nextDelay();
    if (delay <= 0) return;
    const woke = new Promise<void>((resolve) => (this.#wakeFn = resolve));
    const wake = (): void => this.#wake();
    const ac = new AbortController();
    const timer = new Timer(this.#clock);
    if (Number.isFinite(delay)) timer.start(delay, wake);
    const position = this.#watcher?.position ?? this.#table.revision;
    this.#table.waitForChange(position, ac.signal).then(wake, noop);
    for (const i of [this.#table, ...this.#inputs]) {
      if (!i.initialized) i.waitInitialized(ac.signal).then(wake, noop);
    }
    this.#idle = true;
    this.#flushIdle();
    try {
      await woke;
    } finally {
      this.#idle = false;
      this.#wakeFn = undefined;
      // A reason of our own: abort() without one makes a DOMException with its stack, and a
      // rate-limited loop waits thousands of times a second (docs/neighbor.md, "The fifth pass").
      ac.abort(WOKEN);
      timer.cancel();
    }
  }

  async #round(): Promise<void> {
    const started = this.#clock.now();
    const initializedAtStart = this.#allInitialized();
    this.#apply.roundErrors = 0;
    const watcher = this.#watcher as ChangeIterator<Obj>;
    if (this.#resyncRequested) {
      this.#resyncRequested = false;
      await this.#fullResync(watcher.read());
    } else {
      await this.#reconcileChanges(watcher.read());
    }
    if (this.#running) await this.#reconcileDue();
    if (this.#running) await this.#maybePrune();
    const failing = this.#apply.failures.size + (this.#pruneFailure === undefined ? 0 : 1);
    this.#metrics.currentErrors(this.name, failing);
    this.#metrics.roundDuration(this.name, (this.#clock.now() - started) / 1000);
    if (this.#apply.roundErrors > 0) {
      this.#log.warn({ errors: this.#apply.roundErrors, failing }, 'reconcile round had errors');
    }
    if (!this.#firstRoundFinished && initializedAtStart && this.#pruneAttempted && this.#running) {
      this.#firstRoundFinished = true;
      this.#firstRound.resolve();
      this.#log.info({ rows: this.#table.size, failing }, 'first reconcile round done');
    }
  }

  // ---- the work of a round -----------------------------------------------------------

  /** Splits changes into the deletes and updates to apply; a later write of a key wins. */
  async #reconcileChanges(changes: readonly Change<Obj>[]): Promise<void> {
    const updates: Row<Obj>[] = [];
    const deletes = this.#collectDeletes(changes, updates);
    await this.#apply.runDeletes(deletes);
    await this.#apply.runUpdates(updates);
  }

  #collectDeletes(changes: readonly Change<Obj>[], updates?: Row<Obj>[]): Row<Obj>[] {
    const deletes: Row<Obj>[] = [];
    let seen: Set<string> | undefined;
    for (const c of changes) {
      this.#apply.retries.cancel(c.key);
      if (!c.deleted) {
        updates?.push(c);
        continue;
      }
      // Re-inserted since (the live row is among the changes too), or deleted twice.
      if (this.#table.has(c.key)) continue;
      seen ??= new Set();
      if (seen.has(c.key)) continue;
      seen.add(c.key);
      deletes.push(c);
    }
    return deletes;
  }

  async #fullResync(changes: readonly Change<Obj>[]): Promise<void> {
    this.#log.info({ rows: this.#table.size }, 'full resync');
    this.#metrics.fullResyncs(this.name, 1);
    const deletes = this.#collectDeletes(changes);
    const updatedAt = this.#clock.now();
    const rows = [...this.#table.rows()];
    for (const r of rows) this.#table.setStatus(r.key, r.revision, { kind: 'pending', updatedAt });
    this.#apply.retries.cancelUpdates();
    this.#apply.refreshes.clear();
    this.#pruneRequested = true;
    this.#pruneNotBefore = 0;
    await this.#apply.runDeletes(deletes);
    await this.#apply.runUpdates(rows);
  }

  /** Due retries and requeues, then due refreshes, as far as the rate limiter allows. */
  async #reconcileDue(): Promise<void> {
    const now = this.#clock.now();
    const updates: Row<Obj>[] = [];
    const deletes: Row<Obj>[] = [];
    let limited = false;
    for (
      let e = this.#apply.retries.peek();
      e !== undefined && e.due <= now;
      e = this.#apply.retries.peek()
    ) {
      const current =
        e.op === 'update' ? this.#table.row(e.key) === e.row : !this.#table.has(e.key);
      if (current && this.#limiter !== undefined && !this.#limiter.tryTake()) {
        limited = true;
        break;
      }
      this.#apply.retries.take();
      if (current) (e.op === 'update' ? updates : deletes).push(e.row);
    }
    const interval = this.config.refreshIntervalMs;
    for (let f = this.#apply.refreshes.peek(); !limited && interval > 0 && f !== undefined;) {
      if (f.at + interval > now) break;
      const row = this.#table.row(f.key);
      const status = this.#table.status(f.key);
      const current =
        row !== undefined &&
        row.revision === f.revision &&
        status?.kind === 'done' &&
        status.updatedAt === f.at;
      if (current && this.#limiter !== undefined && !this.#limiter.tryTake()) {
        limited = true;
        break;
      }
      this.#apply.refreshes.shift();
      if (current) updates.push(row);
      f = this.#apply.refreshes.peek();
    }
    if (limited) this.#metrics.rateLimited(this.name, 1);
    await this.#apply.runDeletes(deletes);
    await this.#apply.runUpdates(updates);
  }

  async #maybePrune(): Promise<void> {
    const now = this.#clock.now();
    if (now >= this.#nextPeriodicPrune) this.#pruneRequested = true;
    if (!this.#pruneRequested || now < this.#pruneNotBefore || !this.#allInitialized()) return;
    this.#pruneRequested = false;
    this.#pruneAttempted = true;
    this.#nextPeriodicPrune = Infinity;
    const desired = this.#table.list();
    let err: unknown;
    try {
      await this.#ops.prune(desired);
    } catch (e) {
      err = e ?? new FibkeeperError('prune failed');
    }
    const end = this.#clock.now();
    this.#metrics.reconcileDuration(this.name, 'prune', (end - now) / 1000);
    this.#metrics.reconcileOps(this.name, 'prune', 1);
    if (err === undefined) {
      this.#pruneFailure = undefined;
      this.#pruneNotBefore = 0;
      const interval = this.config.pruneIntervalMs;
      this.#nextPeriodicPrune = interval > 0 ? end + interval : Infinity;
      this.#log.debug({ desired: desired.length }, 'pruned');
      return;
    }
    this.#metrics.reconcileErrors(this.name, 'prune', 1);
    this.#apply.roundErrors++;
    const error = describeError(err);
    const failures = (this.#pruneFailure?.failures ?? 0) + 1;
    this.#pruneFailure = { op: 'prune', error, since: this.#pruneFailure?.since ?? end, failures };
    this.#pruneRequested = true;
    this.#pruneNotBefore = end + backoffMs(this.config, failures);
    this.#log.warn({ error, failures }, 'prune failed');
  }
}

function pick(f: Failure): Omit<HealthError, 'key'> {
  return { op: f.op, error: f.error, since: f.since };
}
