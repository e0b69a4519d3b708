// Applying operations for the reconciler: calling update/delete (singly or in batches),
// recording each result as the row's status, keeping the failures that health() reports,
// and scheduling retries with backoff and refreshes.
import { describeError, FibkeeperError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { Clock } from '../sched/index.js';
import { backoffMs, type ReconcilerConfig } from './config.js';
import type { BatchResult, Operations, ReconcileOp, ReconcilerMetrics } from './ops.js';
import { RefreshQueue, RetryQueue } from './schedule.js';
import type { Table } from './table.js';
import type { Row } from './types.js';

export interface Failure {
  op: ReconcileOp;
  error: string;
  /** Clock time of the first failure of the current run of failures. */
  since: number;
  /** Consecutive failures (drives the backoff). */
  failures: number;
}

export interface ApplierDeps<Obj> {
  readonly name: string;
  readonly table: Table<Obj>;
  readonly ops: Operations<Obj>;
  readonly config: Readonly<ReconcilerConfig>;
  readonly metrics: ReconcilerMetrics;
  readonly clock: Clock;
  readonly log: Logger;
  /** False once stop() was called: remaining objects are skipped. */
  running(): boolean;
}

export class Applier<Obj> {
  readonly retries = new RetryQueue<Obj>();
  readonly refreshes = new RefreshQueue();
  /** Rows (or deleted rows) whose last operation failed, oldest failure first. */
  readonly failures = new Map<string, Failure>();
  /** Failed operations since the counter was last reset (per round). */
  roundErrors = 0;

  readonly #d: ApplierDeps<Obj>;
  constructor(d: ApplierDeps<Obj>) {
    this.#d = d;
  }

  async runUpdates(rows: readonly Row<Obj>[]): Promise<void> {
    const size = this.#d.config.batchSize;
    // Batch calls under way (config.pipeline at most), oldest first.
    const inFlight: Promise<void>[] = [];
    try {
      for (let i = 0; i < rows.length && this.#d.running(); i += size) {
        // Skip versions that a later write has replaced while earlier batches ran.
        const chunk = rows.slice(i, i + size).filter((r) => this.#d.table.isCurrent(r));
        if (chunk.length === 0) continue;
        if (this.#d.ops.updateBatch !== undefined) {
          const done = this.#callBatch('update', chunk, (objs) =>
            this.#d.ops.updateBatch?.(objs),
          ).then((results) => {
            const now = this.#d.clock.now();
            for (let j = 0; j < chunk.length; j++) this.#updated(chunk[j]!, results[j], now);
          });
          inFlight.push(done);
          if (inFlight.length >= this.#d.config.pipeline) await inFlight.shift();
          continue;
        }
        for (const r of chunk) {
          if (!this.#d.running()) break;
          if (!this.#d.table.isCurrent(r)) continue;
          const [err] = await this.#callBatch('update', [r], ([o]) => this.#d.ops.update(o as Obj));
          this.#updated(r, err, this.#d.clock.now());
        }
      }
    } finally {
      // #callBatch never rejects: every batch under way ends here.
      await Promise.all(inFlight);
    }
  }

  async runDeletes(rows: readonly Row<Obj>[]): Promise<void> {
    const size = this.#d.config.batchSize;
    for (let i = 0; i < rows.length && this.#d.running(); i += size) {
      const chunk = rows.slice(i, i + size).filter((r) => !this.#d.table.has(r.key));
      if (chunk.length === 0) continue;
      if (this.#d.ops.deleteBatch !== undefined) {
        const results = await this.#callBatch('delete', chunk, (objs) =>
          this.#d.ops.deleteBatch?.(objs),
        );
        chunk.forEach((r, j) => this.#deleted(r, results[j]));
        continue;
      }
      for (const r of chunk) {
        if (!this.#d.running()) break;
        if (this.#d.table.has(r.key)) continue;
        const [err] = await this.#callBatch('delete', [r], ([o]) => this.#d.ops.delete(o as Obj));
        this.#deleted(r, err);
      }
    }
  }

  /**
   * Calls an operation for `rows` and returns one error (or undefined) per row; records the
   * duration, the count and the failures. A single-object op is a batch of one returning
   * void.
   */
  async #callBatch(
    op: 'update' | 'delete',
    rows: readonly Row<Obj>[],
    call: (objs: readonly Obj[]) => Promise<BatchResult | void> | undefined,
  ): Promise<readonly unknown[]> {
    const started = this.#d.clock.now();
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
    this.#d.metrics.reconcileDuration(this.#d.name, op, (this.#d.clock.now() - started) / 1000);
    this.#d.metrics.reconcileOps(this.#d.name, op, rows.length);
    const failed = results.reduce<number>((n, e) => (e === undefined || e === null ? n : n + 1), 0);
    if (failed > 0) this.#d.metrics.reconcileErrors(this.#d.name, op, failed);
    return results;
  }

  #updated(row: Row<Obj>, err: unknown, now: number): void {
    if (err === undefined || err === null) {
      if (!this.#d.table.setRowStatus(row, { kind: 'done', updatedAt: now })) return;
      if (this.failures.size > 0) this.failures.delete(row.key);
      if (this.#d.config.refreshIntervalMs > 0) {
        this.refreshes.push({ key: row.key, revision: row.revision, at: now });
      }
      return;
    }
    const error = describeError(err);
    // A newer version replaced this one meanwhile: its own update decides.
    if (!this.#d.table.setRowStatus(row, { kind: 'error', error, updatedAt: now })) {
      return;
    }
    this.#failed(row, 'update', error, now);
  }

  #deleted(row: Row<Obj>, err: unknown): void {
    if (err === undefined || err === null) {
      this.failures.delete(row.key);
      return;
    }
    if (this.#d.table.has(row.key)) return;
    this.#failed(row, 'delete', describeError(err), this.#d.clock.now());
  }

  #failed(row: Row<Obj>, op: 'update' | 'delete', error: string, now: number): void {
    this.roundErrors++;
    const prev = this.failures.get(row.key);
    const failures = (prev?.failures ?? 0) + 1;
    if (prev === undefined) this.failures.set(row.key, { op, error, since: now, failures });
    else Object.assign(prev, { op, error, failures });
    this.retries.schedule({
      key: row.key,
      op,
      row,
      due: now + backoffMs(this.#d.config, failures),
    });
    this.#d.log.debug({ key: row.key, op, error, failures }, 'reconcile failed');
  }
}
