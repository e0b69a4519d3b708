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
import { backoffMs, resolveConfig, type ReconcilerConfig } from './config.js';
import {
  noopMetrics,
  type BatchResult,
  type Health,
  type HealthError,
  type Operations,
  type ReconcileOp,
  type ReconcilerMetrics,
} from './ops.js';
import type { RateLimiter } from './ratelimit.js';
import { RefreshQueue, RetryQueue } from './schedule.js';
import type { ChangeIterator, Table } from './table.js';
import { systemClock, type Change, type Clock, type Initializable, type Row } from './types.js';
import { abortable, deferred, type Deferred } from './util.js';

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

interface Failure {
  op: ReconcileOp;
  error: string;
  since: number;
  failures: number;
}

const PRUNE_KEY = '(prune)';
const noop = (): void => undefined;

export class Reconciler<Obj> {
  readonly name: string;
  readonly config: Readonly<ReconcilerConfig>;
  private readonly table: Table<Obj>;
  private readonly ops: Operations<Obj>;
  private readonly inputs: readonly Initializable[];
  private readonly metrics: ReconcilerMetrics;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter | undefined;
  private readonly log: Logger;

  private state: 'new' | 'running' | 'stopped' = 'new';
  private watcher: ChangeIterator<Obj> | undefined = undefined;
  private loopDone: Promise<void> = Promise.resolve();
  private stopDone: Promise<void> | undefined = undefined;
  private wakeFn: (() => void) | undefined = undefined;
  private idle = false;
  private idleWaiters: Deferred<void>[] = [];
  private readonly firstRound = deferred<void>();
  private firstRoundFinished = false;
  private roundFailed = false;
  private roundErrors = 0;

  private readonly retries = new RetryQueue<Obj>();
  private readonly refreshes = new RefreshQueue();
  private readonly failures = new Map<string, Failure>();
  private pruneFailure: Failure | undefined = undefined;
  private pruneRequested = true;
  private pruneAttempted = false;
  private pruneNotBefore = 0;
  private nextPeriodicPrune = Infinity;
  private resyncRequested = false;

  constructor(params: ReconcilerParams<Obj>) {
    this.table = params.table;
    this.ops = params.ops;
    this.name = params.name ?? params.table.name;
    this.config = Object.freeze(resolveConfig(params.config, params.configPath ?? 'reconciler'));
    this.inputs = params.inputs ?? [];
    this.metrics = params.metrics ?? noopMetrics();
    this.clock = params.clock ?? systemClock;
    this.limiter = params.limiter;
    this.log = (params.log ?? silentLogger()).child({ reconciler: this.name });
    this.table.claimStatus(this.name);
    this.firstRound.promise.catch(noop);
  }

  // ---- lifecycle ---------------------------------------------------------------------

  /** Starts the loop. Idempotent; throws ClosedError after stop(). */
  start(): void {
    if (this.state === 'running') return;
    if (this.state === 'stopped') throw new ClosedError(`reconciler ${this.name}: stopped`);
    this.state = 'running';
    this.watcher = this.table.changes();
    this.loopDone = this.loop();
  }

  /**
   * Stops the loop: the running round finishes the operation in flight and skips the rest
   * (unprocessed rows stay pending). Resolves once the loop has ended. Idempotent.
   */
  stop(): Promise<void> {
    if (this.stopDone !== undefined) return this.stopDone;
    this.state = 'stopped';
    this.wake();
    this.stopDone = this.loopDone.then(() => {
      this.watcher?.close();
      this.flushIdle();
      if (!this.firstRoundFinished) {
        this.firstRound.reject(
          new ClosedError(`reconciler ${this.name}: stopped before its first round`),
        );
      }
    });
    return this.stopDone;
  }

  /** Prune in the next round (once everything is initialized), even if a backoff is running. */
  triggerPrune(): void {
    this.pruneRequested = true;
    this.pruneNotBefore = 0;
    this.wake();
  }

  /**
   * After the target may have drifted without us seeing it (an event subscription that
   * overflowed, an interrupted dump): mark every row pending, update them all, then prune.
   */
  triggerFullResync(): void {
    this.resyncRequested = true;
    this.wake();
  }

  /**
   * Asks for the row to be updated again although it has not changed (the target lost it).
   * Only done rows are requeued (pending and failing rows are already on their way), no
   * sooner than requeueMinIntervalMs after their last update, and through the rate limiter.
   * Returns false if the table has no such row.
   */
  requeue(key: string): boolean {
    const row = this.table.row(key);
    const status = this.table.status(key);
    if (row === undefined || status === undefined) return false;
    if (status.kind !== 'done') return true;
    const now = this.clock.now();
    const due = Math.max(now, status.updatedAt + this.config.requeueMinIntervalMs);
    const existing = this.retries.get(key);
    if (existing !== undefined && existing.due <= due) return true;
    this.table.setStatus(key, row.revision, { kind: 'pending', updatedAt: now });
    this.retries.schedule({ key, op: 'update', row, due });
    this.wake();
    return true;
  }

  /**
   * Resolves when the loop has nothing to do right now: no unread change, no trigger, no
   * due work (retries scheduled for later do not count). Resolves at once when stopped.
   */
  waitIdle(signal?: AbortSignal): Promise<void> {
    if (this.state === 'stopped' || (this.idle && this.nextDelay() > 0)) return Promise.resolve();
    const d = deferred<void>();
    this.idleWaiters.push(d);
    return abortable(d.promise, signal);
  }

  /**
   * Resolves after the first round that started with the table and every input initialized
   * and that ran the initial prune: the moment the agent may report ready. Rejects with
   * ClosedError if stopped before.
   */
  waitFirstRound(signal?: AbortSignal): Promise<void> {
    return abortable(this.firstRound.promise, signal);
  }

  get firstRoundDone(): boolean {
    return this.firstRoundFinished;
  }

  /** Retries and requeues scheduled (for the status view). */
  get scheduledRetries(): number {
    return this.retries.size;
  }

  health(): Health {
    const errors: HealthError[] = [];
    const cap = this.config.maxHealthErrors;
    const p = this.pruneFailure;
    if (p !== undefined && errors.length < cap) errors.push({ key: PRUNE_KEY, ...pick(p) });
    for (const [key, f] of this.failures) {
      if (errors.length >= cap) break;
      errors.push({ key, ...pick(f) });
    }
    const errorCount = this.failures.size + (p === undefined ? 0 : 1);
    return { level: errorCount === 0 ? 'ok' : 'degraded', errors, errorCount };
  }

  // ---- loop --------------------------------------------------------------------------

  private get running(): boolean {
    return this.state === 'running';
  }

  private wake(): void {
    this.wakeFn?.();
  }

  private flushIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w.resolve();
  }

  private allInitialized(): boolean {
    return this.table.initialized && this.inputs.every((i) => i.initialized);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        this.roundFailed = false;
        await this.round();
      } catch (err) {
        // A bug, not an op failure (those are caught per object): keep the loop alive.
        this.roundFailed = true;
        this.log.error({ err }, 'reconcile round failed');
      }
      if (!this.running) break;
      await this.waitForWork();
    }
  }

  /** Milliseconds until the loop has work (0 = now, Infinity = only on a wake-up). */
  private nextDelay(): number {
    const delay = this.workDelay();
    // After a round that threw (a bug), never spin: wait at least the minimum backoff.
    return this.roundFailed ? Math.max(delay, this.config.retryBackoffMinMs) : delay;
  }

  private workDelay(): number {
    const watcher = this.watcher;
    if (!this.running || watcher === undefined) return 0;
    if (this.resyncRequested || this.table.revision > watcher.position) return 0;
    const initialized = this.allInitialized();
    if (initialized && !this.firstRoundFinished) return 0;
    const now = this.clock.now();
    let at = Infinity;
    const retry = this.retries.peek();
    if (retry !== undefined) at = this.limitedAt(retry.due, now);
    const refresh = this.refreshes.peek();
    if (refresh !== undefined && this.config.refreshIntervalMs > 0) {
      at = Math.min(at, this.limitedAt(refresh.at + this.config.refreshIntervalMs, now));
    }
    if (this.pruneRequested) {
      if (initialized) at = Math.min(at, this.pruneNotBefore);
    } else {
      at = Math.min(at, this.nextPeriodicPrune);
    }
    return Math.max(0, at - now);
  }

  private limitedAt(due: number, now: number): number {
    if (this.limiter === undefined || due > now) return due;
    return now + this.limiter.delayMs();
  }

  private async waitForWork(): Promise<void> {
    const delay = this.nextDelay();
    if (delay <= 0) return;
    const woke = new Promise<void>((resolve) => (this.wakeFn = resolve));
    const wake = (): void => this.wake();
    const ac = new AbortController();
    const timer = Number.isFinite(delay) ? this.clock.setTimeout(wake, delay) : undefined;
    const position = this.watcher?.position ?? this.table.revision;
    this.table.waitForChange(position, ac.signal).then(wake, noop);
    for (const i of [this.table, ...this.inputs]) {
      if (!i.initialized) i.waitInitialized(ac.signal).then(wake, noop);
    }
    this.idle = true;
    this.flushIdle();
    try {
      await woke;
    } finally {
      this.idle = false;
      this.wakeFn = undefined;
      ac.abort();
      if (timer !== undefined) this.clock.clearTimeout(timer);
    }
  }

  private async round(): Promise<void> {
    const started = this.clock.now();
    const initializedAtStart = this.allInitialized();
    this.roundErrors = 0;
    const watcher = this.watcher as ChangeIterator<Obj>;
    if (this.resyncRequested) {
      this.resyncRequested = false;
      await this.fullResync(watcher.read());
    } else {
      await this.reconcileChanges(watcher.read());
    }
    if (this.running) await this.reconcileDue();
    if (this.running) await this.maybePrune();
    const failing = this.failures.size + (this.pruneFailure === undefined ? 0 : 1);
    this.metrics.currentErrors(this.name, failing);
    this.metrics.roundDuration(this.name, (this.clock.now() - started) / 1000);
    if (this.roundErrors > 0) {
      this.log.warn({ errors: this.roundErrors, failing }, 'reconcile round had errors');
    }
    if (!this.firstRoundFinished && initializedAtStart && this.pruneAttempted && this.running) {
      this.firstRoundFinished = true;
      this.firstRound.resolve();
      this.log.info({ rows: this.table.size, failing }, 'first reconcile round done');
    }
  }

  // ---- the work of a round -----------------------------------------------------------

  /** Splits changes into the deletes and updates to apply; a later write of a key wins. */
  private async reconcileChanges(changes: readonly Change<Obj>[]): Promise<void> {
    const updates: Row<Obj>[] = [];
    const deletes = this.collectDeletes(changes, updates);
    await this.runDeletes(deletes);
    await this.runUpdates(updates);
  }

  private collectDeletes(changes: readonly Change<Obj>[], updates?: Row<Obj>[]): Row<Obj>[] {
    const deletes: Row<Obj>[] = [];
    let seen: Set<string> | undefined;
    for (const c of changes) {
      this.retries.cancel(c.key);
      if (!c.deleted) {
        updates?.push(c);
        continue;
      }
      // Re-inserted since (the live row is among the changes too), or deleted twice.
      if (this.table.has(c.key)) continue;
      seen ??= new Set();
      if (seen.has(c.key)) continue;
      seen.add(c.key);
      deletes.push(c);
    }
    return deletes;
  }

  private async fullResync(changes: readonly Change<Obj>[]): Promise<void> {
    this.log.info({ rows: this.table.size }, 'full resync');
    this.metrics.fullResyncs(this.name, 1);
    const deletes = this.collectDeletes(changes);
    const updatedAt = this.clock.now();
    const rows = [...this.table.rows()];
    for (const r of rows) this.table.setStatus(r.key, r.revision, { kind: 'pending', updatedAt });
    this.retries.cancelUpdates();
    this.refreshes.clear();
    this.pruneRequested = true;
    this.pruneNotBefore = 0;
    await this.runDeletes(deletes);
    await this.runUpdates(rows);
  }

  /** Due retries and requeues, then due refreshes, as far as the rate limiter allows. */
  private async reconcileDue(): Promise<void> {
    const now = this.clock.now();
    const updates: Row<Obj>[] = [];
    const deletes: Row<Obj>[] = [];
    let limited = false;
    for (let e = this.retries.peek(); e !== undefined && e.due <= now; e = this.retries.peek()) {
      const current = e.op === 'update' ? this.table.row(e.key) === e.row : !this.table.has(e.key);
      if (current && this.limiter !== undefined && !this.limiter.tryTake()) {
        limited = true;
        break;
      }
      this.retries.take();
      if (current) (e.op === 'update' ? updates : deletes).push(e.row);
    }
    const interval = this.config.refreshIntervalMs;
    for (let f = this.refreshes.peek(); !limited && interval > 0 && f !== undefined;) {
      if (f.at + interval > now) break;
      const row = this.table.row(f.key);
      const status = this.table.status(f.key);
      const current =
        row !== undefined &&
        row.revision === f.revision &&
        status?.kind === 'done' &&
        status.updatedAt === f.at;
      if (current && this.limiter !== undefined && !this.limiter.tryTake()) {
        limited = true;
        break;
      }
      this.refreshes.shift();
      if (current) updates.push(row);
      f = this.refreshes.peek();
    }
    if (limited) this.metrics.rateLimited(this.name, 1);
    await this.runDeletes(deletes);
    await this.runUpdates(updates);
  }

  private async maybePrune(): Promise<void> {
    const now = this.clock.now();
    if (now >= this.nextPeriodicPrune) this.pruneRequested = true;
    if (!this.pruneRequested || now < this.pruneNotBefore || !this.allInitialized()) return;
    this.pruneRequested = false;
    this.pruneAttempted = true;
    this.nextPeriodicPrune = Infinity;
    const desired = this.table.list();
    let err: unknown;
    try {
      await this.ops.prune(desired);
    } catch (e) {
      err = e ?? new FibkeeperError('prune failed');
    }
    const end = this.clock.now();
    this.metrics.reconcileDuration(this.name, 'prune', (end - now) / 1000);
    this.metrics.reconcileOps(this.name, 'prune', 1);
    if (err === undefined) {
      this.pruneFailure = undefined;
      this.pruneNotBefore = 0;
      const interval = this.config.pruneIntervalMs;
      this.nextPeriodicPrune = interval > 0 ? end + interval : Infinity;
      this.log.debug({ desired: desired.length }, 'pruned');
      return;
    }
    this.metrics.reconcileErrors(this.name, 'prune', 1);
    this.roundErrors++;
    const error = describeError(err);
    const failures = (this.pruneFailure?.failures ?? 0) + 1;
    this.pruneFailure = { op: 'prune', error, since: this.pruneFailure?.since ?? end, failures };
    this.pruneRequested = true;
    this.pruneNotBefore = end + backoffMs(this.config, failures);
    this.log.warn({ error, failures }, 'prune failed');
  }

  // ---- applying operations -----------------------------------------------------------

  private async runUpdates(rows: readonly Row<Obj>[]): Promise<void> {
    const size = this.config.batchSize;
    for (let i = 0; i < rows.length && this.running; i += size) {
      // Skip versions that a later write has replaced while earlier batches ran.
      const chunk = rows.slice(i, i + size).filter((r) => this.table.row(r.key) === r);
      if (chunk.length === 0) continue;
      if (this.ops.updateBatch !== undefined) {
        const results = await this.callBatch('update', chunk, (objs) =>
          this.ops.updateBatch?.(objs),
        );
        chunk.forEach((r, j) => this.updated(r, results[j]));
        continue;
      }
      for (const r of chunk) {
        if (!this.running) break;
        if (this.table.row(r.key) !== r) continue;
        const [err] = await this.callBatch('update', [r], ([o]) => this.ops.update(o as Obj));
        this.updated(r, err);
      }
    }
  }

  private async runDeletes(rows: readonly Row<Obj>[]): Promise<void> {
    const size = this.config.batchSize;
    for (let i = 0; i < rows.length && this.running; i += size) {
      const chunk = rows.slice(i, i + size).filter((r) => !this.table.has(r.key));
      if (chunk.length === 0) continue;
      if (this.ops.deleteBatch !== undefined) {
        const results = await this.callBatch('delete', chunk, (objs) =>
          this.ops.deleteBatch?.(objs),
        );
        chunk.forEach((r, j) => this.deleted(r, results[j]));
        continue;
      }
      for (const r of chunk) {
        if (!this.running) break;
        if (this.table.has(r.key)) continue;
        const [err] = await this.callBatch('delete', [r], ([o]) => this.ops.delete(o as Obj));
        this.deleted(r, err);
      }
    }
  }

  /**
   * Calls an operation for `rows` and returns one error (or undefined) per row; records the
   * duration, the count and the failures. A single-object op is a batch of one returning
   * void.
   */
  private async callBatch(
    op: 'update' | 'delete',
    rows: readonly Row<Obj>[],
    call: (objs: readonly Obj[]) => Promise<BatchResult | void> | undefined,
  ): Promise<readonly unknown[]> {
    const started = this.clock.now();
    let results: readonly unknown[];
    try {
      const r = await call(rows.map((x) => x.object));
      if (r === undefined) results = new Array<undefined>(rows.length);
      else if (r.length === rows.length) results = r;
      else {
        const e = new FibkeeperError(`${op} batch returned ${r.length} results for ${rows.length}`);
        results = new Array<unknown>(rows.length).fill(e);
      }
    } catch (e) {
      results = new Array<unknown>(rows.length).fill(e ?? new FibkeeperError(`${op} failed`));
    }
    this.metrics.reconcileDuration(this.name, op, (this.clock.now() - started) / 1000);
    this.metrics.reconcileOps(this.name, op, rows.length);
    const failed = results.reduce<number>((n, e) => (e === undefined || e === null ? n : n + 1), 0);
    if (failed > 0) this.metrics.reconcileErrors(this.name, op, failed);
    return results;
  }

  private updated(row: Row<Obj>, err: unknown): void {
    const now = this.clock.now();
    if (err === undefined || err === null) {
      if (!this.table.setStatus(row.key, row.revision, { kind: 'done', updatedAt: now })) return;
      this.failures.delete(row.key);
      if (this.config.refreshIntervalMs > 0) {
        this.refreshes.push({ key: row.key, revision: row.revision, at: now });
      }
      return;
    }
    const error = describeError(err);
    // A newer version replaced this one meanwhile: its own update decides.
    if (!this.table.setStatus(row.key, row.revision, { kind: 'error', error, updatedAt: now })) {
      return;
    }
    this.failed(row, 'update', error, now);
  }

  private deleted(row: Row<Obj>, err: unknown): void {
    if (err === undefined || err === null) {
      this.failures.delete(row.key);
      return;
    }
    if (this.table.has(row.key)) return;
    this.failed(row, 'delete', describeError(err), this.clock.now());
  }

  private failed(row: Row<Obj>, op: 'update' | 'delete', error: string, now: number): void {
    this.roundErrors++;
    const prev = this.failures.get(row.key);
    const failures = (prev?.failures ?? 0) + 1;
    if (prev === undefined) this.failures.set(row.key, { op, error, since: now, failures });
    else Object.assign(prev, { op, error, failures });
    this.retries.schedule({ key: row.key, op, row, due: now + backoffMs(this.config, failures) });
    this.log.debug({ key: row.key, op, error, failures }, 'reconcile failed');
  }
}

function pick(f: Failure): Omit<HealthError, 'key'> {
  return { op: f.op, error: f.error, since: f.since };
}
