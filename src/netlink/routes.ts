// RouteFeed: the namespace's routes (every table, both families) and policy rules, read once
// for every subsystem: one subscription and one dump (feed.ts: subscribe first, dump, replay
// the held events; a fresh socket and a dump after an overflow; an interrupted dump tried
// again). Each event is parsed once and handed to every listener; each listener keeps what
// it needs (the neighbor subsystem its route and rule tables, the XDP forwarder its mirror of
// local routes, multipath destinations and route MTUs). The feed keeps no copy of the routes.
//
// Routes can change without an event: IPv4 drops the routes of a link that goes down (or
// away) silently. With a device feed the route feed dumps again, once the burst of link and
// address events has passed (redumpDelayMs), when a link went down or away, lost its carrier
// or an address went away, and after a device dump that changed something.
//
// Created and started once per namespace by its owner (the agent; a subsystem run alone makes
// its own), which alone stops it.
import type { Logger } from '../log/index.js';
import {
  AF_UNSPEC,
  DumpInterruptedError,
  IFF_LOWER_UP,
  IFF_UP,
  type Route,
  type Rule,
  type RtEvent,
} from './codec/index.js';
import { systemClock, Timer, type Clock } from '../sched/index.js';
import type { DeviceFeed } from './devices.js';
import { Feed, type FeedReason } from './feed.js';
import type { NetlinkHandle } from './handle.js';

/**
 * Why the feed dumps: its own reasons; `device` (a link or address change may have removed
 * routes silently), `interval` (a user's periodic check), `listener` (a listener that came
 * after the first dump gets one of its own).
 */
export type RouteFeedReason = FeedReason<'device' | 'interval' | 'listener'>;

/**
 * What a listener hears. Each callback gets the feed's objects: read them, never change them
 * (every listener gets the same one). Exceptions are logged by the feed, never passed on.
 */
export interface RouteFeedListener {
  /** A dump starts that this listener will hear (counted by users that count resyncs). */
  resyncing?(reason: RouteFeedReason): void;
  /**
   * Every route and rule of the namespace, from a dump: replace what was kept (apply the
   * differences). The events held during the dump follow as route()/rule() calls, then
   * caughtUp().
   */
  loaded?(reason: RouteFeedReason, routes: readonly Route[], rules: readonly Rule[]): void;
  /**
   * A route event. `new` carries the whole route (an IPv6 multipath route with every leg);
   * `del` the route, or the legs removed (IPv6 can delete one leg of a multipath route).
   */
  route?(kind: 'new' | 'del', route: Route): void;
  rule?(kind: 'new' | 'del', rule: Rule): void;
  /** The events held during a dump were applied: the listener's view is exact again. */
  caughtUp?(reason: RouteFeedReason): void;
}

export interface RouteFeedParams {
  /** The handle whose namespace the feed follows (dumps and the subscription socket). */
  nl: Pick<NetlinkHandle, 'subscribe' | 'routeList' | 'ruleList'>;
  log: Logger;
  /** Link and address changes that can remove routes silently (see the header). */
  devices?: DeviceFeed;
  /** Default: the process timers. */
  clock?: Clock;
  /** Receive buffer of the subscription socket; default 8 MiB. */
  rcvbuf?: number;
  /** Delay before a failed dump is tried again, ms; default 1000. */
  retryMs?: number;
  /** Coalescing delay of the dump after link and address changes, ms; default 50. */
  redumpDelayMs?: number;
}

type Snapshot = [Route[], Rule[]];

interface Entry {
  l: RouteFeedListener;
  /** Has had a dump: hears events. */
  ready: boolean;
  /** Waits for its first dump. */
  waiting?: { resolve: () => void; reject: (err: unknown) => void };
}

export class RouteFeed {
  readonly #p: RouteFeedParams;
  readonly #feed: Feed<Snapshot, 'device' | 'interval' | 'listener'>;
  readonly #clock: Clock;
  readonly #entries: Entry[] = [];
  #starting: Promise<void> | undefined = undefined;
  #loaded = false;
  #stopped = false;
  /** A dump that every listener hears was asked for (not only a newcomer's). */
  #allAsked = true;
  /** The dump that runs: every listener hears it, or only these newcomers. */
  #dumpFor: Entry[] | 'all' = 'all';
  #reason: RouteFeedReason = 'startup';
  readonly #timer: Timer;
  #unlistenDevices: (() => void) | undefined = undefined;
  /** Link flags as last seen (a link that lost IFF_UP or IFF_LOWER_UP). */
  readonly #flags = new Map<number, number>();
  /** Route and rule events parsed (each once, whatever the number of listeners). */
  eventsParsed = 0;
  /** Dumps loaded. */
  dumps = 0;

  constructor(p: RouteFeedParams) {
    this.#p = p;
    this.#clock = p.clock ?? systemClock;
    this.#timer = new Timer(this.#clock);
    const rcvbuf = p.rcvbuf ?? 8 << 20;
    this.#feed = new Feed<Snapshot, 'device' | 'interval' | 'listener'>({
      name: 'routes',
      subscribe: (h) => {
        const sub = p.nl.subscribe(['route', 'rule'], h, { rcvbuf, socket: 'route' });
        sub.unref(); // the feed alone keeps no process alive
        return sub;
      },
      dump: async () => [await p.nl.routeList(), await p.nl.ruleList()],
      load: (d) => this.#load(d),
      apply: (ev) => this.#apply(ev),
      caughtUp: () => this.#caughtUp(),
      failed: (err) => this.#failed(err),
      resynced: (reason) => this.#resynced(reason),
      clock: this.#clock,
      log: p.log,
      retryMs: p.retryMs ?? 1000,
    });
  }

  /**
   * Subscribes, then dumps; resolves once the first dump is loaded. An interrupted dump is
   * tried again; any other failure rejects. Idempotent (every caller gets the same promise).
   */
  start(): Promise<void> {
    this.#starting ??= (() => {
      this.#feed.open();
      this.#watchDevices();
      return this.#feed.initial();
    })();
    return this.#starting;
  }

  /** Closes the subscription. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#timer.cancel();
    this.#unlistenDevices?.();
    this.#feed.stop();
    for (const e of this.#entries) e.waiting?.reject(new Error('route feed stopped'));
    this.#entries.length = 0;
  }

  /**
   * Adds a listener; resolves, with the function that removes it, once it has heard a dump
   * (the first one, or one of its own when it comes later: the other listeners do not hear
   * that one, only the events held during it). Rejects when that dump fails for another
   * reason than a concurrent change.
   */
  async listen(l: RouteFeedListener): Promise<() => void> {
    const e: Entry = { l, ready: false };
    const first = new Promise<void>((resolve, reject) => (e.waiting = { resolve, reject }));
    this.#entries.push(e);
    const remove = (): void => {
      const i = this.#entries.indexOf(e);
      if (i >= 0) this.#entries.splice(i, 1);
    };
    try {
      if (!this.#loaded) await this.start();
      if (!e.ready) void this.#feed.resync('listener');
      await first;
    } catch (err) {
      remove();
      throw err;
    }
    return remove;
  }

  /** Dumps again now; resolves when every listener has heard it. */
  refresh(reason: 'device' | 'interval' = 'interval'): Promise<void> {
    this.#allAsked = true;
    return this.#feed.resync(reason);
  }

  /** Dumps again after `delayMs` (default redumpDelayMs); requests meanwhile join it. */
  refreshSoon(reason: 'device' | 'interval' = 'device', delayMs?: number): void {
    if (this.#stopped) return;
    this.#timer.startIfIdle(
      delayMs ?? this.#p.redumpDelayMs ?? 50,
      () => void this.refresh(reason),
    );
  }

  /** The first dump is loaded. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** The last dump failure, cleared by a successful dump. */
  get lastError(): string | undefined {
    return this.#feed.lastError;
  }

  /** Overflows of the subscription (each answered by a fresh socket and a dump). */
  get overflows(): number {
    return this.#feed.overflows;
  }

  /** Resolves when no dump is running or waiting to run. */
  idle(): Promise<void> {
    return this.#feed.idle();
  }

  #resynced(reason: RouteFeedReason): void {
    this.#reason = reason;
    if (reason !== 'listener' || this.#allAsked) {
      this.#allAsked = false;
      this.#dumpFor = 'all';
    } else {
      this.#dumpFor = this.#entries.filter((e) => !e.ready);
    }
    for (const e of this.#hearing()) this.#call(() => e.l.resyncing?.(reason));
  }

  #hearing(): Entry[] {
    return this.#dumpFor === 'all' ? [...this.#entries] : this.#dumpFor;
  }

  #load([routes, rules]: Snapshot): void {
    this.#loaded = true;
    this.dumps++;
    for (const e of this.#hearing()) {
      e.ready = true;
      this.#call(() => e.l.loaded?.(this.#reason, routes, rules));
    }
  }

  #caughtUp(): void {
    for (const e of this.#hearing()) {
      this.#call(() => e.l.caughtUp?.(this.#reason));
      e.waiting?.resolve();
      e.waiting = undefined;
    }
    this.#dumpFor = 'all';
  }

  #failed(err: unknown): void {
    if (err instanceof DumpInterruptedError) return; // tried again
    for (const e of this.#entries) {
      e.waiting?.reject(err);
      e.waiting = undefined;
    }
  }

  #apply(ev: RtEvent): void {
    if (ev.object === 'route') {
      this.eventsParsed++;
      for (const e of this.#entries) if (e.ready) this.#call(() => e.l.route?.(ev.kind, ev.msg));
    } else if (ev.object === 'rule') {
      this.eventsParsed++;
      for (const e of this.#entries) if (e.ready) this.#call(() => e.l.rule?.(ev.kind, ev.msg));
    }
  }

  #call(f: () => void): void {
    try {
      f();
    } catch (err) {
      this.#p.log.error({ err, feed: 'routes' }, 'a route feed listener failed');
    }
  }

  /** Links that went down or away, addresses that went away: routes may have gone silently. */
  #watchDevices(): void {
    const d = this.#p.devices;
    if (d === undefined) return;
    this.#unlistenDevices = d.listen({
      loaded: (reason, changed) => {
        this.#flags.clear();
        for (const l of d.links()) this.#flags.set(l.index, l.flags);
        if (changed && reason !== 'startup') this.refreshSoon('device');
      },
      link: (kind, l) => {
        if (l.family !== AF_UNSPEC) return;
        const before = this.#flags.get(l.index);
        if (kind === 'del') {
          this.#flags.delete(l.index);
          return this.refreshSoon('device');
        }
        this.#flags.set(l.index, l.flags);
        const lost = (f: number) => before !== undefined && (before & f) !== 0 && !(l.flags & f);
        if (lost(IFF_UP) || lost(IFF_LOWER_UP)) this.refreshSoon('device');
      },
      address: (kind) => {
        if (kind === 'del') this.refreshSoon('device');
      },
    });
  }
}
