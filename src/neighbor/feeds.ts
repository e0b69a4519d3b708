// The three feeds of the subsystem, each on a socket of its own: links and addresses into
// the DeviceTracker, routes and policy rules into the RouteTracker and the RuleTracker,
// neighbors into the observed table (and from there to the reactor). See feed.ts for how a
// feed stays exact.
import type { Logger } from '../log/index.js';
import type { NeighborMetrics, ResyncReason, ResyncTable } from './metrics.js';
import {
  neighFields,
  readNeighFields,
  RTM_DELNEIGH,
  RTM_NEWNEIGH,
  type Address,
  type GroupName,
  type Link,
  type NetlinkHandle,
  type Route,
  type Rule,
  type Subscription,
  type SubscriptionHandlers,
} from '../netlink/index.js';
import type { Clock } from '../statedb/index.js';
import type { NeighborTuning } from './config.js';
import type { DeviceTracker } from './devices.js';
import { Feed } from './feed.js';
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
  routes: RouteTracker;
  rules: RuleTracker;
  observed: ObservedNeighbors;
  reactor: Reactor;
  /** A dump of `table` was loaded (the first one initializes it). */
  loaded(table: 'devices' | 'routes' | 'neighbors'): void;
}

export function makeFeeds(d: FeedsDeps): {
  links: Feed<[Link[], Address[]]>;
  routes: Feed<[Route[], Rule[]]>;
  neighbors: Feed<number>;
} {
  const { nl, tuning: t } = d;
  const common = { clock: d.clock, log: d.log, retryMs: d.retryMs };
  const counted = (table: ResyncTable) => (reason: ResyncReason) => d.metrics.resync(table, reason);
  const subscriber =
    (groups: GroupName[], rcvbuf: number) =>
    (h: SubscriptionHandlers): Subscription =>
      nl.subscribe(groups, h, { rcvbuf });
  const links = new Feed<[Link[], Address[]]>({
    ...common,
    name: 'links',
    subscribe: subscriber(['link', 'address'], t.linkRcvbuf),
    dump: async () => [await nl.linkList(), await nl.addrList()],
    load: ([l, a]) => {
      d.devices.load(l, a);
      d.loaded('devices');
    },
    apply: (ev) => {
      if (ev.object === 'link') d.devices.applyLink(ev.kind, ev.msg);
      else if (ev.object === 'address') d.devices.applyAddress(ev.kind, ev.msg);
    },
    resynced: counted('devices'),
  });
  const routes = new Feed<[Route[], Rule[]]>({
    ...common,
    name: 'routes',
    subscribe: subscriber(['route', 'rule'], t.routeRcvbuf),
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
  const neighbors = new Feed<number>({
    ...common,
    name: 'neighbors',
    subscribe: subscriber(['neigh'], t.neighRcvbuf),
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
  const dst = msg.dst;
  if (after !== undefined && dst !== undefined) {
    d.reactor.observedEntry(msg.ifindex, dst, after ?? undefined);
  }
}
