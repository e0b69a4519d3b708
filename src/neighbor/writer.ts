// The writing side of the subsystem: the operations on the kernel's neighbor table
// (NeighborOps) driven by the statedb reconciler, with the one rate limiter that bounds every
// re-write (repairs, retries, refreshes) of existing entries.
import type { Logger } from '../log/index.js';
import type { NeighborMetrics } from './metrics.js';
import { RateLimiter, type Clock } from '../sched/index.js';
import { Reconciler, type Initializable, type Table } from '../statedb/index.js';
import { writeBacklog, type NeighborConfig, type NeighborTuning } from './config.js';
import type { NeighborEvents } from './events.js';
import type { ObservedNeighbors } from './observed.js';
import { NeighborOps, type NeighborKernel } from './ops.js';
import type { RequeueCause } from './reactor.js';
import { neighKey, type DesiredNeighbor, type RefreshMode } from './types.js';

export interface WriterParams {
  config: NeighborConfig;
  tuning: NeighborTuning;
  kernel: NeighborKernel;
  mode: () => RefreshMode;
  protocol: number;
  desired: Table<DesiredNeighbor>;
  /** The tables the desired one is computed from: prune waits for them. */
  inputs: readonly Initializable[];
  observed: ObservedNeighbors;
  metrics: NeighborMetrics;
  clock: Clock;
  log: Logger;
  twoStep: boolean;
  causes: Map<string, RequeueCause>;
  /** Stops (false) or resumes (true) reading the neighbor-event socket (pace.ts). */
  reading?(on: boolean): void;
  /** Neighbor events read so far (pace.ts). */
  eventsRead?(): number;
  /** Overflows of the neighbor-event socket so far (pace.ts). */
  eventOverflows?(): number;
  /** Events waiting unread in the neighbor-event socket now, whoever caused them (pace.ts). */
  eventsQueued?(): number;
  /** The rate limiter's burst. */
  burst: number;
  missing(keys: readonly string[]): void;
  /** Where writes and deletes are reported. */
  events?: NeighborEvents;
}

export function makeWriter(p: WriterParams): Reconciler<DesiredNeighbor> {
  const c = p.config;
  const ops = new NeighborOps({
    kernel: p.kernel,
    mode: p.mode,
    protocol: p.protocol,
    observed: p.observed,
    metrics: p.metrics,
    log: p.log,
    twoStep: p.twoStep,
    backlog: writeBacklog(p.tuning),
    reading: p.reading,
    eventsRead: p.eventsRead,
    eventOverflows: p.eventOverflows,
    eventsQueued: p.eventsQueued,
    causes: p.causes,
    wanted: (ifindex, ip) => p.desired.has(neighKey(ifindex, ip)),
    missing: (keys) => p.missing(keys),
    ...(p.events ? { events: p.events } : {}),
  });
  return new Reconciler<DesiredNeighbor>({
    table: p.desired,
    ops,
    name: 'neighbors',
    inputs: p.inputs,
    config: {
      retryBackoffMinMs: c.retryMin,
      retryBackoffMaxMs: c.retryMax,
      pruneIntervalMs: c.resyncInterval,
      batchSize: p.tuning.writeBatch,
      // The next batch is prepared while the one before is in the kernel (on the netlink
      // socket's send thread).
      pipeline: 2,
      // A lost entry is written again at once, but never sooner than this after its last
      // write: the per-entry bound (exponential backoff on repeated losses is the reactor's).
      requeueMinIntervalMs: c.retryMin,
    },
    configPath: 'neighbor',
    metrics: p.metrics,
    clock: p.clock,
    // A burst of a tenth of a second: refreshes that come due together (a table whose
    // entries went STALE at once) leave as an even stream, not one second's worth at once.
    limiter: new RateLimiter({ rate: c.rateLimit, burst: p.burst, now: () => p.clock.now() }),
    log: p.log,
  });
}
