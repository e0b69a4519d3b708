// statedb: in-memory desired-state tables and a generic reconciler that makes a target match
// a table through injected, idempotent operations. Pure TypeScript, no I/O. This file is the
// package's whole public surface; its clock, backoff and rate limiter come from src/sched.
//
//   const t = new Table<Neigh>({ name: 'neighbors', primaryKey: (n) => `${n.ifindex}/${n.ip}` });
//   const done = t.registerInitializer('first-calculation');   // before any consumer starts
//   t.write((w) => { for (const n of all) w.upsert(n); }); done();
//   const r = new Reconciler({ table: t, ops: neighborOps, inputs: [routes, devices], log });
//   r.start(); await r.waitFirstRound();   // ready: rows applied and the initial prune ran
//
// Status design: each row's reconciliation status (pending/done/error, message, updatedAt)
// lives in the table beside the object, not inside it and not in the revision stream. Every
// write of the object resets it to pending; the reconciler records results with
// table.setStatus(key, revision, …), a compare-and-set on the row revision that bumps no
// revision and wakes no watcher. So status writes never come back as desired changes, a
// result for an old version never marks a newer one done, and objects stay immutable. One
// reconciler per table writes the status (table.claimStatus enforces it). Status times come
// from the reconciler's clock (pending-on-write times from the table's `now`): give both the
// same clock.
export { Table } from './table.js';
export { RowNode } from './revlog.js';
export type { TableOptions, TableWriter, ChangeIterator, StatusCounts } from './table.js';
export type { IndexFn } from './indexes.js';
export type { Change, Row, RowStatus, StatusKind, Initializable } from './types.js';
export { Reconciler } from './reconciler.js';
export type { ReconcilerParams } from './reconciler.js';
export { defaultOptions, resolveConfig } from './config.js';
export type { ReconcilerConfig } from './config.js';
export { noopMetrics } from './ops.js';
export type {
  Operations,
  BatchResult,
  ReconcileOp,
  ReconcilerMetrics,
  Health,
  HealthError,
} from './ops.js';
