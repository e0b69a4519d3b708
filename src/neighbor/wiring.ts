// The neighbor subsystem's wiring list: every part, one sentence each (who owns the table,
// who writes the kernel, which feed it reads), built in this order by wireNeighbor(); the
// feeds are opened at start() by openNeighborFeeds(). subsystem.ts is the facade over these
// parts: lifecycle, forwardable IPs, readiness, health and status.
//
//   DeviceTracker (devices.ts)  owns the Device table; reads the agent's DeviceFeed (links
//       and addresses), shared, or a feed of its own when run alone.
//   RouteTracker, RuleTracker (routes.ts, rules.ts)  own the Route table and the policy
//       rules; read the agent's RouteFeed, shared, or a route feed of their own.
//   ForwardableIPs (forwardable.ts)  owns the ForwardableIP table (API, config, XDP misses).
//   ObservedNeighbors (observed.ts)  owns the observed Neighbor table: the kernel's entries,
//       from a neighbor feed and socket of the subsystem's own.
//   Calculator (calculator.ts, assignments.ts)  owns the DesiredNeighbor table: the next hops
//       of each forwardable IP × selected device, by `ip route get` on the request handle.
//   Reconciler (writer.ts, ops.ts)  the only writer of the kernel's neighbor entries: makes
//       them match the desired table, rate-limited, and prunes what is ours and unwanted.
//   Reactor (reactor.ts)  reads the observed table's changes and requeues the entries the
//       kernel lost or failed, with backoff.
//   Refresher (refresh.ts)  legacy path: requeues entries before they go stale.
//   RefreshPath (mode.ts)  managed or legacy, switched by `auto` with the table's size.
//   NeighborEvents (events.ts)  reports writes, repairs and losses to the event sink.
//   NeighborMetrics (metrics.ts)  counts; reads the tables at scrape time, writes nothing.
import type { Registry } from 'prom-client';
import type { EventSink } from '../events/index.js';
import type { Logger } from '../log/index.js';
import {
  DeviceFeed,
  NTF_EXT_MANAGED,
  type NetlinkHandle,
  type Route,
  type RouteFeed,
  type RouteQuery,
} from '../netlink/index.js';
import type { Clock } from '../sched/index.js';
import { Reconciler, Table } from '../statedb/index.js';
import { Calculator } from './calculator.js';
import { queuedEvents, resolveMode, type NeighborConfig, type NeighborTuning } from './config.js';
import { DeviceTracker } from './devices.js';
import { NeighborEvents } from './events.js';
import { makeFeeds, type Feed, type RouteSource } from './feeds.js';
import { ForwardableIPs } from './forwardable.js';
import { NeighborMetrics, type ResyncReason } from './metrics.js';
import { RefreshPath } from './mode.js';
import { isOwned, ObservedNeighbors } from './observed.js';
import type { GroupKey } from './prefixes.js';
import { Reactor, type RequeueCause } from './reactor.js';
import { Refresher } from './refresh.js';
import { RouteTracker } from './routes.js';
import { RuleTracker } from './rules.js';
import {
  FIBKEEPER_NEIGH_PROTOCOL,
  neighKey,
  type DesiredNeighbor,
  type RefreshMode,
} from './types.js';
import { unusableBetween, unusableByDevice, type UnusableList } from './unusable.js';
import { makeWriter } from './writer.js';

type Census = ReturnType<ObservedNeighbors['census']>;

/** What the parts need from the facade and the agent. */
export interface WiringContext {
  config: NeighborConfig;
  managedSupported: boolean;
  registry?: Registry;
  events?: EventSink;
  tuning: NeighborTuning;
  clock: Clock;
  log: Logger;
  /** The facade runs (started, not stopped). */
  running(): boolean;
  /** The request handle; throws before start(). */
  handle(): NetlinkHandle;
  /** The neighbor feed, once start() opened it. */
  neighFeed(): Feed<number, ResyncReason> | undefined;
  /** Dumps the routes again shortly (devices changed). */
  redumpRoutes(): void;
}

export interface NeighborParts {
  metrics: NeighborMetrics;
  path: RefreshPath;
  devices: DeviceTracker;
  forwardable: ForwardableIPs;
  routes: RouteTracker;
  rules: RuleTracker;
  observed: ObservedNeighbors;
  desired: Table<DesiredNeighbor>;
  /** The input tables still to be loaded, with the function that says they are. */
  initDone: Map<string, () => void>;
  calculator: Calculator;
  events: NeighborEvents | undefined;
  reactor: Reactor;
  reconciler: Reconciler<DesiredNeighbor>;
  refresher: Refresher;
  /** Writes an entry again (`cause`: why, for the counters and the events). */
  requeue(key: string, cause: RequeueCause): void;
  /** The observed table's census, computed again only after a change of either table. */
  census(): Census;
  /** Desired next hops unresolved for neighbor.unusableAfter: how many, the `limit` oldest. */
  unusable(limit?: number): UnusableList;
}

const protocol = FIBKEEPER_NEIGH_PROTOCOL;

/** Builds the parts and connects their listeners; nothing touches the kernel yet. */
export function wireNeighbor(ctx: WiringContext): NeighborParts {
  const { config, clock, tuning } = ctx;
  const now = (): number => clock.now();
  const path = new RefreshPath({
    initial: resolveMode(config.refresh, ctx.managedSupported),
    auto: config.refresh === 'auto' && ctx.managedSupported,
    rateLimit: config.rateLimit,
    size: () => desired.size,
    switched: (to, size) => switched(ctx, parts, to, size),
    overLimit: (over, size) => overLimit(ctx, over, size),
  });
  const metrics = new NeighborMetrics({ registry: ctx.registry });
  const devices = new DeviceTracker(
    { devices: config.devices, holderName: config.holderName },
    now,
  );
  const forwardable = new ForwardableIPs({ nodeAddresses: () => devices.nodeAddresses() });
  const routes = new RouteTracker(now);
  const observed = new ObservedNeighbors(
    protocol,
    tuning.internAddresses
      ? (ifindex, ip) => parts.calculator.onLinkString(ifindex, ip)
      : undefined,
    now,
  );
  const desired = new Table<DesiredNeighbor>({
    name: 'desired-neighbors',
    primaryKey: (d) => d.key,
    now,
  });
  const causes = new Map<string, RequeueCause>();
  // The workers reach each other through `parts` (the reactor requeues through the
  // reconciler, the reconciler's repairs through requeue): buildWorkers() completes it
  // before anything runs.
  const parts = {
    metrics,
    path,
    devices,
    forwardable,
    routes,
    rules: new RuleTracker(),
    observed,
    desired,
    initDone: new Map([
      ['devices', devices.table.registerInitializer('dump')],
      ['routes', routes.table.registerInitializer('dump')],
      ['neighbors', () => observed.markInitialized()],
    ]),
    events: undefined,
    requeue: (key: string, cause: RequeueCause) => requeue(ctx, parts, causes, key, cause),
    census: censusOf(observed, desired),
    unusable: (limit?: number) => {
      const now = ctx.clock.now();
      return unusableBetween(parts, -Infinity, now - ctx.config.unusableAfter, now, limit);
    },
  } as NeighborParts;
  buildWorkers(ctx, parts, causes);
  listen(ctx, parts);
  exposeMetrics(ctx, parts);
  return parts;
}

/** The calculator, the events, the reactor, the reconciler and the refresher, in that order. */
function buildWorkers(
  ctx: WiringContext,
  parts: NeighborParts,
  causes: Map<string, RequeueCause>,
): void {
  const { config, clock, log, tuning } = ctx;
  const { devices, desired, observed, metrics } = parts;
  const mode = (): RefreshMode => parts.path.current();
  parts.calculator = new Calculator({
    forwardable: parts.forwardable,
    devices,
    routes: parts.routes,
    desired,
    lookup: (oif, ips) => lookup(ctx, oif, ips),
    groupOf: tuning.shareLookups ? (ip) => groupOf(parts, ip) : undefined,
    clock,
    log,
    metrics,
    chunk: tuning.lookupChunk,
    retryMinMs: config.retryMin,
    retryMaxMs: config.retryMax,
  });
  const events = (parts.events =
    ctx.events &&
    new NeighborEvents({
      sink: ctx.events,
      clock,
      nameOf: (ifindex) => devices.nameOf(ifindex),
      unresolved: () => observed.unresolvedCount,
      unusableUpTo: () => clock.now() - ctx.config.unusableAfter,
      newlyUnusable: (after, upTo, max) => unusableBetween(parts, after, upTo, clock.now(), max),
    }));
  parts.reactor = new Reactor({
    desired,
    devices,
    mode,
    protocol,
    clock,
    retryMinMs: config.retryMin,
    retryMaxMs: config.retryMax,
    requeue: (key, cause) => parts.requeue(key, cause),
    ...(events ? { lost: (key, cause) => events.lost(key, cause) } : {}),
  });
  parts.reconciler = makeReconciler(ctx, parts, causes);
  parts.refresher = new Refresher({
    desired,
    observed,
    devices,
    protocol,
    mode,
    clock,
    requeue: (key) => parts.requeue(key, 'refresh'),
    written: (key) => causes.get(key) !== 'refresh',
    // The limiter's burst: the reconciler takes them at rateLimit per second.
    outstanding: burst(config),
    scanPerTick: tuning.refreshScan,
    tickMs: tuning.refreshTickMs,
  });
}

/** The rate limiter's burst: a tenth of a second's worth of neighbor.rateLimit. */
function burst(config: NeighborConfig): number {
  return Math.max(1, Math.ceil(config.rateLimit / 10));
}

function makeReconciler(
  ctx: WiringContext,
  parts: NeighborParts,
  causes: Map<string, RequeueCause>,
): Reconciler<DesiredNeighbor> {
  const { observed } = parts;
  return makeWriter({
    config: ctx.config,
    tuning: ctx.tuning,
    kernel: {
      neighSetMany: (e) => ctx.handle().neighSetMany(e),
      neighDelMany: (e) => ctx.handle().neighDelMany(e),
      neighGet: (k) => ctx.handle().neighGet(k),
      neighEach: (each) => ctx.handle().neighEach(each),
    },
    mode: () => parts.path.current(),
    protocol,
    desired: parts.desired,
    inputs: [parts.forwardable, parts.devices.table, parts.routes.table, observed],
    observed,
    metrics: parts.metrics,
    clock: ctx.clock,
    log: ctx.log,
    twoStep: ctx.tuning.legacyTwoStep ?? !ctx.managedSupported,
    causes,
    burst: burst(ctx.config),
    reading: (on) => ctx.neighFeed()?.reading(on),
    eventsRead: () => ctx.neighFeed()?.eventsRead ?? 0,
    eventOverflows: () => ctx.neighFeed()?.overflows ?? 0,
    eventsQueued: () => queuedEvents(ctx.neighFeed()?.queuedBytes()),
    missing: (keys) => {
      for (const k of keys) parts.requeue(k, 'deleted');
    },
    ...(parts.events ? { events: parts.events } : {}),
  });
}

/** The tables' listeners: what each change makes the calculator look up again. */
function listen(ctx: WiringContext, parts: NeighborParts): void {
  const { calculator: calc, metrics, rules } = parts;
  parts.forwardable.setListener({ changed: (a, r) => calc.forwardableChanged(a, r) });
  parts.devices.setListener({
    selectionChanged: (a, r) => {
      if (ctx.running()) metrics.resync('desired', 'device');
      calc.selectionChanged(a, r);
    },
    nodeAddressChanged: (ip, present) => calc.nodeAddressChanged(ip, present),
    routesMayHaveChanged: () => ctx.redumpRoutes(),
  });
  parts.routes.setListener({ routeChanged: (b, a) => calc.routeChanged(b, a) });
  rules.setListener({
    rulesChanged: () => {
      if (!ctx.running()) return;
      ctx.log.info(
        { ipv4TableOnly: rules.tableOnly(4), ipv6TableOnly: rules.tableOnly(6) },
        'policy rules changed: every next hop is looked up again',
      );
      metrics.resync('desired', 'rules');
      calc.fullResync();
    },
  });
}

/** The gauges read at scrape time. */
function exposeMetrics(ctx: WiringContext, parts: NeighborParts): void {
  const { devices, desired } = parts;
  parts.metrics.setSource({
    forwardableIps: () => parts.forwardable.size,
    selectedDevices: () => devices.selected().length,
    desiredByStatus: () => desired.statusCounts(),
    kernelEntriesByState: () => parts.census().byState,
    foreignEntries: () => parts.census().foreignWanted,
    refreshMode: () => parts.path.mode,
    managedOverLimit: () => parts.path.overLimit,
    unusableByDevice: () => unusableByDevice(parts, ctx.clock.now() - ctx.config.unusableAfter),
  });
}

/**
 * The refresh path switched: writes the entries that carry the other path's flags again
 * (rate-limited: at the switch there are about rateLimit of them).
 */
function switched(ctx: WiringContext, parts: NeighborParts, to: RefreshMode, size: number): void {
  parts.metrics.modeSwitched(to);
  ctx.log.info(
    { mode: to, desiredEntries: size, rateLimit: ctx.config.rateLimit },
    'neighbor.refresh auto: switched the refresh path',
  );
  setImmediate(() => {
    if (!ctx.running() || parts.path.mode !== to) return;
    for (const r of parts.desired.rows()) {
      const d = r.object;
      const seen = parts.observed.find(d.ifindex, d.nexthop);
      if (seen === undefined || !isOwned(seen, protocol)) continue;
      const managed = (seen.flagsExt & NTF_EXT_MANAGED) !== 0;
      if (managed !== (to === 'managed')) parts.requeue(r.key, 'mode');
    }
  });
}

/** What the log and `fibkeeper status` say of a forced `managed` over `rateLimit` entries. */
export function managedOverLimitWarning(size: number, rateLimit: number): string {
  return (
    `neighbor.refresh is managed with ${size} desired entries, more than neighbor.rateLimit ` +
    `(${rateLimit}): the kernel probes every stale managed entry at once, in bursts as large as ` +
    'the table, and drops most of them (at 100,000 entries 12-26% stayed usable); ' +
    'set neighbor.refresh: auto, which keeps them fresh within rateLimit'
  );
}

function overLimit(ctx: WiringContext, over: boolean, size: number): void {
  const fields = { desiredEntries: size, rateLimit: ctx.config.rateLimit };
  if (over) ctx.log.warn(fields, managedOverLimitWarning(size, ctx.config.rateLimit));
  else ctx.log.info(fields, 'neighbor.refresh managed: back within neighbor.rateLimit entries');
}

function requeue(
  ctx: WiringContext,
  parts: NeighborParts,
  causes: Map<string, RequeueCause>,
  key: string,
  cause: RequeueCause,
): void {
  causes.set(key, cause);
  // A lost or failed entry goes ahead of the refreshes waiting for the rate limit.
  const urgent = cause === 'deleted' || cause === 'failed';
  if (!parts.reconciler.requeue(key, { urgent })) causes.delete(key);
  ctx.log.debug({ key, cause }, 'requeued');
}

function censusOf(observed: ObservedNeighbors, desired: Table<DesiredNeighbor>): () => Census {
  let cache: { observed: number; desired: number; value: Census } | undefined;
  return () => {
    const o = observed.version;
    const d = desired.revision;
    if (cache !== undefined && cache.observed === o && cache.desired === d) return cache.value;
    const value = observed.census((ifindex, ip) => desired.has(neighKey(ifindex, ip)));
    cache = { observed: o, desired: d, value };
    return value;
  };
}

/** The lookup an IP may share: only while its family's routing is table-only. */
function groupOf(parts: NeighborParts, ip: string): GroupKey | undefined {
  const family = ip.includes(':') ? 6 : 4;
  return parts.rules.tableOnly(family) ? parts.routes.prefixes.groupOf(ip) : undefined;
}

function lookup(
  ctx: WiringContext,
  oif: number,
  ips: readonly string[],
): Promise<readonly (Route | Error)[]> {
  const queries = new Array<RouteQuery>(ips.length);
  for (let i = 0; i < ips.length; i++) queries[i] = { dst: ips[i]!, oif, fibmatch: true };
  return ctx.handle().routeGetMany(queries);
}

/** The feeds start() opens, and how to stop hearing the device feed. */
export interface NeighborFeeds {
  devices: DeviceFeed;
  unlisten: () => void;
  routes: RouteSource;
  neighbors: Feed<number, ResyncReason>;
}

/**
 * Opens the feeds into `into` as each is made (so that stop() closes whatever was made when
 * this throws half-way): routes and rules from the agent's RouteFeed (`shared.routes`) or one of
 * our own, neighbors from one of our own, links and addresses from the agent's DeviceFeed
 * (`shared.devices`) or one of our own. Every subscription is made before the first dump.
 */
export function openNeighborFeeds(
  ctx: WiringContext,
  parts: NeighborParts,
  shared: { devices?: DeviceFeed; routes?: RouteFeed },
  loaded: (table: 'devices' | 'routes' | 'neighbors', changed?: boolean) => void,
  into: Partial<NeighborFeeds>,
): void {
  const feeds = makeFeeds({
    nl: ctx.handle(),
    tuning: ctx.tuning,
    clock: ctx.clock,
    log: ctx.log,
    retryMs: ctx.config.retryMin,
    metrics: parts.metrics,
    devices: parts.devices,
    deviceFeed: () => into.devices!,
    routes: parts.routes,
    rules: parts.rules,
    ...(shared.routes ? { routeFeed: shared.routes } : {}),
    observed: parts.observed,
    reactor: parts.reactor,
    loaded,
  });
  // Subscribe to everything before the first dump of anything (a shared device feed is
  // subscribed and loaded already: listen() hands over its snapshot at once).
  into.routes = feeds.routes;
  into.neighbors = feeds.neighbors;
  for (const f of [feeds.routes, feeds.neighbors]) f.open();
  const deviceFeed = (into.devices =
    shared.devices ??
    new DeviceFeed({
      nl: ctx.handle(),
      log: ctx.log,
      clock: ctx.clock,
      rcvbuf: ctx.tuning.linkRcvbuf,
      retryMs: ctx.config.retryMin,
    }));
  into.unlisten = deviceFeed.listen(feeds.links);
}
