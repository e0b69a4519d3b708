// NeighborSubsystem: the facade the agent starts and stops over the parts wiring.ts builds
// (who owns which table, who writes the kernel, which feed each reads: see its list).
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
import type { NeighborMetrics, NeighborCounters } from './metrics.js';
import { NetlinkHandle, type DeviceFeed, type RouteFeed } from '../netlink/index.js';
import { Periodic, systemClock, Timer, type Clock } from '../sched/index.js';
import type { Health } from '../statedb/index.js';
import { stripUndefined } from '../util/index.js';
import { defaultTuning, queuedEvents, type NeighborConfig, type NeighborTuning } from './config.js';
import type { OwnerChange } from './forwardable.js';
import { buildStatus, type NeighborStatus, type StatusQuery } from './status.js';
import { FIBKEEPER_NEIGH_PROTOCOL, type RefreshMode, type UnusableEntry } from './types.js';
import {
  managedOverLimitWarning,
  openNeighborFeeds,
  wireNeighbor,
  type NeighborFeeds,
  type NeighborParts,
  type WiringContext,
} from './wiring.js';

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
  readonly protocol = FIBKEEPER_NEIGH_PROTOCOL;
  readonly metrics: NeighborMetrics;
  /** What the parts need from the facade (wiring.ts). */
  readonly #ctx: WiringContext;
  readonly #n: NeighborParts;
  readonly #p: NeighborSubsystemParams;
  readonly #tuning: NeighborTuning;
  readonly #clock: Clock;
  readonly #log: Logger;
  #state: State = 'new';
  /** The background indexing of the forwardable IPs runs (#indexLater). */
  #indexing = false;
  #nl: NetlinkHandle | undefined = undefined;
  /** The feeds start() opened (wiring.ts), each set as it is made. */
  readonly #feeds: Partial<NeighborFeeds> = {};
  /** The periodic full resync, every neighbor.resyncInterval while running. */
  readonly #resync: Periodic;
  /** The route dump again after a change of devices, neighbor tuning routeRedumpDelayMs later. */
  readonly #redump: Timer;
  #stopDone: Promise<void> | undefined = undefined;

  constructor(p: NeighborSubsystemParams) {
    this.#p = p;
    this.#tuning = { ...defaultTuning(), ...stripUndefined(p.tuning ?? {}) };
    this.#clock = p.clock ?? systemClock;
    this.#resync = new Periodic(this.#clock, p.config.resyncInterval, () => this.#fullResync());
    this.#redump = new Timer(this.#clock);
    this.#log = p.log.child({ component: 'neighbor' });
    this.#ctx = {
      config: p.config,
      managedSupported: p.managedSupported,
      ...(p.registry ? { registry: p.registry } : {}),
      ...(p.events ? { events: p.events } : {}),
      tuning: this.#tuning,
      clock: this.#clock,
      log: this.#log,
      running: () => this.#state === 'running',
      handle: () => this.#handle(),
      neighFeed: () => this.#feeds.neighbors,
      redumpRoutes: () => this.#scheduleRouteRedump(),
    };
    this.#n = wireNeighbor(this.#ctx);
    this.metrics = this.#n.metrics;
  }

  /** How entries stay fresh right now: managed (the kernel re-resolves) or legacy. */
  get mode(): RefreshMode {
    return this.#n.path.mode;
  }

  #handle(): NetlinkHandle {
    if (this.#nl === undefined) throw new ClosedError('neighbor subsystem: not started');
    return this.#nl;
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
    return this.#n.forwardable.registerInitializer(name);
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
      await this.#feeds.devices!.start();
      await this.#feeds.routes!.initial();
      await this.#feeds.neighbors!.initial();
    } catch (err) {
      await this.stop();
      throw err;
    }
    if (this.#state !== 'starting') return;
    this.#state = 'running';
    this.#n.calculator.start();
    this.#n.reactor.start();
    this.#n.reconciler.start();
    this.#n.refresher.start();
    void this.#n.forwardable.waitInitialized().then(() => this.#n.calculator.inputInitialized());
    this.#resync.start();
    this.#n.events?.start();
    this.#log.info(
      { mode: this.mode, devices: this.#n.devices.selected().map((d) => d.name) },
      'neighbor subsystem started',
    );
  }

  #openFeeds(): void {
    openNeighborFeeds(
      this.#ctx,
      this.#n,
      {
        ...(this.#p.devices ? { devices: this.#p.devices } : {}),
        ...(this.#p.routes ? { routes: this.#p.routes } : {}),
      },
      (table, changed) => {
        if (table === 'neighbors') this.#repairMissing();
        this.#markInitialized(table);
        if (table === 'devices' && changed === true) this.#scheduleRouteRedump();
      },
      this.#feeds,
    );
  }

  /**
   * After a neighbor dump: entries written earlier that the kernel no longer has, whether
   * or not their deletion was seen (its event may have been lost in the overflow).
   */
  #repairMissing(): void {
    for (const r of this.#n.desired.rows()) {
      const d = r.object;
      if (this.#n.observed.find(d.ifindex, d.nexthop) !== undefined) continue;
      if (this.#n.desired.status(r.key)?.kind !== 'done') continue;
      this.#n.reactor.observedEntry(d.ifindex, d.nexthop, undefined);
    }
  }

  #markInitialized(table: string): void {
    const done = this.#n.initDone.get(table);
    if (done === undefined) return;
    this.#n.initDone.delete(table);
    done();
    this.#n.calculator.inputInitialized();
  }

  /** The periodic full resync: routes dumped again, every next hop looked up again. */
  #fullResync(): void {
    this.metrics.resync('desired', 'interval');
    void this.#feeds.routes?.resync('interval');
    this.#n.calculator.fullResync();
  }

  /** Dumps the routes again shortly; a redump already due covers this change too. */
  #scheduleRouteRedump(): void {
    if (this.#state !== 'running') return;
    this.#redump.startIfIdle(this.#tuning.routeRedumpDelayMs, () => {
      void this.#feeds.routes?.resync('device');
    });
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
      this.#n.events?.stop();
      this.#redump.cancel();
      this.#n.refresher.stop();
      await this.#n.reconciler.stop();
      this.#n.reactor.stop();
      this.#n.calculator.stop();
      this.#feeds.unlisten?.();
      if (this.#p.devices === undefined) this.#feeds.devices?.stop();
      for (const f of [this.#feeds.routes, this.#feeds.neighbors]) f?.stop();
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
    const change = this.#n.forwardable.upsert(owner, ips);
    this.#indexLater();
    return change;
  }

  /**
   * Removes `owner` from each IP; an IP goes when its last owner does. All or nothing.
   * Returns how many of the IPs the owner held (the others are no error).
   */
  delete(owner: string, ips: readonly IpArg[]): OwnerChange {
    return this.#n.forwardable.delete(owner, ips);
  }

  /** Makes `ips` exactly what `owner` holds. All or nothing. Returns what changed. */
  setOwner(owner: string, ips: readonly IpArg[]): OwnerChange {
    const change = this.#n.forwardable.setOwner(owner, ips);
    this.#indexLater();
    return change;
  }

  /** Forwardable IPs added and not yet in the range index (#indexLater catches up). */
  get unindexedIps(): number {
    return this.#n.forwardable.unindexed;
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
    if (this.#indexing || this.#n.forwardable.unindexed === 0) return;
    this.#indexing = true;
    void (async () => {
      const stopped = (): boolean => this.#state === 'stopped'; // read again after each wait
      while (!stopped() && this.#n.forwardable.unindexed > 0) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (!stopped()) this.#n.forwardable.indexSome(INDEX_SLICE);
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
    return this.#n.forwardable.check(ips);
  }

  /** The owners of one forwardable IP (canonical text); [] when it is not forwardable. */
  owners(ip: string): readonly string[] {
    return this.#n.forwardable.get(ip)?.owners ?? [];
  }

  /** Every forwardable IP with its owners. */
  list(): { ip: string; owners: readonly string[] }[] {
    return this.#n.forwardable.list().map((f) => ({ ip: f.ip, owners: f.owners }));
  }

  // ---- readiness, health, status -----------------------------------------------------

  /** Initial dumps loaded, first calculation and first reconciliation round (with prune) done. */
  ready(): boolean {
    return this.#n.reconciler.firstRoundDone;
  }

  waitReady(signal?: AbortSignal): Promise<void> {
    return this.#n.reconciler.waitFirstRound(signal);
  }

  /**
   * Resolves when no feed is resyncing (a dump after an overflow, say), the calculator has
   * nothing queued and the reconciler nothing due.
   */
  async settled(): Promise<void> {
    for (let i = 0; i < 3; i++) {
      for (const f of [this.#feeds.devices, this.#feeds.routes, this.#feeds.neighbors])
        await f?.idle();
      await this.#n.calculator.waitIdle();
      await this.#n.reconciler.waitIdle();
    }
  }

  /** Neighbor events waiting unread in the event socket now (0 when the kernel cannot tell). */
  eventsQueued(): number {
    return queuedEvents(this.#feeds.neighbors?.queuedBytes());
  }

  /** The counters (inserts, re-inserts, refreshes, deletes, lookups, resyncs...) as numbers. */
  counters(): NeighborCounters {
    return this.metrics.counters();
  }

  health(): NeighborHealth {
    const reconciler = this.#n.reconciler.health();
    const feeds: Record<string, string> = {};
    for (const [name, f] of [
      ['links', this.#feeds.devices],
      ['routes', this.#feeds.routes],
      ['neighbors', this.#feeds.neighbors],
    ] as const) {
      if (f?.lastError !== undefined) feeds[name] = f.lastError;
    }
    const failingLookups = this.#n.calculator.failingLookups;
    // The ten oldest and the count: not a row for each of a storm's 100,000 (unusable.ts).
    const unusable = this.#n.unusable(10);
    const ok =
      reconciler.level === 'ok' &&
      failingLookups === 0 &&
      Object.keys(feeds).length === 0 &&
      unusable.count === 0;
    return {
      level: ok ? 'ok' : 'degraded',
      reconciler,
      failingLookups,
      feeds,
      unusable: unusable.entries,
      unusableCount: unusable.count,
    };
  }

  /**
   * Desired next hops whose kernel entry went FAILED at least neighbor.unusableAfter ago and
   * has not resolved since, oldest first.
   */
  unusable(): UnusableEntry[] {
    return this.#n.unusable().entries;
  }

  /** Rows for `fibkeeper status` (filtered and capped by `q`). */
  status(q: StatusQuery = {}): NeighborStatus {
    return buildStatus(
      {
        mode: this.mode,
        warnings: this.#n.path.overLimit
          ? [managedOverLimitWarning(this.#n.desired.size, this.#p.config.rateLimit)]
          : [],
        protocol: this.protocol,
        ready: this.ready(),
        forwardable: this.#n.forwardable,
        devices: this.#n.devices,
        desired: this.#n.desired,
        observed: this.#n.observed,
        calculator: this.#n.calculator,
        routes: this.#n.routes,
        reactor: this.#n.reactor,
        counters: this.metrics.counters(),
        census: this.#n.census(),
        pendingLookups: this.#n.calculator.pending,
        scheduledRetries: this.#n.reconciler.scheduledRetries,
        sharedLookups: {
          ipv4: this.#tuning.shareLookups && this.#n.rules.tableOnly(4),
          ipv6: this.#tuning.shareLookups && this.#n.rules.tableOnly(6),
        },
        unusable: this.unusable(),
      },
      q,
    );
  }
}
