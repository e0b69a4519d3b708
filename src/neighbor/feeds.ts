// What the subsystem reads from the kernel: links and addresses from the shared device feed
// into the DeviceTracker; on feeds of its own, each on a socket of its own, routes and policy
// rules into the RouteTracker and the RuleTracker, neighbors into the observed table (and
// from there to the reactor). See netlink/feed.ts for how a feed stays exact.
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
  observed: ObservedNeighbors;
  reactor: Reactor;
  /** A dump of `table` was loaded (the first one initializes it). */
  loaded(table: 'devices' | 'routes' | 'neighbors'): void;
}

/** The reasons the devices table's resyncs are counted with (the feed's own). */
const DEVICE_RESYNCS: ReadonlySet<DeviceFeedReason> = new Set([
  'startup',
  'overflow',
  'dump-interrupted',
]);

export function makeFeeds(d: FeedsDeps): {
  links: DeviceFeedListener;
  routes: Feed<[Route[], Rule[]], ResyncReason>;
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
    loaded: () => {
      d.devices.load(d.deviceFeed().links(), d.deviceFeed().addresses());
      d.loaded('devices');
    },
    link: (kind, l) => d.devices.applyLink(kind, l),
    address: (kind, a) => d.devices.applyAddress(kind, a),
  };
  const routes = new Feed<[Route[], Rule[]], ResyncReason>({
    ...common,
    name: 'routes',
    subscribe: subscriber(['route', 'rule'], t.routeRcvbuf, 'route'),
    dump: async () => [await nl.routeList(), await nl.ruleList()],
    load: ([r, rules]) => {
      // Rules first: the route changes of a reload are then computed under the new rules.
      d.rules.load(rules);
      d.routes.load(r);
      d.loaded('routes');
    },
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

/** Reused by every neighbor message read in place (take). */
const fields = neighFields();

function neighborEvent(d: FeedsDeps, kind: 'new' | 'del', msg: NeighMessage): void {
  const after = d.observed.apply(kind, msg);
  if (after === undefined || !d.reactor.cares(after ?? undefined)) return;
  // Read only now: the text of an address read in place is made on demand.
  const dst = msg.dst;
  if (dst !== undefined) d.reactor.observedEntry(msg.ifindex, dst, after ?? undefined);
}
