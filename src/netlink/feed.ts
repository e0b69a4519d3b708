// A feed keeps one table in step with the kernel: events from a subscription opened before
// the dump, and a full dump at start and whenever the view may have gaps (the subscription
// overflowed, a link went away). While a dump runs, events are held and replayed after it,
// in order: the dump is at least as new as the subscription, and every change after the
// subscription is among the replayed events, so the table ends up exact.
//
// Overflow: the kernel reports ENOBUFS once per congestion episode. Until the socket has
// been drained, every further event is dropped without another report, so a dump taken
// right after the report could miss changes made during the episode. The feed therefore
// closes the overflowed socket and subscribes afresh before dumping: the new socket starts
// clean, and any later overflow on it is reported again. A subscription that replaced its
// socket itself (after another receive error, or when it stopped answering the liveness
// probes: subscription.ts) reports the loss the same way, and the feed dumps on that socket.
//
// A dump that stays interrupted (NLM_F_DUMP_INTR after the client's retries) is tried
// again later; until a dump succeeds the table is not (re)initialized, so nothing is pruned
// on a partial view.
//
// Used by the device feed (devices.ts) and by the neighbor subsystem's route and neighbor
// feeds.
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { DumpInterruptedError, ParseError, type RtEvent } from './codec/index.js';
import { Timer, type Clock } from '../sched/index.js';
import type { Subscription, SubscriptionEvent, SubscriptionHandlers } from './subscription.js';

/** Why a feed dumps: the reasons of its own, and those its users pass to resync(). */
export type FeedReason<R extends string = never> = 'startup' | 'overflow' | 'dump-interrupted' | R;

export interface FeedParams<D, R extends string = never> {
  name: string;
  /** Opens a subscription to the feed's groups with these handlers. */
  subscribe(handlers: SubscriptionHandlers): Subscription;
  /** Reads the kernel's full state. */
  dump(): Promise<D>;
  /** Replaces the table with a dump (applying only the differences). */
  load(data: D): void;
  /** Applies one event. */
  apply(ev: RtEvent): void;
  /**
   * After a dump was loaded and the events held during it were applied: the table is exact
   * now. Reactions to what the dump changed belong here, not in `load`: an entry written
   * while the dump ran is missing from the dump, and only the held events put it back.
   */
  caughtUp?(): void;
  /**
   * Optional hot path: applies a message straight from its bytes (no event object) and
   * returns true, or returns false to have it parsed into an event. Not called while a
   * dump runs (held events are parsed, to be replayed in order).
   */
  take?(type: number, buf: Buffer, off: number, len: number): boolean;
  /** A dump failed (it is tried again after retryMs). */
  failed?(err: unknown): void;
  /** Counted once per resync that starts. */
  resynced(reason: FeedReason<R>): void;
  clock: Clock;
  log: Logger;
  /** Delay before trying a failed dump again, ms. */
  retryMs: number;
}

export class Feed<D, R extends string = never> {
  readonly #p: FeedParams<D, R>;
  #sub: Subscription | undefined = undefined;
  #held: RtEvent[] | undefined = [];
  #running: Promise<void> | undefined = undefined;
  #again: FeedReason<R> | undefined = undefined;
  #retryTimer: Timer | undefined = undefined;
  #stopped = false;
  #wakeSleep: (() => void) | undefined = undefined;
  /** Events were lost on a socket that is still in use (not replaced by the subscription). */
  #plainLoss = false;
  /** The last dump failure, cleared by a successful dump. */
  lastError: string | undefined = undefined;
  /** Overflows seen (each answered by a fresh subscription and a dump). */
  overflows = 0;
  /** Events read from the socket (every subscription, held ones included). */
  eventsRead = 0;

  constructor(p: FeedParams<D, R>) {
    this.#p = p;
  }

  /** Subscribes; events are held until the first dump is loaded (see initial()). */
  open(): void {
    this.#sub = this.#subscribe();
  }

  #subscribe(): Subscription {
    let sub: Subscription | undefined = undefined;
    const handlers: SubscriptionHandlers = {
      onEvent: (ev) => {
        if (sub === this.#sub) this.#onEvent(ev); // a replaced socket's leftovers are stale
      },
      onError: (err) =>
        this.#p.log.warn({ feed: this.#p.name, err: err.message }, 'subscription error'),
    };
    const take = this.#p.take;
    if (take !== undefined) {
      handlers.onMessage = (type, buf, off, len) => {
        this.eventsRead++;
        if (sub !== this.#sub || this.#stopped) return true; // stale: dropped
        if (this.#held !== undefined) return false;
        try {
          return take(type, buf, off, len);
        } catch (err) {
          if (err instanceof ParseError) throw err; // counted by the subscription
          this.#p.log.error({ err, feed: this.#p.name }, 'applying an event failed');
          return true;
        }
      };
    }
    sub = this.#p.subscribe(handlers);
    return sub;
  }

  #onEvent(ev: SubscriptionEvent): void {
    if (this.#stopped) return;
    if (ev.kind === 'overflow') {
      this.overflows++;
      if (!ev.reopened) this.#plainLoss = true;
      this.#p.log.warn(
        { feed: this.#p.name, overflows: this.overflows, cause: ev.cause, reopened: ev.reopened },
        ev.reopened ? 'socket replaced; resyncing' : 'events lost; resyncing',
      );
      void this.resync('overflow');
      return;
    }
    if (this.#held !== undefined) {
      this.#held.push(ev);
      return;
    }
    try {
      this.#p.apply(ev);
    } catch (err) {
      this.#p.log.error({ err, feed: this.#p.name }, 'applying an event failed');
    }
  }

  /**
   * Dumps and loads; resolves when the table is in step again (after retries of a failing
   * dump). A resync asked for while one runs is done right after it.
   */
  resync(reason: FeedReason<R>): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#running !== undefined) {
      if (this.#again !== 'overflow') this.#again = reason;
      return this.#running;
    }
    this.#running = this.#loop(reason, false).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Resolves once no resync is running or waiting to run (at once when none is). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running.catch(() => undefined);
  }

  /**
   * The first dump, at start: an interrupted dump is tried again; any other failure (no
   * permission, a broken socket) rejects, so that the agent fails to start with the reason.
   */
  initial(): Promise<void> {
    this.#running = this.#loop('startup', true).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #loop(first: FeedReason<R>, strict: boolean): Promise<void> {
    let reason: FeedReason<R> | undefined = first;
    while (reason !== undefined && !this.#stopped) {
      this.#again = undefined;
      this.#p.resynced(reason);
      this.#held ??= [];
      if (reason === 'overflow' && this.#plainLoss) this.#reopen();
      this.#plainLoss = false;
      const err = await this.#once();
      if (err !== undefined) {
        if (strict && !(err instanceof DumpInterruptedError)) throw err;
        await this.#sleep(this.#p.retryMs);
        reason = this.#again ?? 'dump-interrupted';
        continue;
      }
      reason = this.#again;
    }
  }

  /** Replaces the overflowed socket with a fresh one (events held from now on). */
  #reopen(): void {
    const old = this.#sub;
    this.#held = [];
    this.#sub = this.#subscribe();
    old?.close();
  }

  /** One dump and load; the error when the dump failed. */
  async #once(): Promise<unknown> {
    let data: D;
    try {
      data = await this.#p.dump();
    } catch (err) {
      this.lastError = describeError(err);
      const interrupted = err instanceof DumpInterruptedError;
      this.#p.log.warn({ feed: this.#p.name, err: this.lastError, interrupted }, 'dump failed');
      this.#p.failed?.(err);
      return err ?? new Error('dump failed');
    }
    if (this.#stopped) return undefined;
    this.#p.load(data);
    this.lastError = undefined;
    const held = this.#held ?? [];
    this.#held = undefined;
    this.#p.log.debug({ feed: this.#p.name, held: held.length }, 'dump loaded');
    for (const ev of held) {
      try {
        this.#p.apply(ev);
      } catch (err) {
        this.#p.log.error({ err, feed: this.#p.name }, 'applying an event failed');
      }
    }
    try {
      this.#p.caughtUp?.();
    } catch (err) {
      this.#p.log.error({ err, feed: this.#p.name }, 'catching up after a dump failed');
    }
    return undefined;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wakeSleep = resolve;
      this.#retryTimer ??= new Timer(this.#p.clock);
      this.#retryTimer.start(ms, () => {
        this.#wakeSleep = undefined;
        resolve();
      });
    });
  }

  /**
   * Stops (false) or resumes (true) reading the events; they queue in the socket meanwhile
   * (pace.ts decides, and keeps them within what the socket holds).
   */
  reading(on: boolean): void {
    this.#sub?.reading(on);
  }

  /** Bytes of events waiting in the socket, unread (Subscription.queuedBytes). */
  queuedBytes(): number | undefined {
    return this.#sub?.queuedBytes();
  }

  /** Closes the subscription; a running resync ends without loading. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#held = undefined;
    this.#retryTimer?.cancel();
    this.#wakeSleep?.();
    this.#wakeSleep = undefined;
    this.#sub?.close();
    this.#sub = undefined;
  }
}
