// One node's cluster component: keeps its lease and member key, mirrors the cluster keys,
// places the desired IPs over the live members, claims its share, hands IPs over, and
// publishes the set of IPs it may hold now (fenced by its lease). See index.ts for the
// seam and docs/cluster.md for the argument.
import type { Logger } from 'pino';
import { describeError } from '../errors/index.js';
import { noopClusterMetrics, type ClusterMetrics } from './metrics.js';
import { backoff, monotonicClock, type Clock, type TimerHandle } from '../sched/index.js';
import {
  HoldPublisher,
  sameIps,
  type HoldListener,
  type HoldReason,
  type HoldSet,
} from './hold.js';
import { encodeMember, encodeOwner, KeyLayout } from './keys.js';
import { LeaseKeeper, type LeaseChange } from './lease.js';
import { resolveOptions, type ClusterOptions } from './options.js';
import { isEligible, place } from './placement.js';
import { CompactedError, type ClusterStore, type WatchHandle } from './store.js';
import { ClusterView } from './view.js';
import { describeStatus, type ClusterStatus } from './status.js';

export interface ClusterMemberParams {
  store: ClusterStore;
  options: Partial<ClusterOptions> & { nodeName: string };
  clock?: Clock;
  metrics?: ClusterMetrics;
  log?: Logger;
  /**
   * Called with the hold sets (see HoldSet); also `subscribe()`. A listener still busy with
   * one set (its promise pending) gets only the newest set next.
   */
  onHold?: HoldListener;
  /**
   * Called synchronously with every hold set as it is computed, none skipped: for a record of
   * what the node held when (the log), not for applying them.
   */
  onSet?: (set: HoldSet) => void;
  /** Called with the other members' node IPs whenever they change (owner `cluster`). */
  onPeers?: (ips: readonly string[]) => void;
}

/** Reasons that stand when the lease can no longer be proven valid (the others become fence). */
const FINAL_REASONS: ReadonlySet<HoldReason> = new Set(['start', 'stop', 'fence', 'lost']);

export class ClusterMember {
  readonly options: ClusterOptions;
  readonly #store: ClusterStore;
  readonly #clock: Clock;
  readonly #metrics: ClusterMetrics;
  readonly #log: Logger | undefined;
  readonly #layout: KeyLayout;
  readonly #view: ClusterView;
  readonly #lease: LeaseKeeper;
  readonly #hold: HoldPublisher;
  readonly #onSet: ((set: HoldSet) => void) | undefined;
  readonly #onPeers: ((ips: readonly string[]) => void) | undefined;
  #peers: readonly string[] = [];
  #started = false;
  #stopping = false;
  #registeredLease: string | undefined;
  #registering = false;
  #registerSince = 0;
  /** Clock time before which this node claims nothing (it registered a moment ago). */
  #claimFrom = 0;
  #viewReady = false;
  #watch: WatchHandle | undefined;
  #syncRetry = 0;
  #syncTimer: TimerHandle | undefined;
  #syncing = false;
  #fullRead = true;
  #kicked = false;
  #timers = new Set<TimerHandle>();
  readonly #claiming = new Set<string>();
  readonly #releasing = new Set<string>();
  readonly #unownedSince = new Map<string, number>();
  readonly #lastMove = new Map<string, { node: string | undefined; at: number }>();
  #readyWaiters: (() => void)[] = [];

  constructor(params: ClusterMemberParams) {
    this.options = resolveOptions(params.options);
    this.#store = params.store;
    this.#clock = params.clock ?? monotonicClock;
    this.#metrics = params.metrics ?? noopClusterMetrics();
    this.#log = params.log;
    this.#layout = new KeyLayout(this.options.prefix);
    this.#view = new ClusterView(this.#layout);
    this.#onPeers = params.onPeers;
    const o = this.options;
    this.#lease = new LeaseKeeper({
      store: this.#store,
      clock: this.#clock,
      ttlSeconds: o.leaseTTL / 1000,
      renewIntervalMs: o.renewInterval,
      fenceMarginMs: o.fenceMargin,
      retryMinMs: o.retryMinMs,
      retryMaxMs: o.retryMaxMs,
      metrics: this.#metrics,
      onChange: (c) => this.#onLease(c),
      log: (msg, err) => this.#log?.debug({ err: describeError(err) }, msg),
    });
    const empty: HoldSet = { ips: [], deadline: -Infinity, reason: 'start', at: this.#clock.now() };
    this.#hold = new HoldPublisher(empty, (err) =>
      this.#log?.error({ err: describeError(err) }, 'cluster hold listener failed'),
    );
    if (params.onHold) this.#hold.subscribe(params.onHold);
    this.#onSet = params.onSet;
  }

  /** Adds a hold-set listener; it is called with the current set at once. */
  subscribe(fn: HoldListener): () => void {
    const off = this.#hold.subscribe(fn);
    void Promise.resolve().then(() => fn(this.#hold.current));
    return off;
  }

  /** The current hold set. */
  holdSet(): HoldSet {
    return this.#hold.current;
  }

  /**
   * Synchronous fencing check for anything that speaks for an IP (ARP/NDP responder,
   * announcer): true only while the IP is in the hold set and the lease is provably valid
   * by the clock *now*, even when timers run late (a stopped or starved process).
   */
  mayHold(ip: string): boolean {
    return !this.#stopping && this.#hold.current.ips.includes(ip) && this.#lease.mayHold();
  }

  /** The desired cluster IPs as this node last read them from etcd (canonical). */
  desiredIps(): ReadonlySet<string> {
    return new Set(this.#view.desired.keys());
  }

  /** The other live members' node IPs (for forwardable IPs with owner `cluster`). */
  peerNodeIps(): readonly string[] {
    return this.#peers;
  }

  /** Resolves once the member is registered and has read the cluster keys. */
  ready(): Promise<void> {
    if (this.#isReady()) return Promise.resolve();
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  #isReady(): boolean {
    return (
      this.#viewReady &&
      this.#registeredLease !== undefined &&
      this.#registeredLease === this.#lease.id
    );
  }

  /**
   * Publishes the empty hold set and waits until the listeners have applied it (a restarted
   * agent drops IPs it no longer owns before anything else), then joins the cluster in the
   * background (see ready()).
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#publish('start');
    await this.#hold.applied();
    if (this.#stopping) return;
    this.#lease.start();
    this.#sync();
  }

  /**
   * Leaves the cluster: publishes the empty set, waits until it is applied, then (with
   * handoverOnStop) revokes the lease so its member and ownership keys go at once and the
   * next owners claim without waiting for the TTL. Idempotent; never throws.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#watch?.cancel();
    for (const t of this.#timers) this.#clock.clearTimeout(t);
    this.#timers.clear();
    this.#publish('stop');
    await this.#hold.applied();
    try {
      await this.#lease.stop(this.options.handoverOnStop);
    } catch (err) {
      this.#log?.warn(
        { err: describeError(err) },
        'cluster lease revoke failed; it expires by itself',
      );
    }
  }

  status(): ClusterStatus {
    return describeStatus({
      node: this.options.nodeName,
      now: this.#clock.now(),
      lease: this.#lease,
      registered: this.#isReady(),
      view: this.#view,
      placement: this.#placement(),
      hold: this.#hold.current,
      lastMove: this.#lastMove,
    });
  }

  #later(ms: number, fn: () => void): void {
    const t = this.#clock.setTimeout(() => {
      this.#timers.delete(t);
      if (!this.#stopping) fn();
    }, ms);
    this.#timers.add(t);
  }

  /** The delay after `attempt` + 1 consecutive failures (attempt 0: retryMinMs). */
  #backoff(attempt: number): number {
    return backoff(this.options.retryMinMs, this.options.retryMaxMs, attempt + 1);
  }

  #onLease(change: LeaseChange): void {
    this.#metrics.setLeaseValid(this.#lease.mayHold());
    if (change === 'granted' || change === 'lost') {
      this.#registeredLease = undefined;
      if (change === 'granted') this.#register(0);
    }
    const reason: Record<LeaseChange, HoldReason> = {
      granted: 'sync',
      renewed: 'renew',
      restored: 'restore',
      fenced: 'fence',
      lost: 'lost',
    };
    this.#publish(reason[change]);
    if (change === 'restored') this.#kick();
    // etcd answers again: read the keys now rather than at the next backoff step.
    if ((change === 'granted' || change === 'restored') && !this.#watch) {
      this.#syncRetry = 0;
      this.#syncNow();
    }
  }

  /** Creates this node's member key bound to the current lease. */
  #register(attempt: number): void {
    const id = this.#lease.id;
    if (this.#registering || this.#stopping || id === undefined || this.#registeredLease === id)
      return;
    this.#registering = true;
    if (attempt === 0) this.#registerSince = this.#clock.now();
    const key = this.#layout.member(this.options.nodeName);
    const value = encodeMember({ labels: this.options.labels, ips: this.options.nodeIPs });
    this.#timed('txn', () => this.#store.createIfAbsent(key, value, id)).then(
      (rev) => {
        this.#registering = false;
        if (this.#lease.id !== id) return this.#register(0);
        if (rev > 0) {
          this.#registeredLease = id;
          // Nodes that lost their leases together (etcd stalled, or was down past every
          // TTL) register again one after the other: the first must not take every IP
          // only to hand most of them over a moment later.
          this.#claimFrom = this.#clock.now() + this.options.rebalanceDelay;
          this.#view.local(key, value, id, rev, this.#clock.now());
          this.#log?.info({ node: this.options.nodeName, lease: id }, 'cluster member registered');
          this.#checkReady();
          this.#kick();
          return;
        }
        // The key exists with another lease: an earlier run of this node whose lease has
        // not expired yet, or another agent using the same name.
        const waited = this.#clock.now() - this.#registerSince;
        if (waited > 3 * this.#lease.ttlMs) {
          this.#log?.error(
            { node: this.options.nodeName, waitedMs: Math.round(waited) },
            'cluster member key is held by another lease and stays: is another agent running with the same cluster.nodeName?',
          );
        }
        this.#later(this.#backoff(Math.min(attempt, 4)), () => this.#register(attempt + 1));
      },
      (err: unknown) => {
        this.#registering = false;
        this.#log?.debug({ err: describeError(err) }, 'cluster member registration failed');
        this.#later(this.#backoff(attempt), () => this.#register(attempt + 1));
      },
    );
  }

  #syncNow(): void {
    if (this.#syncTimer === undefined) return; // reading, or watching
    this.#clock.clearTimeout(this.#syncTimer);
    this.#timers.delete(this.#syncTimer);
    this.#syncTimer = undefined;
    this.#syncStep();
  }

  #syncLater(ms: number): void {
    const t = this.#clock.setTimeout(() => {
      this.#timers.delete(t);
      this.#syncTimer = undefined;
      if (!this.#stopping) this.#syncStep();
    }, ms);
    this.#timers.add(t);
    this.#syncTimer = t;
  }

  /** The next step towards a current view: a full read, or resuming the watch. */
  #syncStep(): void {
    if (this.#viewReady && !this.#fullRead) this.#watchFrom(this.#view.revision + 1);
    else this.#sync();
  }

  /** Reads every key under the prefix and watches from the next revision. */
  #sync(): void {
    if (this.#stopping || this.#syncing) return;
    this.#syncing = true;
    this.#timed('get', () => this.#store.getPrefix(this.#layout.prefix)).then(
      ({ revision, kvs }) => {
        this.#syncing = false;
        if (this.#stopping) return;
        this.#syncRetry = 0;
        this.#fullRead = false;
        this.#view.reset(kvs, revision, this.#clock.now());
        this.#viewReady = true;
        this.#watchFrom(revision + 1);
        this.#checkReady();
        this.#kick();
      },
      (err: unknown) => {
        this.#syncing = false;
        this.#log?.debug({ err: describeError(err) }, 'cluster read failed');
        this.#syncLater(this.#backoff(this.#syncRetry++));
      },
    );
  }

  /**
   * Watches from `revision`. When the watch ends on an error it resumes from the last
   * revision seen (nothing is missed); when that revision was compacted away, everything
   * is read again.
   */
  #watchFrom(revision: number): void {
    if (this.#stopping) return;
    this.#watch = this.#store.watchPrefix(this.#layout.prefix, revision, {
      onEvents: (events, rev) => {
        this.#syncRetry = 0;
        if (this.#view.apply(events, rev, this.#clock.now())) this.#kick();
      },
      onEnd: (err) => {
        this.#watch = undefined;
        if (this.#stopping) return;
        const compacted = err instanceof CompactedError;
        this.#metrics.resync(compacted ? 'compacted' : 'error');
        this.#log?.info(
          { err: describeError(err), revision: this.#view.revision },
          compacted
            ? 'cluster watch compacted; reading everything again'
            : 'cluster watch ended; resuming',
        );
        if (compacted) this.#fullRead = true;
        this.#syncLater(compacted ? 0 : this.#backoff(this.#syncRetry++));
      },
    });
  }

  #checkReady(): void {
    if (!this.#isReady()) return;
    for (const w of this.#readyWaiters.splice(0)) w();
  }

  /** Runs reconcile once, soon (coalesces bursts of events). */
  #kick(): void {
    if (this.#kicked || this.#stopping) return;
    this.#kicked = true;
    queueMicrotask(() => {
      this.#kicked = false;
      if (!this.#stopping) this.#reconcile();
    });
  }

  #placement(): Map<string, string> {
    const ips = [...this.#view.desired.values()].map((d) => ({ ip: d.ip, eligible: d.eligible }));
    return place(ips, [...this.#view.members.values()]);
  }

  #reconcile(): void {
    const now = this.#clock.now();
    const me = this.options.nodeName;
    const lease = this.#lease.id;
    const view = this.#view;
    this.#metrics.setMembers(view.members.size);
    this.#updatePeers();
    this.#trackMoves(now);
    if (!this.#isReady() || lease === undefined) return this.#publish('sync');
    const placement = this.#placement();
    const self = view.members.get(me);
    let wake = Infinity;
    for (const ip of this.#releasing) {
      const o = view.owners.get(ip);
      if (!o || o.lease !== lease) this.#releasing.delete(ip);
    }
    for (const [ip, desired] of view.desired) {
      const owner = view.owners.get(ip);
      const target = placement.get(ip);
      if (!owner) {
        if (!this.#unownedSince.has(ip)) this.#unownedSince.set(ip, now);
        if (target !== me || !this.#lease.mayHold()) continue;
        if (now < this.#claimFrom) wake = Math.min(wake, this.#claimFrom);
        else this.#claim(ip, lease);
        continue;
      }
      const since = this.#unownedSince.get(ip);
      this.#unownedSince.delete(ip);
      if (owner.node !== me || owner.lease !== lease) continue;
      // Our claim, seen in the watch before (or instead of) its answer: a lost answer is
      // a timeout, but the claim won.
      if (since !== undefined) this.#metrics.failover(now - since);
      if (!self || !isEligible(self, desired.eligible)) {
        this.#release(ip, lease);
      } else if (target !== undefined && target !== me) {
        const t = view.members.get(target);
        const settledAt = (t?.seenAt ?? now) + this.options.rebalanceDelay;
        if (settledAt <= now) this.#release(ip, lease);
        else wake = Math.min(wake, settledAt);
      }
    }
    for (const [ip, owner] of view.owners) {
      if (owner.node === me && owner.lease === lease && !view.desired.has(ip))
        this.#release(ip, lease);
    }
    for (const ip of this.#unownedSince.keys())
      if (!view.desired.has(ip)) this.#unownedSince.delete(ip);
    if (wake < Infinity) this.#later(wake - now, () => this.#kick());
    this.#publish('sync');
  }

  #claim(ip: string, lease: string): void {
    if (this.#claiming.has(ip)) return;
    this.#claiming.add(ip);
    const key = this.#layout.owner(ip);
    const value = encodeOwner(this.options.nodeName);
    this.#timed('txn', () => this.#store.createIfAbsent(key, value, lease)).then(
      (rev) => {
        this.#claiming.delete(ip);
        if (rev === 0) return; // someone else was first; the watch shows who
        const now = this.#clock.now();
        const since = this.#unownedSince.get(ip); // gone if the watch showed the claim first
        if (since !== undefined) this.#metrics.failover(now - since);
        this.#unownedSince.delete(ip);
        this.#view.local(key, value, lease, rev, now);
        this.#publish('claim');
        this.#kick();
      },
      (err: unknown) => {
        this.#claiming.delete(ip);
        this.#log?.debug({ err: describeError(err), ip }, 'cluster claim failed');
        this.#later(this.options.retryMinMs, () => this.#kick());
      },
    );
  }

  /** Stops holding `ip`, waits until the listeners dropped it, then deletes the owner key. */
  #release(ip: string, lease: string): void {
    if (this.#releasing.has(ip)) return;
    this.#releasing.add(ip);
    this.#publish('release');
    const key = this.#layout.owner(ip);
    this.#hold
      .applied()
      .then(() => this.#timed('txn', () => this.#store.deleteIfLease(key, lease)))
      .then(
        (rev) => {
          if (rev > 0) this.#view.local(key, undefined, '0', rev, this.#clock.now());
          this.#releasing.delete(ip);
          this.#kick();
        },
        (err: unknown) => {
          // Still ours in etcd; not held. Try again (or let the lease expire).
          this.#log?.debug({ err: describeError(err), ip }, 'cluster release failed');
          this.#later(this.options.retryMinMs, () => {
            this.#releasing.delete(ip);
            this.#kick();
          });
        },
      );
  }

  /** Computes the hold set and publishes it when the IPs or the deadline changed. */
  #publish(reason: HoldReason): void {
    const lease = this.#lease.id;
    const valid = lease !== undefined && this.#lease.mayHold();
    // Past holdUntil before the fence timer ran (a hung process woken by the watch's data or
    // a claim's answer first): the drop is the fence's, whatever woke us.
    if (lease !== undefined && !valid && !FINAL_REASONS.has(reason)) reason = 'fence';
    const ips: string[] = [];
    if (!this.#stopping && valid && this.#isReady()) {
      for (const [ip, o] of this.#view.owners) {
        if (
          o.node === this.options.nodeName &&
          o.lease === lease &&
          this.#view.desired.has(ip) &&
          !this.#releasing.has(ip)
        ) {
          ips.push(ip);
        }
      }
    }
    ips.sort();
    const deadline = ips.length > 0 ? this.#lease.holdUntil : -Infinity;
    const prev = this.#hold.current;
    if (reason !== 'start' && sameIps(prev.ips, ips) && prev.deadline === deadline) return;
    this.#countChanges(prev.ips, ips, reason);
    this.#metrics.setHeld(ips.length);
    const set: HoldSet = {
      ips,
      deadline,
      reason: sameIps(prev.ips, ips) && reason === 'sync' ? 'renew' : reason,
      at: this.#clock.now(),
    };
    this.#hold.publish(set);
    try {
      this.#onSet?.(set);
    } catch (err) {
      this.#log?.error({ err: describeError(err) }, 'cluster hold record failed');
    }
  }

  #countChanges(before: readonly string[], after: readonly string[], reason: HoldReason): void {
    const had = new Set(before);
    const gained = after.filter((ip) => !had.delete(ip)).length;
    const lostN = had.size;
    if (gained > 0) this.#metrics.ownership(reason === 'restore' ? 'restored' : 'acquired', gained);
    if (lostN > 0) {
      const change = reason === 'fence' ? 'fenced' : reason === 'lost' ? 'lost' : 'released';
      this.#metrics.ownership(change, lostN);
    }
  }

  #updatePeers(): void {
    const ips = new Set<string>();
    for (const m of this.#view.members.values()) {
      if (m.name !== this.options.nodeName) for (const ip of m.ips) ips.add(ip);
    }
    const next = [...ips].sort();
    if (sameIps(next, this.#peers)) return;
    this.#peers = next;
    this.#onPeers?.(next);
  }

  #trackMoves(now: number): void {
    for (const ip of this.#view.desired.keys()) {
      const node = this.#view.owners.get(ip)?.node;
      const last = this.#lastMove.get(ip);
      if (!last || last.node !== node) this.#lastMove.set(ip, { node, at: now });
    }
    for (const ip of this.#lastMove.keys())
      if (!this.#view.desired.has(ip)) this.#lastMove.delete(ip);
  }

  async #timed<T>(op: 'get' | 'txn', fn: () => Promise<T>): Promise<T> {
    const sent = this.#clock.now();
    try {
      const r = await fn();
      this.#metrics.request(op, this.#clock.now() - sent, true);
      return r;
    } catch (err) {
      this.#metrics.request(op, this.#clock.now() - sent, false);
      throw err;
    }
  }
}
