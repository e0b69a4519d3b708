// The node's etcd lease and the proof that it is still valid.
//
// A keep-alive sent at local monotonic time s and answered with TTL t proves the lease
// lives until at least s + t on this clock: etcd restarts the TTL when the leader
// *receives* the request, which is after s. So validUntil = max over answered keep-alives
// of (send time + TTL), and the node may hold IPs only until holdUntil = validUntil −
// fenceMargin. No other node can claim an IP of ours before our lease has expired on the
// leader, i.e. before validUntil; the margin is the time the holder has to take its
// addresses down (timer lateness, netlink, clock-rate drift) after holdUntil.
import type { ClusterMetrics } from './metrics.js';
import { backoff, Timer, type Clock } from '../sched/index.js';
import type { ClusterStore } from './store.js';

export type LeaseChange = 'granted' | 'renewed' | 'restored' | 'fenced' | 'lost';

export interface LeaseKeeperParams {
  store: ClusterStore;
  clock: Clock;
  ttlSeconds: number;
  renewIntervalMs: number;
  fenceMarginMs: number;
  retryMinMs: number;
  retryMaxMs: number;
  metrics: ClusterMetrics;
  /** Called synchronously on every change of the lease or of holdUntil. */
  onChange(change: LeaseChange): void;
  log?: (msg: string, err?: unknown) => void;
}

const MAX_IN_FLIGHT = 3;

export class LeaseKeeper {
  readonly #p: LeaseKeeperParams;
  #id: string | undefined;
  #ttlMs = 0;
  #validUntil = -Infinity;
  #grantedAt = 0;
  #inFlight = 0;
  /** The next grant or keep-alive. */
  readonly #timer: Timer;
  /** When the hold ends: fence then. */
  readonly #fenceTimer: Timer;
  #stopped = true;
  #retry = 0;
  #granting = false;
  #fenced = true;
  #lastAnswerAt = -Infinity;
  /** Immediate retries since the last answered keep-alive. */
  #retryNow = 0;

  constructor(params: LeaseKeeperParams) {
    this.#p = params;
    this.#timer = new Timer(params.clock);
    this.#fenceTimer = new Timer(params.clock);
  }

  /** The lease ID while the node believes the lease exists. */
  get id(): string | undefined {
    return this.#id;
  }

  /** Clock ms until which this node may hold IPs (−Infinity: not now). */
  get holdUntil(): number {
    return this.#id === undefined ? -Infinity : this.#validUntil - this.#p.fenceMarginMs;
  }

  /** Clock ms before which the lease cannot have expired in etcd. */
  get validUntil(): number {
    return this.#id === undefined ? -Infinity : this.#validUntil;
  }

  get grantedAt(): number {
    return this.#grantedAt;
  }

  /** Clock ms of the last answer etcd gave to a grant or keep-alive (−∞: none yet). */
  get lastAnswerAt(): number {
    return this.#lastAnswerAt;
  }

  /** The TTL etcd granted, ms. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** True while holdUntil is in the future by the clock now. */
  mayHold(): boolean {
    return this.#p.clock.now() < this.holdUntil;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#grant();
  }

  /** Stops renewing; with `revoke`, revokes the lease (its keys go at once). */
  async stop(revoke: boolean): Promise<void> {
    this.#stopped = true;
    this.#clearTimers();
    const id = this.#id;
    this.#id = undefined;
    this.#validUntil = -Infinity;
    if (revoke && id !== undefined) await this.#p.store.revokeLease(id);
  }

  #clearTimers(): void {
    this.#timer.cancel();
    this.#fenceTimer.cancel();
  }

  #schedule(ms: number, fn: () => void): void {
    this.#timer.start(ms, () => {
      if (!this.#stopped) fn();
    });
  }

  #grant(): void {
    if (this.#granting || this.#stopped) return;
    this.#granting = true;
    const { store, clock, metrics } = this.#p;
    const sent = clock.now();
    store.grantLease(this.#p.ttlSeconds).then(
      ({ id, ttlSeconds }) => {
        this.#granting = false;
        this.#lastAnswerAt = clock.now();
        metrics.request('grant', clock.now() - sent, true);
        if (this.#stopped) {
          store.revokeLease(id).catch(() => undefined);
          return;
        }
        this.#retry = 0;
        this.#id = id;
        this.#ttlMs = ttlSeconds * 1000;
        this.#grantedAt = sent;
        this.#validUntil = sent + this.#ttlMs;
        this.#armFence();
        this.#p.onChange('granted');
        this.#schedule(this.#p.renewIntervalMs, () => this.#renew());
      },
      (err: unknown) => {
        this.#granting = false;
        metrics.request('grant', clock.now() - sent, false);
        this.#p.log?.('lease grant failed', err);
        const delay = backoff(this.#p.retryMinMs, this.#p.retryMaxMs, ++this.#retry);
        this.#schedule(delay, () => this.#grant());
      },
    );
  }

  #renew(): void {
    this.#schedule(this.#p.renewIntervalMs, () => this.#renew());
    const id = this.#id;
    if (id === undefined || this.#inFlight >= MAX_IN_FLIGHT) return;
    const { store, clock, metrics } = this.#p;
    const sent = clock.now();
    this.#inFlight++;
    store.keepAlive(id).then(
      (ttl) => {
        this.#inFlight--;
        this.#lastAnswerAt = clock.now();
        metrics.request('keepalive', clock.now() - sent, true);
        if (this.#id !== id || this.#stopped) return;
        if (ttl <= 0) {
          metrics.renewFailure('expired');
          this.#lose();
          return;
        }
        this.#retryNow = 0;
        const until = sent + ttl * 1000;
        if (until <= this.#validUntil) return;
        const wasFenced = this.#fenced;
        this.#validUntil = until;
        this.#armFence();
        this.#p.onChange(wasFenced && !this.#fenced ? 'restored' : 'renewed');
      },
      (err: unknown) => {
        this.#inFlight--;
        metrics.request('keepalive', clock.now() - sent, false);
        if (this.#id !== id || this.#stopped) return;
        metrics.renewFailure(/timeout|deadline/i.test(String(err)) ? 'timeout' : 'error');
        this.#p.log?.('lease keep-alive failed', err);
        // The store reconnected (to the next endpoint): try there now, not at the next tick.
        if (this.#inFlight === 0 && this.#retryNow++ < 2) this.#renew();
      },
    );
  }

  /** The lease is gone in etcd (its keys too): forget it and ask for a new one. */
  #lose(): void {
    this.#id = undefined;
    this.#validUntil = -Infinity;
    this.#fenced = true;
    this.#clearTimers();
    this.#p.onChange('lost');
    this.#grant();
  }

  #armFence(): void {
    this.#fenceTimer.cancel();
    const left = this.holdUntil - this.#p.clock.now();
    this.#fenced = left <= 0;
    if (this.#fenced) return;
    this.#fenceTimer.start(left, () => {
      if (this.#stopped) return;
      if (this.mayHold()) {
        // A timer may fire a little early: wait out the rest. The clock is read again there,
        // and a process preempted in between may find holdUntil passed: fence now, then.
        this.#armFence();
        if (!this.#fenced) return;
      }
      this.#fenced = true;
      this.#p.onChange('fenced');
    });
  }
}
