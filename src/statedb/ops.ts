// The reconciler's contracts with the outside: the operations it calls, the metrics it
// reports and the health it exposes.

/**
 * How a reconciler changes the target (the kernel, say). Only these touch the outside; they
 * are injected, so the reconciler is tested with a fake. Every operation is idempotent.
 */
export interface Operations<Obj> {
  /**
   * Makes the target hold `obj` (create or replace). Idempotent: updating to the state that
   * is already there succeeds.
   */
  update(obj: Obj): Promise<void>;
  /**
   * Removes `obj` from the target. Idempotent: deleting an object that does not exist is
   * success, not an error.
   */
  delete(obj: Obj): Promise<void>;
  /**
   * Removes from the target everything this reconciler owns that is not in `desired`, and
   * nothing it does not own. Idempotent. Only called once the table and every input are
   * initialized, so `desired` is complete.
   */
  prune(desired: Iterable<Obj>): Promise<void>;
  /**
   * Optional batch form of update: one result per object, in order (undefined = success).
   * A throw fails every object of the batch.
   */
  updateBatch?(objs: readonly Obj[]): Promise<BatchResult>;
  /** Optional batch form of delete, as updateBatch. */
  deleteBatch?(objs: readonly Obj[]): Promise<BatchResult>;
}

export type BatchResult = ReadonlyArray<Error | undefined>;

export type ReconcileOp = 'update' | 'delete' | 'prune';

/** What a reconciler reports; `reconciler` is its name (a bounded label). */
export interface ReconcilerMetrics {
  /** Time spent in one ops call (a batch call is one). */
  reconcileDuration(reconciler: string, op: ReconcileOp, seconds: number): void;
  /** Objects handed to an operation (prune: calls). */
  reconcileOps(reconciler: string, op: ReconcileOp, n: number): void;
  /** Objects whose operation failed (prune: failed calls). */
  reconcileErrors(reconciler: string, op: ReconcileOp, n: number): void;
  /** Objects currently failing, after every round (a gauge). */
  currentErrors(reconciler: string, n: number): void;
  /** Times the rate limiter held back due retries, requeues or refreshes. */
  rateLimited(reconciler: string, n: number): void;
  /** Full resyncs run. */
  fullResyncs(reconciler: string, n: number): void;
  /** Duration of one reconciliation round. */
  roundDuration(reconciler: string, seconds: number): void;
}

export function noopMetrics(): ReconcilerMetrics {
  const nothing = (): void => undefined;
  return {
    reconcileDuration: nothing,
    reconcileOps: nothing,
    reconcileErrors: nothing,
    currentErrors: nothing,
    rateLimited: nothing,
    fullResyncs: nothing,
    roundDuration: nothing,
  };
}

export interface HealthError {
  /** Primary key of the failing row, or "(prune)". */
  readonly key: string;
  readonly op: ReconcileOp;
  readonly error: string;
  /** Clock time (ms) of the first failure in the current run of failures. */
  readonly since: number;
}

export interface Health {
  readonly level: 'ok' | 'degraded';
  /** The oldest failures, capped at maxHealthErrors. */
  readonly errors: readonly HealthError[];
  /** Every current failure. */
  readonly errorCount: number;
}
