// NeighborSubsystem: wires the tables, the calculator, the reactor and the reconciler to
// the kernel, and is the component the agent starts and stops.
//
//   link+address events ─► Device table ──┐
//   route events ────────► Route table ───┼─► calculator ─► DesiredNeighbor ─► reconciler ─► kernel
//   API / config / XDP ──► ForwardableIP ─┘   (route get)        ▲                 (ops)      │
//   neighbor events ─────► Neighbor table (observed) ─► reactor ─┘ requeue                   │
//                                 ▲──────────────────────────────────────────────────────────┘
import type { Registry } from 'prom-client';
import { ClosedError } from '../errors/index.js';
import type { EventSink } from '../events/index.js';
import type { IpArg } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import { NeighborMetrics, type NeighborCounters, type ResyncReason } from './metrics.js';
import {
  NetlinkHandle,
  NTF_EXT_MANAGED,
  nudStateNames,
  DeviceFeed,
  type RouteFeed,
  type Route,
  type RouteQuery,
} from '../netlink/index.js';
import { Periodic, systemClock, type Clock, type TimerHandle } from '../sched/index.js';
import { Reconciler, Table, type Health } from '../statedb/index.js';
import { stripUndefined } from '../util/index.js';
import { Calculator } from './calculator.js';
import {
  defaultTuning,
  queuedEvents,
  resolveMode,
  type NeighborConfig,
  type NeighborTuning,
} from './config.js';
import { DeviceTracker } from './devices.js';
import { NeighborEvents } from './events.js';
import { makeFeeds, type Feed, type RouteSource } from './feeds.js';
import { ForwardableIPs, type OwnerChange } from './forwardable.js';
import { isOwned, ObservedNeighbors } from './observed.js';
import type { GroupKey } from './prefixes.js';
import { Reactor, type RequeueCause } from './reactor.js';
import { Refresher } from './refresh.js';
import { RefreshPath } from './mode.js';
import { makeWriter } from './writer.js';
import { RouteTracker } from './routes.js';
import { RuleTracker } from './rules.js';
import { buildStatus, type NeighborStatus, type StatusQuery } from './status.js';
import {
  FIBKEEPER_NEIGH_PROTOCOL,
  neighKey,
  type DesiredNeighbor,
  type RefreshMode,
  type UnusableEntry,
} from './types.js';

export interface NeighborSubsystemParams {
  /** Network namespace to manage (a name under /run/netns or a path); default: our own. */
  netns?: string;
  /** A request handle to share; by default the subsystem opens (and closes) its own. */
  netlink?: NetlinkHandle;
  /**
   * The namespace's links and addresses, shared (started by its owner, not stopped by
   * stop()); default: a feed of its own on the handle.
   */
  devices?: DeviceFeed;
  /**
   * The namespace's routes and rules, shared (stopped by its owner, not by stop()); default:
   * a feed of its own on the handle.
   */
  routes?: RouteFeed;
  config: NeighborConfig;
  /** The kernel has managed neighbor entries (the probe's answer). */
  managedSupported: boolean;
  /** Where the metric group registers; a private registry when omitted. */
  registry?: Registry;
  log: Logger;
  clock?: Clock;
  tuning?: Partial<NeighborTuning>;
  /** Where entries written, repaired, lost and deleted are reported (summarized per burst). */
  events?: EventSink;
}

export interface NeighborHealth {
  level: 'ok' | 'degraded';
  /** The reconciler's view: entries whose last write or delete failed. */
  reconciler: Health;
  /** Next-hop lookups failing (retried with backoff). */
  failingLookups: number;
  /** Feeds whose last dump failed, with the reason. */
  feeds: Record<string, string>;
  /**
   * Desired next hops unresolved past neighbor.unusableAfter (the next hop does not answer
   * ARP/NDP), oldest first, at most 10 of them; `unusableCount` says how many in all.
   */
  unusable: UnusableEntry[];
  unusableCount: number;
}

type State = 'new' | 'starting' | 'running' | 'stopped';

/**
 * Forwardable IPs put into the range index per turn of the event loop: ~3 µs each here, so
 * a route change that comes meanwhile waits ~10 ms at most.
 */
const INDEX_SLICE = 4096;

export class NeighborSubsystem {
  readonly #path: RefreshPath;
  readonly protocol = FIBKEEPER_NEIGH_PROTOCOL;
  readonly metrics: NeighborMetrics;
  readonly #forwardable: ForwardableIPs;
  readonly #devices: DeviceTracker;
  readonly #routes: RouteTracker;
  readonly #rules = new RuleTracker();
  readonly #observed: ObservedNeighbors;
  readonly #desired: Table<DesiredNeighbor>;
  readonly #p: NeighborSubsystemParams;
  readonly #tuning: NeighborTuning;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #calculator: Calculator;
  readonly #reactor: Reactor;
  readonly #refresher: Refresher;
  readonly #reconciler: Reconciler<DesiredNeighbor>;
  readonly #causes = new Map<string, RequeueCause>();
  readonly #events: NeighborEvents | undefined;
  #state: State = 'new';
  /** The background indexing of the forwardable IPs runs (#indexLater). */
  #indexing = false;
  #nl: NetlinkHandle | undefined = undefined;
  #deviceFeed: DeviceFeed | undefined = undefined;
  #unlisten: (() => void) | undefined = undefined;
  #routeFeed: RouteSource | undefined = undefined;
  #neighFeed: Feed<number, ResyncReason> | undefined = undefined;
  /** The periodic full resync, every neighbor.resyncInterval while running. */
  readonly #resync: Periodic;
  #redumpTimer: TimerHandle | undefined = undefined;
  readonly #initDone: Map<string, () => void>;
  #stopDone: Promise<void> | undefined = undefined;

  constructor(p: NeighborSubsystemParams) {
    this.#p = p;
    this.#path = new RefreshPath({
      initial: resolveMode(p.config.refresh, p.managedSupported),
      auto: p.config.refresh === 'auto' && p.managedSupported,
      rateLimit: p.config.rateLimit,
      size: () => this.#desired.size,
      switched: (to, size) => this.#switched(to, size),
    });
    this.#tuning = { ...defaultTuning(), ...stripUndefined(p.tuning ?? {}) };
    this.#clock = p.clock ?? systemClock;
    this.#resync = new Periodic(this.#clock, p.config.resyncInterval, () => this.#fullResync());
    this.#log = p.log.child({ component: 'neighbor' });
    this.metrics = new NeighborMetrics({ registry: p.registry });
    const now = (): number => this.#clock.now();
    this.#devices = new DeviceTracker(
      { devices: p.config.devices, holderName: p.config.holderName },
      now,
    );
    this.#forwardable = new ForwardableIPs({ nodeAddresses: () => this.#devices.nodeAddresses() });
    this.#routes = new RouteTracker(now);
    this.#observed = new ObservedNeighbors(
      this.protocol,
      this.#tuning.internAddresses
        ? (ifindex, ip) => this.#calculator.onLinkString(ifindex, ip)
        : undefined,
      now,
    );
    this.#desired = new Table<DesiredNeighbor>({
      name: 'desired-neighbors',
      primaryKey: (d) => d.key,
      now,
    });
    this.#initDone = new Map([
      ['devices', this.#devices.table.registerInitializer('dump')],
      ['routes', this.#routes.table.registerInitializer('dump')],
      ['neighbors', () => this.#observed.markInitialized()],
    ]);
    this.#calculator = new Calculator({
      forwardable: this.#forwardable,
      devices: this.#devices,
      routes: this.#routes,
      desired: this.#desired,
      lookup: (oif, ips) => this.#lookup(oif, ips),
      groupOf: this.#tuning.shareLookups ? (ip) => this.#groupOf(ip) : undefined,
      clock: this.#clock,
      log: this.#log,
      metrics: this.metrics,
      chunk: this.#tuning.lookupChunk,
      retryMinMs: p.config.retryMin,
      retryMaxMs: p.config.retryMax,
    });
    this.#events =
      p.events &&
      new NeighborEvents({
        sink: p.events,
        clock: this.#clock,
        nameOf: (ifindex) => this.#devices.nameOf(ifindex),
        unresolved: () => this.#observed.unresolvedCount,
        unusable: () => this.unusable(),
      });
    this.#reactor = new Reactor({
      desired: this.#desired,
      devices: this.#devices,
      mode: () => this.#currentMode(),
      protocol: this.protocol,
      clock: this.#clock,
      retryMinMs: p.config.retryMin,
      retryMaxMs: p.config.retryMax,
      requeue: (key, cause) => this.#requeue(key, cause),
      ...(this.#events ? { lost: (key, cause) => this.#events?.lost(key, cause) } : {}),
    });
    this.#reconciler = this.#makeReconciler();
    this.#refresher = this.#makeRefresher();
    this.#wire();
    this.#exposeMetrics();
  }

  #censusCache:
    | { observed: number; desired: number; value: ReturnType<ObservedNeighbors['census']> }
    | undefined;

  /** The observed table's census, computed again only after a change of either table. */
  #census(): ReturnType<ObservedNeighbors['census']> {
    const c = this.#censusCache;
    const observed = this.#observed.version;
    const desired = this.#desired.revision;
    if (c !== undefined && c.observed === observed && c.desired === desired) return c.value;
    const value = this.#observed.census((ifindex, ip) => this.#desired.has(neighKey(ifindex, ip)));
    this.#censusCache = { observed, desired, value };
    return value;
  }

  /** The rate limiter's burst: a tenth of a second's worth of neighbor.rateLimit. */
  get #burst(): number {
    return Math.max(1, Math.ceil(this.#p.config.rateLimit / 10));
  }

  /** How entries stay fresh right now: managed (the kernel re-resolves) or legacy. */
  get mode(): RefreshMode {
    return this.#path.mode;
  }

  /** The refresh path, switched first when `auto` calls for it (mode.ts). */
  #currentMode(): RefreshMode {
    return this.#path.current();
  }

  /**
   * The refresh path switched: writes the entries that carry the other path's flags again
   * (rate-limited: at the switch there are about rateLimit of them).
   */
  #switched(to: RefreshMode, size: number): void {
    this.metrics.modeSwitched(to);
    this.#log.info(
      { mode: to, desiredEntries: size, rateLimit: this.#p.config.rateLimit },
      'neighbor.refresh auto: switched the refresh path',
    );
    setImmediate(() => {
      if (this.#state !== 'running' || this.#path.mode !== to) return;
      for (const r of this.#desired.rows()) {
        const d = r.object;
        const seen = this.#observed.find(d.ifindex, d.nexthop);
        if (seen === undefined || !isOwned(seen, this.protocol)) continue;
        const managed = (seen.flagsExt & NTF_EXT_MANAGED) !== 0;
        if (managed !== (to === 'managed')) this.#requeue(r.key, 'mode');
      }
    });
  }

  #makeRefresher(): Refresher {
    return new Refresher({
      desired: this.#desired,
      observed: this.#observed,
      devices: this.#devices,
      protocol: this.protocol,
      mode: () => this.#currentMode(),
      clock: this.#clock,
      requeue: (key) => this.#requeue(key, 'refresh'),
      written: (key) => this.#causes.get(key) !== 'refresh',
      // The limiter's burst: the reconciler takes them at rateLimit per second.
      outstanding: this.#burst,
      scanPerTick: this.#tuning.refreshScan,
      tickMs: this.#tuning.refreshTickMs,
    });
  }

  /** The gauges read at scrape time. */
  #exposeMetrics(): void {
    this.metrics.setSource({
      forwardableIps: () => this.#forwardable.size,
      selectedDevices: () => this.#devices.selected().length,
      desiredByStatus: () => this.#desired.statusCounts(),
      kernelEntriesByState: () => this.#census().byState,
      foreignEntries: () => this.#census().foreignWanted,
      refreshMode: () => this.#path.mode,
      unusableByDevice: () => {
        const by = new Map(this.#devices.selected().map((d) => [d.name, 0]));
        for (const u of this.unusable()) by.set(u.device, (by.get(u.device) ?? 0) + 1);
        return by;
      },
    });
  }

  #makeReconciler(): Reconciler<DesiredNeighbor> {
    return makeWriter({
      config: this.#p.config,
      tuning: this.#tuning,
      kernel: {
        neighSetMany: (e) => this.#handle().neighSetMany(e),
        neighDelMany: (e) => this.#handle().neighDelMany(e),
        neighGet: (k) => this.#handle().neighGet(k),
        neighEach: (each) => this.#handle().neighEach(each),
      },
      mode: () => this.#currentMode(),
      protocol: this.protocol,
      desired: this.#desired,
      inputs: [this.#forwardable, this.#devices.table, this.#routes.table, this.#observed],
      observed: this.#observed,
      metrics: this.metrics,
      clock: this.#clock,
      log: this.#log,
      twoStep: this.#tuning.legacyTwoStep ?? !this.#p.managedSupported,
      causes: this.#causes,
      burst: this.#burst,
      reading: (on) => this.#neighFeed?.reading(on),
      eventsRead: () => this.#neighFeed?.eventsRead ?? 0,
      eventOverflows: () => this.#neighFeed?.overflows ?? 0,
      eventsQueued: () => this.eventsQueued(),
      missing: (keys) => {
        for (const k of keys) this.#requeue(k, 'deleted');
      },
      ...(this.#events ? { events: this.#events } : {}),
    });
  }

  #wire(): void {
    const calc = this.#calculator;
    this.#forwardable.setListener({ changed: (a, r) => calc.forwardableChanged(a, r) });
    this.#devices.setListener({
      selectionChanged: (a, r) => {
        if (this.#state === 'running') this.metrics.resync('desired', 'device');
        calc.selectionChanged(a, r);
      },
      nodeAddressChanged: (ip, present) => calc.nodeAddressChanged(ip, present),
      routesMayHaveChanged: () => this.#scheduleRouteRedump(),
    });
    this.#routes.setListener({ routeChanged: (b, a) => calc.routeChanged(b, a) });
    this.#rules.setListener({
      rulesChanged: () => {
        if (this.#state !== 'running') return;
        this.#log.info(
          { ipv4TableOnly: this.#rules.tableOnly(4), ipv6TableOnly: this.#rules.tableOnly(6) },
          'policy rules changed: every next hop is looked up again',
        );
        this.metrics.resync('desired', 'rules');
        calc.fullResync();
      },
    });
  }

  /** The lookup an IP may share: only while its family's routing is table-only. */
  #groupOf(ip: string): GroupKey | undefined {
    const family = ip.includes(':') ? 6 : 4;
    return this.#rules.tableOnly(family) ? this.#routes.prefixes.groupOf(ip) : undefined;
  }

  #handle(): NetlinkHandle {
    if (this.#nl === undefined) throw new ClosedError('neighbor subsystem: not started');
    return this.#nl;
  }

  #lookup(oif: number, ips: readonly string[]): Promise<readonly (Route | Error)[]> {
    const queries = new Array<RouteQuery>(ips.length);
    for (let i = 0; i < ips.length; i++) queries[i] = { dst: ips[i]!, oif, fibmatch: true };
    return this.#handle().routeGetMany(queries);
  }

  #requeue(key: string, cause: RequeueCause): void {
    this.#causes.set(key, cause);
    // A lost or failed entry goes ahead of the refreshes waiting for the rate limit.
    const urgent = cause === 'deleted' || cause === 'failed';
    if (!this.#reconciler.requeue(key, { urgent })) this.#causes.delete(key);
    this.#log.debug({ key, cause }, 'requeued');
  }

  // ---- lifecycle ---------------------------------------------------------------------

  /**
   * Registers a source of forwardable IPs that must have loaded before fibkeeper may delete
   * entries it finds unused (the config, a persisted API state, the XDP miss tracker).
   * Call before start(); call the returned function once the source has written its IPs.
   */
  registerInitializer(name: string): () => void {
    if (this.#state !== 'new') {
      throw new ClosedError(`neighbor: initializer ${name} registered after start()`);
    }
    return this.#forwardable.registerInitializer(name);
  }

  /**
   * Subscribes to link, address, route and neighbor events, dumps each table, then starts the
   * calculator and the reconciler. Resolves once the dumps are loaded (not when the kernel
   * is converged: see waitReady). Rejects if a dump fails for another reason than a
   * concurrent change (which is retried).
   */
  async start(): Promise<void> {
    if (this.#state !== 'new')
      throw new ClosedError(`neighbor subsystem: start() when ${this.#state}`);
    this.#state = 'starting';
    try {
      this.#nl = this.#p.netlink ?? NetlinkHandle.open({ netns: this.#p.netns });
      this.#openFeeds();
      await this.#deviceFeed!.start();
      await this.#routeFeed!.initial();
      await this.#neighFeed!.initial();
    } catch (err) {
      await this.stop();
      throw err;
    }
    if (this.#state !== 'starting') return;
    this.#state = 'running';
    this.#calculator.start();
    this.#reactor.start();
    this.#reconciler.start();
    this.#refresher.start();
    void this.#forwardable.waitInitialized().then(() => this.#calculator.inputInitialized());
    this.#resync.start();
    this.#events?.start();
    this.#log.info(
      { mode: this.mode, devices: this.#devices.selected().map((d) => d.name) },
      'neighbor subsystem started',
    );
  }

  #openFeeds(): void {
    const feeds = makeFeeds({
      nl: this.#handle(),
      tuning: this.#tuning,
      clock: this.#clock,
      log: this.#log,
      retryMs: this.#p.config.retryMin,
      metrics: this.metrics,
      devices: this.#devices,
      deviceFeed: () => this.#deviceFeed!,
      routes: this.#routes,
      rules: this.#rules,
      ...(this.#p.routes ? { routeFeed: this.#p.routes } : {}),
      observed: this.#observed,
      reactor: this.#reactor,
      loaded: (table, changed) => {
        if (table === 'neighbors') this.#repairMissing();
        this.#markInitialized(table);
        if (table === 'devices' && changed === true) this.#scheduleRouteRedump();
      },
    });
    this.#routeFeed = feeds.routes;
    this.#neighFeed = feeds.neighbors;
    // Subscribe to everything before the first dump of anything (a shared device feed is
    // subscribed and loaded already: listen() hands over its snapshot at once).
    for (const f of [this.#routeFeed, this.#neighFeed]) f.open();
    this.#deviceFeed =
      this.#p.devices ??
      new DeviceFeed({
        nl: this.#handle(),
        log: this.#log,
        clock: this.#clock,
        rcvbuf: this.#tuning.linkRcvbuf,
        retryMs: this.#p.config.retryMin,
      });
    this.#unlisten = this.#deviceFeed.listen(feeds.links);
  }

  /**
   * After a neighbor dump: entries written earlier that the kernel no longer has, whether
   * or not their deletion was seen (its event may have been lost in the overflow).
   */
  #repairMissing(): void {
    for (const r of this.#desired.rows()) {
      const d = r.object;
      if (this.#observed.find(d.ifindex, d.nexthop) !== undefined) continue;
      if (this.#desired.status(r.key)?.kind !== 'done') continue;
      this.#reactor.observedEntry(d.ifindex, d.nexthop, undefined);
    }
  }

  #markInitialized(table: string): void {
    const done = this.#initDone.get(table);
    if (done === undefined) return;
    this.#initDone.delete(table);
    done();
    this.#calculator.inputInitialized();
  }

  /** The periodic full resync: routes dumped again, every next hop looked up again. */
  #fullResync(): void {
    this.metrics.resync('desired', 'interval');
    void this.#routeFeed?.resync('interval');
    this.#calculator.fullResync();
  }

  #scheduleRouteRedump(): void {
    if (this.#state !== 'running' || this.#redumpTimer !== undefined) return;
    this.#redumpTimer = this.#clock.setTimeout(() => {
      this.#redumpTimer = undefined;
      void this.#routeFeed?.resync('device');
    }, this.#tuning.routeRedumpDelayMs);
  }

  /**
   * Stops everything in reverse order; the kernel entries stay where they are (a restarted
   * agent adopts them). Idempotent.
   */
  stop(): Promise<void> {
    if (this.#stopDone !== undefined) return this.#stopDone;
    this.#state = 'stopped';
    this.#stopDone = (async () => {
      this.#resync.stop();
      this.#events?.stop();
      if (this.#redumpTimer !== undefined) this.#clock.clearTimeout(this.#redumpTimer);
      this.#refresher.stop();
      await this.#reconciler.stop();
      this.#reactor.stop();
      this.#calculator.stop();
      this.#unlisten?.();
      if (this.#p.devices === undefined) this.#deviceFeed?.stop();
      for (const f of [this.#routeFeed, this.#neighFeed]) f?.stop();
      if (this.#p.netlink === undefined) this.#nl?.close();
      this.#log.info('neighbor subsystem stopped');
    })();
    return this.#stopDone;
  }

  // ---- forwardable IPs ---------------------------------------------------------------

  /**
   * Adds `owner` to each IP. All or nothing: throws InvalidArgumentError naming bad IPs.
   * Returns how many IPs the owner did not hold before.
   */
  upsert(owner: string, ips: readonly IpArg[]): OwnerChange {
    const change = this.#forwardable.upsert(owner, ips);
    this.#indexLater();
    return change;
  }

  /**
   * Removes `owner` from each IP; an IP goes when its last owner does. All or nothing.
   * Returns how many of the IPs the owner held (the others are no error).
   */
  delete(owner: string, ips: readonly IpArg[]): OwnerChange {
    return this.#forwardable.delete(owner, ips);
  }

  /** Makes `ips` exactly what `owner` holds. All or nothing. Returns what changed. */
  setOwner(owner: string, ips: readonly IpArg[]): OwnerChange {
    const change = this.#forwardable.setOwner(owner, ips);
    this.#indexLater();
    return change;
  }

  /** Forwardable IPs added and not yet in the range index (#indexLater catches up). */
  get unindexedIps(): number {
    return this.#forwardable.unindexed;
  }

  /**
   * Puts the IPs that upsert/setOwner added into the range index in slices of INDEX_SLICE,
   * one slice per turn of the event loop, beside the load's lookups and writes: the index is
   * ready about when the entries are. Without it, the first route change after a load of
   * 1,000,000 IPs indexed them all before it could answer (1.5 s). Waiting for an idle
   * calculator and reconciler first, as it once did, left most of the index to the first
   * route change at a million (both stay busy until the load's last entry is written):
   * 639,552 to 819,776 IPs indexed at once (1.5–2.6 s), then major collections of up to
   * 440 ms while the collector caught up (docs/neighbor.md).
   */
  #indexLater(): void {
    if (this.#indexing || this.#forwardable.unindexed === 0) return;
    this.#indexing = true;
    void (async () => {
      const stopped = (): boolean => this.#state === 'stopped'; // read again after each wait
      while (!stopped() && this.#forwardable.unindexed > 0) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (!stopped()) this.#forwardable.indexSome(INDEX_SLICE);
      }
    })()
      .catch((err: unknown) =>
        this.#log.error({ err }, 'neighbor: indexing the forwardable IPs failed'),
      )
      .finally(() => {
        this.#indexing = false;
      });
  }

  /** Checks IPs as upsert() does (valid unicast, not the node's own), changing nothing. */
  check(ips: readonly IpArg[]): string[] {
    return this.#forwardable.check(ips);
  }

  /** The owners of one forwardable IP (canonical text); [] when it is not forwardable. */
  owners(ip: string): readonly string[] {
    return this.#forwardable.get(ip)?.owners ?? [];
  }

  /** Every forwardable IP with its owners. */
  list(): { ip: string; owners: readonly string[] }[] {
    return this.#forwardable.list().map((f) => ({ ip: f.ip, owners: f.owners }));
  }

  // ---- readiness, health, status -----------------------------------------------------

  /** Initial dumps loaded, first calculation and first reconciliation round (with prune) done. */
  ready(): boolean {
    return this.#reconciler.firstRoundDone;
  }

  waitReady(signal?: AbortSignal): Promise<void> {
    return this.#reconciler.waitFirstRound(signal);
  }

  /**
   * Resolves when no feed is resyncing (a dump after an overflow, say), the calculator has
   * nothing queued and the reconciler nothing due.
   */
  async settled(): Promise<void> {
    for (let i = 0; i < 3; i++) {
      for (const f of [this.#deviceFeed, this.#routeFeed, this.#neighFeed]) await f?.idle();
      await this.#calculator.waitIdle();
      await this.#reconciler.waitIdle();
    }
  }

  /** Neighbor events waiting unread in the event socket now (0 when the kernel cannot tell). */
  eventsQueued(): number {
    return queuedEvents(this.#neighFeed?.queuedBytes());
  }

  /** The counters (inserts, re-inserts, refreshes, deletes, lookups, resyncs...) as numbers. */
  counters(): NeighborCounters {
    return this.metrics.counters();
  }

  health(): NeighborHealth {
    const reconciler = this.#reconciler.health();
    const feeds: Record<string, string> = {};
    for (const [name, f] of [
      ['links', this.#deviceFeed],
      ['routes', this.#routeFeed],
      ['neighbors', this.#neighFeed],
    ] as const) {
      if (f?.lastError !== undefined) feeds[name] = f.lastError;
    }
    const failingLookups = this.#calculator.failingLookups;
    const unusable = this.unusable();
    const ok =
      reconciler.level === 'ok' &&
      failingLookups === 0 &&
      Object.keys(feeds).length === 0 &&
      unusable.length === 0;
    return {
      level: ok ? 'ok' : 'degraded',
      reconciler,
      failingLookups,
      feeds,
      unusable: unusable.slice(0, 10),
      unusableCount: unusable.length,
    };
  }

  /**
   * Desired next hops whose kernel entry went FAILED at least neighbor.unusableAfter ago and
   * has not resolved since, oldest first.
   */
  unusable(): UnusableEntry[] {
    const now = this.#clock.now();
    const rows = this.#observed.unresolvedSince(
      now - this.#p.config.unusableAfter,
      (ifindex, ip) =>
        this.#devices.isSelected(ifindex) && this.#desired.has(neighKey(ifindex, ip)),
    );
    return rows.map((r) => ({
      nexthop: r.ip,
      device: this.#devices.nameOf(r.ifindex) ?? String(r.ifindex),
      state: nudStateNames(r.state).join(',').toLowerCase(),
      forSeconds: Math.round((now - r.since) / 1000),
      forwardable: [...(this.#desired.get(neighKey(r.ifindex, r.ip))?.refs ?? [])].slice(0, 5),
    }));
  }

  /** Rows for `fibkeeper status` (filtered and capped by `q`). */
  status(q: StatusQuery = {}): NeighborStatus {
    return buildStatus(
      {
        mode: this.mode,
        protocol: this.protocol,
        ready: this.ready(),
        forwardable: this.#forwardable,
        devices: this.#devices,
        desired: this.#desired,
        observed: this.#observed,
        calculator: this.#calculator,
        routes: this.#routes,
        reactor: this.#reactor,
        counters: this.metrics.counters(),
        census: this.#census(),
        pendingLookups: this.#calculator.pending,
        scheduledRetries: this.#reconciler.scheduledRetries,
        sharedLookups: {
          ipv4: this.#tuning.shareLookups && this.#rules.tableOnly(4),
          ipv6: this.#tuning.shareLookups && this.#rules.tableOnly(6),
        },
        unusable: this.unusable(),
      },
      q,
    );
  }
}
