// What makes the XdpForwarder act: the device feed (links, addresses), the node's policy
// watcher (nftables, tc, xfrm), a netconf subscription (rp_filter, forwarding), the route
// feed (kept in the route mirror), and three clock timers (the periodic resync, the watch's
// renewal, the sysctl poll). Each calls back into the forwarder; none writes the kernel.
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { DeviceFeed, RouteFeed, type NetlinkHandle, type Subscription } from '../netlink/index.js';
import { Periodic, type Clock } from '../sched/index.js';
import type { RouteMirror } from './kroutes.js';
import {
  RTM_DELNETCONF,
  RTM_NEWNETCONF,
  RTNLGRP_IPV4_NETCONF,
  RTNLGRP_IPV6_NETCONF,
} from './kwatch.js';
import { PolicyWatcher } from './policy-watch.js';
import { WATCH_RENEW_MS } from './watch.js';

/** The periodic resync dumps the routes every this many times (events keep them between). */
const ROUTE_RESYNC_TICKS = 10;

export interface ForwarderInputsParams {
  netns: string | undefined;
  nl: NetlinkHandle;
  log: Logger;
  clock: Clock;
  /** Shared feeds (started and stopped by their owner); absent: the inputs open their own. */
  devices?: DeviceFeed;
  routes?: RouteFeed;
  /** Where route and rule events are kept. */
  mirror: RouteMirror;
  /** A pass soon; `fresh`: the device feed dumps first. */
  schedule(fresh?: boolean): void;
  /** The route mirror changed (a route-only write). */
  routesChanged(): void;
  /** The watch's deadline is due to move on. */
  renew(): void;
  /** Time to read the sysctls and the policy parts that raise no event. */
  poll(): void;
}

export class ForwarderInputs {
  readonly #p: ForwarderInputsParams;
  feed: DeviceFeed | undefined;
  routeFeed: RouteFeed | undefined;
  policy: PolicyWatcher | undefined;
  #sub: Subscription | undefined;
  #unlisten: (() => void) | undefined;
  #unlistenRoutes: (() => void) | undefined;
  readonly #timers: Periodic[] = [];

  constructor(p: ForwarderInputsParams) {
    this.#p = p;
  }

  /** Subscribes first, then dumps: no change falls in between. */
  async start(): Promise<void> {
    const p = this.#p;
    const feed = (this.feed = p.devices ?? new DeviceFeed({ nl: p.nl, log: p.log }));
    this.#unlisten = feed.listen({
      loaded: (_reason, changed) => {
        if (changed) p.schedule();
      },
      link: () => p.schedule(),
      address: () => p.schedule(),
    });
    // the node's policy: nftables, tc and xfrm events, before their first read
    this.policy = new PolicyWatcher({
      netns: p.netns,
      nl: p.nl,
      log: p.log,
      onChange: () => p.schedule(),
    });
    this.policy.start();
    // netconf (rp_filter, forwarding) here; routes and rules from the route feed
    this.#sub = p.nl.subscribe(
      [RTNLGRP_IPV4_NETCONF, RTNLGRP_IPV6_NETCONF],
      {
        onMessage: (type) => {
          if (type === RTM_NEWNETCONF || type === RTM_DELNETCONF) p.schedule();
          return true;
        },
        onEvent: (ev) => {
          if (ev.kind === 'overflow') p.log.warn('xdp: kernel events lost; resyncing');
          p.schedule();
        },
        onError: (err) => p.log.warn({ err: describeError(err) }, 'xdp: kernel events'),
      },
      { socket: 'xdp' },
    );
    this.#sub.unref();
    await feed.start();
    const routes = (this.routeFeed =
      p.routes ?? new RouteFeed({ nl: p.nl, log: p.log, devices: feed }));
    this.#unlistenRoutes = await routes.listen({
      loaded: (_reason, list, rules) => p.mirror.load(list, rules),
      route: (kind, r) => {
        p.mirror.route(kind, r);
        p.routesChanged();
      },
      rule: (kind, r) => {
        p.mirror.rule(kind, r);
        p.routesChanged();
      },
      caughtUp: () => p.routesChanged(),
    });
  }

  /**
   * Starts the timers: the resync every `resyncMs` (0: off) — the links dumped again every
   * time, the routes every tenth (a dump is O(routes) for every listener of a shared feed);
   * the watch's renewal; the sysctl poll every `pollMs` (0: off).
   */
  startTimers(resyncMs: number, pollMs: number): void {
    const p = this.#p;
    const every = (ms: number, fn: () => void): void => {
      const t = new Periodic(p.clock, ms, fn, { unref: true });
      this.#timers.push(t);
      t.start();
    };
    if (resyncMs > 0) {
      let ticks = 0;
      every(resyncMs, () => {
        p.schedule(true);
        if (++ticks % ROUTE_RESYNC_TICKS !== 0) return;
        this.routeFeed?.refresh().catch((err: unknown) => {
          p.log.warn({ err: describeError(err) }, 'xdp: route dump failed');
        });
      });
    }
    // the program trusts the state while the agent vouches for it (the watch, watch.ts)
    every(WATCH_RENEW_MS, () => p.renew());
    if (pollMs > 0) every(pollMs, () => p.poll());
  }

  /** Stops the timers and closes what start() opened (shared feeds stay). Idempotent. */
  stop(): void {
    for (const t of this.#timers.splice(0)) t.stop();
    this.#sub?.close();
    this.#sub = undefined;
    this.policy?.stop();
    this.policy = undefined;
    this.#unlisten?.();
    this.#unlisten = undefined;
    this.#unlistenRoutes?.();
    this.#unlistenRoutes = undefined;
    if (this.#p.routes === undefined) this.routeFeed?.stop();
    if (this.#p.devices === undefined) this.feed?.stop();
  }
}
