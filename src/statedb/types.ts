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

export type TimerHandle = unknown;

/** Time and timers, injected so that tests can drive them. */
export interface Clock {
  /** Milliseconds; only differences are used. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The process clock. Globals are looked up at call time, so fake timers installed after the
 * clock was created still take effect.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
