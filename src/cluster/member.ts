// One node's cluster component, the facade over the parts that wiring.ts lists and builds
// (lease, member key, the view of the cluster keys, owner-key writes, peers, takeover): it
// places the desired IPs over the live members, decides which of its share to claim and
// which to hand over (reconcile), and publishes the set of IPs it may hold now (fenced by its
// lease, or by its peers' promises). See index.ts for the seam and docs/cluster.md for the
// argument.
import type { Logger } from 'pino';
import { describeError } from '../errors/index.js';
import { noopClusterMetrics, type ClusterMetrics } from './metrics.js';
import { backoff, monotonicClock, Timer, type Clock } from '../sched/index.js';
import type { ClaimGate, ClaimProber } from './claims.js';
import { computeHold, handoverMoves } from './holding.js';
import {
  sameIps,
  type HoldListener,
  type HoldPublisher,
  type HoldReason,
  type HoldSet,
} from './hold.js';
import { encodeMember, type KeyLayout } from './keys.js';
import type { LeaseChange, LeaseKeeper } from './lease.js';
import { countChanges, holdable, peerIps, timedRequest, trackMoves } from './member-util.js';
import { resolveOptions, type ClusterOptions } from './options.js';
import type { Ownership } from './ownership.js';
import type { PeerMonitor, PeerTransport } from './peers.js';
import { isEligible, place } from './placement.js';
import { isActiveActive, singleHolderIps, type ActiveHold } from './active.js';
import type { ClusterStore } from './store.js';
import type { Registration } from './registration.js';
import type { ViewSync } from './sync.js';
import { moveAll, type Move } from './takeover.js';
import type { ClusterView } from './view.js';
import { describeStatus, type ClusterStatus } from './status.js';
import { wireMember, type MemberHost } from './wiring.js';

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
   * what the node held when (the log), and for the kernel fence's deadline.
   */
  onSet?: (set: HoldSet) => void;
  /** Active-active IPs to withdraw now (they stay held for withdrawLinger more: active.ts). */
  onWithdraw?: (ips: readonly string[]) => void;
  /** Called with the other members' node IPs whenever they change (owner `cluster`). */
  onPeers?: (ips: readonly string[]) => void;
  /** The peer heartbeat's sockets; without one, peers are not heard (lease expiry only). */
  peers?: PeerTransport;
  /**
   * Duplicate address detection on the segment before an IP whose previous holder is not
   * proven to have been a fibkeeper node is claimed: rejects with an error carrying `mac`
   * and `what` when another host uses it. Absent: no detection.
   */
  probe?: (ip: string) => Promise<void>;
  /** Tests: run `fn` after pending I/O (the heartbeat's silence check). */
  defer?: (fn: () => void) => void;
}

export class ClusterMember {
  readonly options: ClusterOptions;
  readonly #p: ClusterMemberParams;
  readonly #store: ClusterStore;
  readonly #clock: Clock;
  readonly #metrics: ClusterMetrics;
  readonly #log: Logger | undefined;
  readonly #layout: KeyLayout;
  readonly #view: ClusterView;
  readonly #sync: ViewSync;
  readonly #lease: LeaseKeeper;
  readonly #hold: HoldPublisher;
  readonly #heard: PeerMonitor | undefined;
  readonly #claims: ClaimGate;
  readonly #prober: ClaimProber;
  readonly #own: Ownership;
  readonly #active: ActiveHold;
  #peerIps: readonly string[] = [];
  #started = false;
  #stopping = false;
  readonly #reg: Registration;
  /** Clock time before which this node claims nothing (it registered a moment ago). */
  #claimFrom = 0;
  /** It can hold IPs: its external interface has a link, and it hears its peers. */
  #able = true;
  #linkUp = true;
  /** When holding on grace ends: publish again then. */
  readonly #graceTimer: Timer;
  #kicked = false;
  /** The pending retries of #later(), cancelled by stop(). */
  readonly #timers = new Set<Timer>();
  readonly #lastMove = new Map<string, { node: string | undefined; at: number }>();
  #readyWaiters: (() => void)[] = [];

  constructor(params: ClusterMemberParams) {
    this.#p = params;
    this.options = resolveOptions(params.options);
    this.#store = params.store;
    this.#clock = params.clock ?? monotonicClock;
    this.#graceTimer = new Timer(this.#clock);
    this.#metrics = params.metrics ?? noopClusterMetrics();
    this.#log = params.log;
    const w = wireMember(
      {
        node: this.options.nodeName,
        options: this.options,
        store: this.#store,
        clock: this.#clock,
        metrics: this.#metrics,
        log: this.#log,
        peers: params.peers,
        probe: params.probe,
        defer: params.defer,
        onWithdraw: params.onWithdraw,
      },
      this.#host(),
    );
    this.#layout = w.layout;
    this.#view = w.view;
    this.#sync = w.sync;
    this.#lease = w.lease;
    this.#reg = w.reg;
    this.#hold = w.hold;
    this.#own = w.ownership;
    this.#claims = w.claims;
    this.#prober = w.prober;
    this.#heard = w.heard;
    this.#active = w.active;
    if (params.onHold) this.#hold.subscribe(params.onHold);
  }

  /** What the parts call back (wiring.ts). */
  #host(): MemberHost {
    return {
      onLease: (c) => this.#onLease(c),
      onViewChange: () => (this.#checkReady(), this.#kick()),
      onRegistered: (registered) => {
        // Nodes that lost their leases together (etcd stalled, or was down past every TTL)
        // register again one after the other: the first must not take every IP only to
        // hand most of them over a moment later.
        if (registered) this.#claimFrom = this.#clock.now() + this.options.rebalanceDelay;
        this.#checkReady();
        this.#kick();
      },
      onPeersChange: () => {
        // Promises (or their end) matter only while this node promises too: etcd is away.
        if (this.#lease.id !== undefined && this.#promising()) this.#publish('grace');
      },
      onIsolated: () => this.#refreshAble(),
      publish: (reason) => this.#publish(reason),
      kick: () => this.#kick(),
      later: (ms, fn) => this.#later(ms, fn),
      backoff: (a) => this.#backoff(a),
      timed: (op, fn) => timedRequest(this.#clock, this.#metrics, op, fn),
      moves: (ips, without) => this.#moves(ips, without),
      memberValue: () => this.#memberValue(),
      promising: () => this.#promising(),
      stopping: () => this.#stopping,
    };
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
   * announcer): true only while the IP is in the hold set and its deadline (the lease's
   * proof, or the peers' promises) lies ahead by the clock *now*, even when timers run late
   * (a stopped or starved process).
   */
  mayHold(ip: string): boolean {
    const h = this.#hold.current;
    return !this.#stopping && this.#clock.now() < h.deadline && h.ips.includes(ip);
  }

  /** Active-active (held by every eligible member that announces routes), or single holder. */
  isActiveActive(ip: string): boolean {
    return isActiveActive(this.#view, ip);
  }

  /** An active-active IP still held but not to be announced: its flows are moving away. */
  withdrawing(ip: string): boolean {
    return this.#active.lingering(ip);
  }

  /** The desired cluster IPs as this node last read them from etcd (canonical). */
  desiredIps(): ReadonlySet<string> {
    return new Set(this.#view.desired.keys());
  }

  /** The other live members' node IPs (for forwardable IPs with owner `cluster`). */
  peerNodeIps(): readonly string[] {
    return this.#peerIps;
  }

  /** Resolves once the member is registered and has read the cluster keys. */
  ready(): Promise<void> {
    if (this.#isReady()) return Promise.resolve();
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  #isReady(): boolean {
    return this.#sync.ready && this.#reg.lease !== undefined && this.#reg.lease === this.#lease.id;
  }

  /**
   * Publishes the empty hold set and waits until the listeners have applied it (a restarted
   * agent drops IPs it no longer owns before anything else), starts hearing its peers, then
   * joins the cluster in the background (see ready()).
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#publish('start');
    await this.#hold.applied();
    if (this.#stopping) return;
    await this.#heard?.start();
    this.#lease.start();
    this.#sync.start();
  }

  /**
   * Leaves the cluster: publishes the empty set, waits until it is applied, then (with
   * handoverOnStop) revokes the lease so its member and ownership keys go at once and the
   * next owners claim without waiting for the TTL. Idempotent; never throws.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#sync.stop();
    for (const t of this.#timers) t.cancel();
    this.#timers.clear();
    this.#graceTimer.cancel();
    const lease = this.#lease.id;
    const mine = lease === undefined ? [] : this.#own.ownedAll(lease);
    this.#publish('stop');
    await this.#hold.applied();
    try {
      // Each IP straight to its next owner (one write, no claim of theirs), then the lease.
      if (this.options.handoverOnStop && lease !== undefined && this.#lease.mayHold()) {
        const moved = await moveAll(this.#store, lease, this.#moves(mine, this.options.nodeName));
        this.#log?.debug({ moved, of: mine.length }, 'cluster: stopping: IPs handed over');
      }
      await this.#lease.stop(this.options.handoverOnStop);
      this.#log?.debug('cluster: stopping: lease revoked');
    } catch (err) {
      this.#log?.warn(
        { err: describeError(err) },
        'cluster lease revoke failed; it expires by itself',
      );
    }
    this.#heard?.stop();
  }

  /**
   * Whether the external interface has a link. Without one — or cut off from every peer on
   * the segment (peers.ts) — the node holds nothing from now on, says so in its member key
   * (placement passes it over) and hands its IPs over; able again, it takes its share back.
   */
  setAble(linkUp: boolean): void {
    this.#linkUp = linkUp;
    this.#refreshAble();
  }

  #refreshAble(): void {
    const able = this.#linkUp && !(this.#heard?.isolated ?? false);
    if (this.#able === able) return;
    this.#able = able;
    this.#log?.info(
      { able, linkUp: this.#linkUp, isolated: this.#heard?.isolated ?? false },
      able
        ? 'cluster: this node can hold IPs again (a link, peers heard): it takes its share back'
        : 'cluster: this node cannot hold IPs (no link, or no peer heard): it hands its IPs over',
    );
    this.#publish('sync');
    this.#reg.update();
    this.#kick();
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
      able: this.#able,
      peers: this.#heard?.status() ?? [],
      conflicts: this.#claims.conflicts(),
      cooling: this.#claims.cooling(),
    });
  }

  #later(ms: number, fn: () => void): void {
    const t = new Timer(this.#clock);
    t.start(ms, () => {
      this.#timers.delete(t);
      if (!this.#stopping) fn();
    });
    this.#timers.add(t);
  }

  /** The delay after `attempt` + 1 consecutive failures (attempt 0: retryMinMs). */
  #backoff(attempt: number): number {
    return backoff(this.options.retryMinMs, this.options.retryMaxMs, attempt + 1);
  }

  /** How long a promise not to claim lasts: as long as a lease's proof (TTL − margin). */
  #graceMs(): number {
    return this.options.leaseTTL - this.options.fenceMargin;
  }

  /** etcd has not answered this node for three keep-alive intervals: it promises its peers. */
  #promising(): boolean {
    return this.#clock.now() - this.#lease.lastAnswerAt > 3 * this.options.renewInterval;
  }

  #onLease(change: LeaseChange): void {
    this.#metrics.setLeaseValid(this.#lease.mayHold());
    if (change === 'granted' || change === 'lost') {
      this.#reg.forget();
      if (change === 'granted') this.#reg.register();
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
    if ((change === 'granted' || change === 'restored') && !this.#sync.watching) this.#sync.now();
  }

  #memberValue(): string {
    return encodeMember({
      labels: this.options.labels,
      ips: this.options.nodeIPs,
      bgp: this.options.bgp,
      ...(this.#able ? {} : { able: false }),
      ...(this.#heard ? { hb: this.#heard.local } : {}),
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
    return place(singleHolderIps(this.#view), holdable(this.#view));
  }

  #reconcile(): void {
    const now = this.#clock.now();
    const me = this.options.nodeName;
    const lease = this.#lease.id;
    const view = this.#view;
    this.#metrics.setMembers(view.members.size);
    this.#claims.observe(view, now);
    this.#heard?.setMembers(view.members);
    this.#updatePeerIps();
    trackMoves(view, this.#lastMove, now);
    if (!this.#isReady() || lease === undefined) return this.#publish('sync');
    this.#metrics.reconciled();
    const placement = this.#placement();
    const self = view.members.get(me);
    const selfHolds = self !== undefined && this.#able && !view.cordoned.has(me);
    let wake = Infinity;
    this.#own.pruneReleasing(lease);
    for (const [ip, desired] of view.desired) {
      const owner = view.owners.get(ip);
      if (desired.eligible.mode === 'active-active') {
        if (owner?.node === me && owner.lease === lease) this.#own.release(ip, lease); // was single
        continue; // every eligible member holds it (active.ts)
      }
      const target = placement.get(ip);
      if (!owner) {
        if (!this.#own.unownedSince.has(ip)) this.#own.unownedSince.set(ip, now);
        if (target !== me || !selfHolds || !this.#lease.mayHold()) continue;
        if (now < this.#claimFrom) {
          wake = Math.min(wake, this.#claimFrom);
          continue;
        }
        const v = this.#claims.check(ip, now, this.#heard?.noClaimUntil ?? -Infinity);
        if (v.kind === 'now') this.#own.claim(ip, lease);
        else if (v.kind === 'probe') this.#prober.run(ip);
        else wake = Math.min(wake, v.until);
        continue;
      }
      const since = this.#own.unownedSince.get(ip);
      this.#own.unownedSince.delete(ip);
      if (owner.node !== me || owner.lease !== lease) continue;
      // Our claim, seen in the watch before (or instead of) its answer: a lost answer is
      // a timeout, but the claim won.
      if (since !== undefined) this.#metrics.failover(now - since);
      if (!selfHolds || !self || !isEligible(self, desired.eligible)) {
        this.#own.release(ip, lease);
      } else if (target !== undefined && target !== me) {
        const t = view.members.get(target);
        const settledAt = (t?.seenAt ?? now) + this.options.rebalanceDelay;
        if (settledAt <= now) this.#own.release(ip, lease);
        else wake = Math.min(wake, settledAt);
      }
    }
    for (const [ip, owner] of view.owners) {
      if (owner.node === me && owner.lease === lease && !view.desired.has(ip))
        this.#own.release(ip, lease);
    }
    for (const ip of this.#own.unownedSince.keys())
      if (!view.desired.has(ip)) this.#own.unownedSince.delete(ip);
    if (wake < Infinity) this.#later(wake - now, () => this.#kick());
    this.#publish('sync');
  }

  #moves(ips: readonly string[], without: string): Move[] {
    return handoverMoves(this.#view, this.#layout, ips, without);
  }

  /** Computes the hold set and publishes it when the IPs or the deadline changed. */
  #publish(reason: HoldReason): void {
    const lease = this.#lease.id;
    const prev = this.#hold.current;
    const { set, onGrace, changed } = computeHold({
      now: this.#clock.now(),
      reason,
      lease,
      byLease: lease !== undefined && this.#lease.mayHold(),
      holdUntil: this.#lease.holdUntil,
      grace: lease !== undefined ? this.#heard?.graceUntil() : undefined,
      graceMs: this.#graceMs(),
      mayHoldAny: !this.#stopping && this.#isReady() && this.#able,
      owned: (l) => [
        ...new Set([
          ...this.#own.owned(l),
          ...this.#active.held(this.#view, this.#clock.now(), prev.ips),
        ]),
      ],
      prev,
    });
    this.#metrics.setGrace(onGrace);
    this.#armGrace(onGrace ? set.deadline : undefined);
    if (!changed) return;
    countChanges(this.#metrics, prev.ips, set.ips, set.reason);
    this.#metrics.setHeld(set.ips.length);
    this.#hold.publish(set);
    try {
      this.#p.onSet?.(set);
    } catch (err) {
      this.#log?.error({ err: describeError(err) }, 'cluster hold record failed');
    }
  }

  /** Holding on grace until `until`: publish again then (the fence, unless extended). */
  #armGrace(until: number | undefined): void {
    this.#graceTimer.cancel();
    if (until === undefined || this.#stopping) return;
    this.#graceTimer.start(Math.max(0, until - this.#clock.now()), () => this.#publish('fence'));
  }

  #updatePeerIps(): void {
    const next = peerIps(this.#view, this.options.nodeName);
    if (sameIps(next, this.#peerIps)) return;
    this.#peerIps = next;
    this.#p.onPeers?.(next);
  }
}
