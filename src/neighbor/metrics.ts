// Metric group of the neighbor subsystem (fibkeeper_neighbor_*). Counters are incremented
// as things happen and also kept as plain numbers for `fibkeeper status`; the gauges (table
// sizes, kernel entries by state) are read lazily in collect() from a source the subsystem
// sets. Label values are bounded: states, reasons, operations and the selected devices'
// names, never IPs.
import { Counter, Gauge, Histogram, Registry } from '../metrics/index.js';
import type { ReconcileOp, ReconcilerMetrics } from '../statedb/index.js';

/** Read at scrape time. */
export interface NeighborGaugeSource {
  forwardableIps(): number;
  selectedDevices(): number;
  desiredByStatus(): { pending: number; done: number; error: number };
  /** fibkeeper-owned kernel entries by NUD state name ("reachable", "stale", ...). */
  kernelEntriesByState(): ReadonlyMap<string, number>;
  /** Desired next hops whose kernel entry belongs to someone else (left alone). */
  foreignEntries(): number;
  /** The refresh path in use. */
  refreshMode(): RefreshModeName;
  /** neighbor.refresh is a forced `managed` with more than rateLimit desired entries. */
  managedOverLimit(): boolean;
  /** Unusable desired entries (unresolved past neighbor.unusableAfter) per selected device. */
  unusableByDevice(): ReadonlyMap<string, number>;
}

export type RefreshModeName = 'managed' | 'legacy';
const REFRESH_MODES: readonly RefreshModeName[] = ['managed', 'legacy'];

export type ReinsertCause = 'deleted' | 'failed';
export type DeleteSource = 'reconcile' | 'prune';
export type LookupResult = 'nexthop' | 'unreachable' | 'error';
export type ResyncTable = 'devices' | 'routes' | 'neighbors' | 'desired';
export type ResyncReason =
  'startup' | 'interval' | 'overflow' | 'dump-interrupted' | 'device' | 'rules';

/** The counters as plain numbers (for the status view and tests). */
export interface NeighborCounters {
  inserts: number;
  reinserts: Record<ReinsertCause, number>;
  refreshes: number;
  deletes: Record<DeleteSource, number>;
  lookups: Record<LookupResult, number>;
  reconcileErrors: number;
  rateLimited: number;
  /** "table/reason" → count, e.g. "neighbors/overflow". */
  resyncs: Record<string, number>;
  /** Switches of the refresh path (neighbor.refresh: auto), by the path switched to. */
  modeSwitches: Record<RefreshModeName, number>;
}

/** Every (table, reason) pair the subsystem counts: each feed's own, and the desired table's. */
const RESYNC_PAIRS: readonly [ResyncTable, ResyncReason][] = [
  ...(['devices', 'routes', 'neighbors'] as const).flatMap((t) =>
    (['startup', 'overflow', 'dump-interrupted'] as const).map((r): [ResyncTable, ResyncReason] => [
      t,
      r,
    ]),
  ),
  ['routes', 'interval'],
  ['routes', 'device'],
  ['desired', 'interval'],
  ['desired', 'device'],
  ['desired', 'rules'],
];
const RECONCILE_OPS: readonly ReconcileOp[] = ['update', 'delete', 'prune'];

const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class NeighborMetrics implements ReconcilerMetrics {
  readonly registry: Registry;
  #source: NeighborGaugeSource | undefined = undefined;
  readonly #c: NeighborCounters = {
    inserts: 0,
    reinserts: { deleted: 0, failed: 0 },
    refreshes: 0,
    deletes: { reconcile: 0, prune: 0 },
    lookups: { nexthop: 0, unreachable: 0, error: 0 },
    reconcileErrors: 0,
    rateLimited: 0,
    resyncs: {},
    modeSwitches: { managed: 0, legacy: 0 },
  };
  readonly #insertsTotal: Counter;
  readonly #reinsertsTotal: Counter<'cause'>;
  readonly #refreshesTotal: Counter;
  readonly #deletesTotal: Counter<'source'>;
  readonly #lookupsTotal: Counter<'result'>;
  readonly #errorsTotal: Counter<'op'>;
  readonly #resyncsTotal: Counter<'table' | 'reason'>;
  readonly #rateLimitedTotal: Counter;
  readonly #modeSwitchesTotal: Counter<'to'>;
  readonly #duration: Histogram<'op'>;
  readonly #roundSeconds: Histogram;
  readonly #failing: Gauge;

  /** Registers the group in `registry` (a private one when omitted, for tests). */
  constructor(opts: { registry?: Registry } = {}) {
    const registry = opts.registry ?? new Registry();
    this.registry = registry;
    const registers = [registry];
    this.#registerGauges(registers);
    this.#insertsTotal = new Counter({
      name: 'fibkeeper_neighbor_inserts_total',
      help: 'Neighbor entries written for new desired next hops (adoption and resyncs included).',
      registers,
    });
    this.#reinsertsTotal = new Counter({
      name: 'fibkeeper_neighbor_reinserts_total',
      help: 'Entries written again after the kernel lost them (deleted or flushed) or reported them FAILED (legacy mode).',
      labelNames: ['cause'],
      registers,
    });
    this.#refreshesTotal = new Counter({
      name: 'fibkeeper_neighbor_refreshes_total',
      help: 'STALE entries fibkeeper made the kernel re-resolve (legacy mode; zero with managed entries).',
      registers,
    });
    this.#deletesTotal = new Counter({
      name: 'fibkeeper_neighbor_deletes_total',
      help: 'fibkeeper-owned entries deleted: no longer desired (reconcile) or found stale by a prune.',
      labelNames: ['source'],
      registers,
    });
    this.#lookupsTotal = new Counter({
      name: 'fibkeeper_neighbor_nexthop_lookups_total',
      help: 'Kernel next-hop lookups (ip route get IP oif DEV fibmatch) by result; one per route prefix and device while lookups are shared (default policy rules).',
      labelNames: ['result'],
      registers,
    });
    this.#errorsTotal = new Counter({
      name: 'fibkeeper_neighbor_reconcile_errors_total',
      help: 'Failed reconcile operations (per entry; prune per call).',
      labelNames: ['op'],
      registers,
    });
    this.#resyncsTotal = new Counter({
      name: 'fibkeeper_neighbor_resyncs_total',
      help: 'Full resyncs of a table: periodic, after an event overflow (ENOBUFS), an interrupted dump, a device change, or a policy-rule change.',
      labelNames: ['table', 'reason'],
      registers,
    });
    this.#rateLimitedTotal = new Counter({
      name: 'fibkeeper_neighbor_rate_limited_total',
      help: 'Times re-inserts, refreshes or retries were held back by the rate limit.',
      registers,
    });
    this.#modeSwitchesTotal = new Counter({
      name: 'fibkeeper_neighbor_mode_switches_total',
      help: 'Switches of the refresh path by neighbor.refresh: auto (legacy above neighbor.rateLimit desired entries, managed again at half of it), by the path switched to.',
      labelNames: ['to'],
      registers,
    });
    for (const to of REFRESH_MODES) this.#modeSwitchesTotal.inc({ to }, 0);
    this.#duration = new Histogram({
      name: 'fibkeeper_neighbor_reconcile_duration_seconds',
      help: 'Duration of one reconcile operation call (a batch counts once).',
      labelNames: ['op'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#roundSeconds = new Histogram({
      name: 'fibkeeper_neighbor_reconcile_round_seconds',
      help: 'Duration of one reconciliation round.',
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#failing = new Gauge({
      name: 'fibkeeper_neighbor_reconcile_failing_entries',
      help: 'Desired entries (and prune) whose last operation failed.',
      registers,
    });
    this.#zeroLabelledSeries();
  }

  /** Every labelled series from the start, so that rate() and increase() see the first event. */
  #zeroLabelledSeries(): void {
    for (const cause of Object.keys(this.#c.reinserts)) this.#reinsertsTotal.inc({ cause }, 0);
    for (const source of Object.keys(this.#c.deletes)) this.#deletesTotal.inc({ source }, 0);
    for (const result of Object.keys(this.#c.lookups)) this.#lookupsTotal.inc({ result }, 0);
    for (const op of RECONCILE_OPS) {
      this.#errorsTotal.inc({ op }, 0);
      this.#duration.zero({ op });
    }
    for (const [table, reason] of RESYNC_PAIRS) this.#resyncsTotal.inc({ table, reason }, 0);
  }

  /** The gauges read from the source at scrape time. */
  #registerGauges(registers: Registry[]): void {
    const self = (): NeighborGaugeSource | undefined => this.#source;
    new Gauge({
      name: 'fibkeeper_neighbor_forwardable_ips',
      help: 'Forwardable IPs (IPs some owner wants XDP to be able to forward to).',
      registers,
      collect() {
        this.set(self()?.forwardableIps() ?? 0);
      },
    });
    new Gauge({
      name: 'fibkeeper_neighbor_selected_devices',
      help: 'Devices on which fibkeeper keeps neighbor entries.',
      registers,
      collect() {
        this.set(self()?.selectedDevices() ?? 0);
      },
    });
    new Gauge({
      name: 'fibkeeper_neighbor_desired_entries',
      help: 'Neighbor entries fibkeeper wants in the kernel, by reconciliation status.',
      labelNames: ['status'],
      registers,
      collect() {
        const s = self()?.desiredByStatus() ?? { pending: 0, done: 0, error: 0 };
        for (const [k, v] of Object.entries(s)) this.set({ status: k }, v);
      },
    });
    new Gauge({
      name: 'fibkeeper_neighbor_kernel_entries',
      help: "Neighbor entries in the kernel that carry fibkeeper's protocol mark, by NUD state.",
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        for (const [k, v] of self()?.kernelEntriesByState() ?? []) this.set({ state: k }, v);
      },
    });
    new Gauge({
      name: 'fibkeeper_neighbor_refresh_mode',
      help: 'The refresh path in use: 1 for managed (the kernel re-resolves entries) or legacy (fibkeeper refreshes STALE entries, rate-limited), 0 for the other.',
      labelNames: ['mode'],
      registers,
      collect() {
        const now = self()?.refreshMode();
        for (const mode of REFRESH_MODES) this.set({ mode }, mode === now ? 1 : 0);
      },
    });
    new Gauge({
      name: 'fibkeeper_neighbor_managed_over_limit',
      help: "1 while neighbor.refresh is managed (forced) with more desired entries than neighbor.rateLimit (until they are down to half of it): the kernel's re-probing of managed entries is then bounded by nothing but the table; neighbor.refresh: auto keeps it within rateLimit.",
      registers,
      collect() {
        this.set(self()?.managedOverLimit() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'fibkeeper_neighbor_unusable_entries',
      help: 'Desired next hops whose kernel entry has been unresolved (FAILED, then INCOMPLETE while the kernel retries: the next hop does not answer ARP/NDP) for longer than neighbor.unusableAfter, by device; XDP passes their traffic to the kernel (NO_NEIGH). Any makes the agent degraded.',
      labelNames: ['device'],
      registers,
      collect() {
        this.reset();
        for (const [device, n] of self()?.unusableByDevice() ?? []) this.set({ device }, n);
      },
    });
    new Gauge({
      name: 'fibkeeper_neighbor_foreign_entries',
      help: "Desired next hops whose kernel entry belongs to someone else (PERMANENT or NOARP, another protocol, or written over fibkeeper's): left alone until it disappears.",
      registers,
      collect() {
        this.set(self()?.foreignEntries() ?? 0);
      },
    });
  }

  setSource(s: NeighborGaugeSource | undefined): void {
    this.#source = s;
  }

  inserted(n: number): void {
    if (n <= 0) return;
    this.#c.inserts += n;
    this.#insertsTotal.inc(n);
  }

  reinserted(cause: ReinsertCause, n: number): void {
    if (n <= 0) return;
    this.#c.reinserts[cause] += n;
    this.#reinsertsTotal.inc({ cause }, n);
  }

  refreshed(n: number): void {
    if (n <= 0) return;
    this.#c.refreshes += n;
    this.#refreshesTotal.inc(n);
  }

  deleted(source: DeleteSource, n: number): void {
    if (n <= 0) return;
    this.#c.deletes[source] += n;
    this.#deletesTotal.inc({ source }, n);
  }

  modeSwitched(to: RefreshModeName): void {
    this.#c.modeSwitches[to]++;
    this.#modeSwitchesTotal.inc({ to });
  }

  lookups(result: LookupResult, n: number): void {
    if (n <= 0) return;
    this.#c.lookups[result] += n;
    this.#lookupsTotal.inc({ result }, n);
  }

  resync(table: ResyncTable, reason: ResyncReason): void {
    const k = `${table}/${reason}`;
    this.#c.resyncs[k] = (this.#c.resyncs[k] ?? 0) + 1;
    this.#resyncsTotal.inc({ table, reason });
  }

  /** A copy of the counters. */
  counters(): NeighborCounters {
    return structuredClone(this.#c);
  }

  // ---- ReconcilerMetrics -------------------------------------------------------------

  reconcileDuration(_reconciler: string, op: ReconcileOp, seconds: number): void {
    this.#duration.observe({ op }, seconds);
  }

  reconcileOps(): void {
    // Counted by the ops themselves, split by cause (inserts, re-inserts, refreshes, deletes).
  }

  reconcileErrors(_reconciler: string, op: ReconcileOp, n: number): void {
    if (n <= 0) return;
    this.#c.reconcileErrors += n;
    this.#errorsTotal.inc({ op }, n);
  }

  currentErrors(_reconciler: string, n: number): void {
    this.#failing.set(n);
  }

  rateLimited(_reconciler: string, n: number): void {
    this.#c.rateLimited += n;
    this.#rateLimitedTotal.inc(n);
  }

  fullResyncs(): void {
    // Counted with their reason by the subsystem (resync()).
  }

  roundDuration(_reconciler: string, seconds: number): void {
    this.#roundSeconds.observe(seconds);
  }
}
