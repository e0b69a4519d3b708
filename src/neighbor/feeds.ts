// What the subsystem reads from the kernel: links and addresses from the shared device feed
// into the DeviceTracker; routes and policy rules into the RouteTracker and the RuleTracker
// from the shared route feed (netlink/routes.ts: the agent's, read once for XDP too) or, run
// alone, from a feed of its own; neighbors, on a feed and socket of their own, into the
// observed table (and from there to the reactor). See netlink/feed.ts for how a feed stays
// exact.
import type { Logger } from '../log/index.js';
import type { NeighborMetrics, ResyncReason, ResyncTable } from './metrics.js';
import {
  Feed,
  neighFields,
  readNeighFields,
  RTM_DELNEIGH,
  RTM_NEWNEIGH,
  type DeviceFeed,
  type DeviceFeedListener,
  type DeviceFeedReason,
  type GroupName,
  type NetlinkHandle,
  type Route,
  type RouteFeed,
  type RouteFeedListener,
  type Rule,
  type Subscription,
  type SubscriptionHandlers,
} from '../netlink/index.js';
import type { Clock } from '../sched/index.js';
import type { NeighborTuning } from './config.js';
import type { DeviceTracker } from './devices.js';
import type { NeighMessage, ObservedNeighbors } from './observed.js';
import type { Reactor } from './reactor.js';
import type { RouteTracker } from './routes.js';
import type { RuleTracker } from './rules.js';

export { Feed };

export interface FeedsDeps {
  nl: NetlinkHandle;
  tuning: NeighborTuning;
  clock: Clock;
  log: Logger;
  retryMs: number;
  metrics: NeighborMetrics;
  devices: DeviceTracker;
  /** The shared feed the devices table is loaded from (read in its loaded()). */
  deviceFeed(): DeviceFeed;
  routes: RouteTracker;
  rules: RuleTracker;
  /** The shared route feed (the agent's); without, a feed of its own. */
  routeFeed?: RouteFeed;
  observed: ObservedNeighbors;
  reactor: Reactor;
  /**
   * A dump of `table` was loaded (the first one initializes it); `changed`: it changed
   * something (devices only; a dump that found what the events said changes no route).
   */
  loaded(table: 'devices' | 'routes' | 'neighbors', changed?: boolean): void;
}

/** The reasons the devices table's resyncs are counted with (the feed's own). */
const DEVICE_RESYNCS: ReadonlySet<DeviceFeedReason> = new Set([
  'startup',
  'overflow',
  'dump-interrupted',
]);

/** Where routes and rules come from: a feed of the subsystem's own, or the shared one. */
export interface RouteSource {
  /** Subscribes (a feed of its own; the shared one is its owner's). */
  open(): void;
  /** Resolves once the routes and rules are loaded. */
  initial(): Promise<void>;
  /** Dumps again (`device`: joins a dump already asked for). */
  resync(reason: ResyncReason): Promise<void>;
  idle(): Promise<void>;
  /** Stops hearing (and closes a feed of its own). */
  stop(): void;
  readonly lastError: string | undefined;
}

export function makeFeeds(d: FeedsDeps): {
  links: DeviceFeedListener;
  routes: RouteSource;
  neighbors: Feed<number, ResyncReason>;
} {
  const { nl, tuning: t } = d;
  const common = { clock: d.clock, log: d.log, retryMs: d.retryMs };
  const counted = (table: ResyncTable) => (reason: ResyncReason) => d.metrics.resync(table, reason);
  const subscriber =
    (groups: GroupName[], rcvbuf: number, socket: 'route' | 'neighbor') =>
    (h: SubscriptionHandlers): Subscription =>
      nl.subscribe(groups, h, { rcvbuf, socket });
  const links: DeviceFeedListener = {
    resyncing: (reason) => {
      if (DEVICE_RESYNCS.has(reason)) d.metrics.resync('devices', reason as ResyncReason);
    },
    loaded: (_reason, changed) => {
      d.devices.load(d.deviceFeed().links(), d.deviceFeed().addresses());
      d.loaded('devices', changed);
    },
    link: (kind, l) => d.devices.applyLink(kind, l),
    address: (kind, a) => d.devices.applyAddress(kind, a),
  };
  const load = ([r, rules]: readonly [readonly Route[], readonly Rule[]]): void => {
    // Rules first: the route changes of a reload are then computed under the new rules.
    d.rules.load(rules);
    d.routes.load(r);
    d.loaded('routes');
  };
  const routes: RouteSource =
    d.routeFeed !== undefined
      ? sharedRoutes(d, d.routeFeed, load)
      : new Feed<[Route[], Rule[]], ResyncReason>({
          ...common,
          name: 'routes',
          subscribe: subscriber(['route', 'rule'], t.routeRcvbuf, 'route'),
          dump: async () => [await nl.routeList(), await nl.ruleList()],
          load,
          apply: (ev) => {
            if (ev.object === 'route') d.routes.apply(ev.kind, ev.msg);
            else if (ev.object === 'rule') d.rules.apply(ev.kind, ev.msg);
          },
          resynced: counted('routes'),
        });
  // A neighbor dump goes straight into the observed table, entry by entry (a million
  // entries are not a million objects at once); what it changed is reacted to once the
  // events held during it are applied too (an entry written during the dump is missing from
  // it, not from the kernel).
  const neighbors = new Feed<number, ResyncReason>({
    ...common,
    name: 'neighbors',
    subscribe: subscriber(['neigh'], t.neighRcvbuf, 'neighbor'),
    dump: async () => {
      const o = d.observed;
      o.beginLoad();
      try {
        const n = await nl.neighEach(
          (m) => o.loadEntry(m),
          undefined,
          () => o.beginLoad(),
        );
        o.endLoad();
        return n;
      } catch (err) {
        o.abortLoad(); // a failed dump removes nothing
        throw err;
      }
    },
    load: () => undefined,
    caughtUp: () => {
      const o = d.observed;
      o.takeChanges((ifindex, ip) => d.reactor.observedEntry(ifindex, ip, o.find(ifindex, ip)));
      d.loaded('neighbors');
    },
    apply: (ev) => {
      if (ev.object === 'neigh') neighborEvent(d, ev.kind, ev.msg);
    },
    // 100,000 entries written mean 200,000 events: read them without an object each.
    take: (type, buf, off, len) => {
      if (type !== RTM_NEWNEIGH && type !== RTM_DELNEIGH) return false;
      const kind = type === RTM_NEWNEIGH ? 'new' : 'del';
      neighborEvent(d, kind, readNeighFields(buf, off, len, fields));
      return true;
    },
    resynced: counted('neighbors'),
  });
  return { links, routes, neighbors };
}

/**
 * The subsystem as a listener of the shared route feed. Its dumps are counted as the
 * subsystem's route resyncs (a later listener's own first dump as `startup`), whoever asked.
 */
function sharedRoutes(
  d: FeedsDeps,
  feed: RouteFeed,
  load: (snapshot: readonly [readonly Route[], readonly Rule[]]) => void,
): RouteSource {
  let unlisten: (() => void) | undefined;
  let stopped = false;
  const listener: RouteFeedListener = {
    resyncing: (reason) => d.metrics.resync('routes', reason === 'listener' ? 'startup' : reason),
    loaded: (_reason, routes, rules) => load([routes, rules]),
    route: (kind, r) => d.routes.apply(kind, r),
    rule: (kind, r) => d.rules.apply(kind, r),
  };
  return {
    open: () => undefined,
    initial: async () => {
      const remove = await feed.listen(listener);
      if (stopped) remove();
      else unlisten = remove;
    },
    resync: (reason) => {
      if (stopped) return Promise.resolve();
      if (reason !== 'device') return feed.refresh('interval');
      feed.refreshSoon('device', 0); // joins the feed's own dump after link changes
      return Promise.resolve();
    },
    idle: () => feed.idle(),
    stop: () => {
      stopped = true;
      unlisten?.();
      unlisten = undefined;
    },
    get lastError() {
      return feed.lastError;
    },
  };
}

/** Reused by every neighbor message read in place (take). */
const fields = neighFields();

function neighborEvent(d: FeedsDeps, kind: 'new' | 'del', msg: NeighMessage): void {
  const after = d.observed.apply(kind, msg);
  if (after === undefined || !d.reactor.cares(after ?? undefined)) return;
  // Read only now: the text of an address read in place is made on demand.
  const dst = msg.dst;
  if (dst !== undefined) d.reactor.observedEntry(msg.ifindex, dst, after ?? undefined);
}
