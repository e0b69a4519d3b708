// statedb: in-memory desired-state tables and a generic reconciler that makes a target match
// a table through injected, idempotent operations. Pure TypeScript, no I/O. This file is the
// package's whole public surface.
export { Table } from './table.js';
export type { TableOptions, TableWriter, ChangeIterator, StatusCounts } from './table.js';
export type { IndexFn } from './indexes.js';
export type {
  Change,
  Row,
  RowStatus,
  StatusKind,
  Initializable,
  Clock,
  TimerHandle,
} from './types.js';
export { systemClock } from './types.js';
export { Reconciler } from './reconciler.js';
export type { ReconcilerParams } from './reconciler.js';
export { defaultOptions, resolveConfig, backoffMs } from './config.js';
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
export { RateLimiter } from './ratelimit.js';
export type { RateLimiterOptions } from './ratelimit.js';
