// Types shared by the tables and the reconciler. Re-exported from index.ts.

/** Reconciliation state of one row: written by the reconciler, never by the row's producer. */
export type StatusKind = 'pending' | 'done' | 'error';

export interface RowStatus {
  readonly kind: StatusKind;
  /** Why the last attempt failed; only set when kind is 'error'. */
  readonly error?: string;
  /** Clock time (ms) of the transition: the write that made it pending, or the op's result. */
  readonly updatedAt: number;
}

/** One row as stored: the object, its primary key and the revision of the write that made it. */
export interface Row<Obj> {
  readonly key: string;
  readonly object: Obj;
  readonly revision: number;
}

/**
 * One entry of a changes read: the row as written at `revision`, or, when `deleted`, the
 * last object the row held before the delete at `revision`.
 */
export interface Change<Obj> extends Row<Obj> {
  readonly deleted: boolean;
}

/** Anything that finishes initializing once (a table after its first dump, say). */
export interface Initializable {
  readonly name: string;
  readonly initialized: boolean;
  /** Resolves once initialized; rejects with the signal's reason if aborted first. */
  waitInitialized(signal?: AbortSignal): Promise<void>;
}
