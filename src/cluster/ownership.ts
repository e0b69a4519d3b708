// Ownership: this node's writes of owner keys in etcd. A claim creates the IP's owner key
// bound to the lease (create-if-absent: someone else first is no error, the watch shows who);
// a release first waits until the hold-set listeners dropped the IP, then hands the key to
// the member placement names (one write: it holds without a claim of its own), or deletes it.
// Which IPs to claim and release is the member's reconcile; the owner keys it reads are the
// view's (sync.ts), which the answers here update at once.
import type { Logger } from 'pino';
import { describeError } from '../errors/index.js';
import type { Clock } from '../sched/index.js';
import type { HoldPublisher, HoldReason } from './hold.js';
import { encodeOwner, type KeyLayout } from './keys.js';
import type { ClusterMetrics } from './metrics.js';
import type { ClusterStore } from './store.js';
import type { Move } from './takeover.js';
import type { ClusterView } from './view.js';

export interface OwnershipParams {
  node: string;
  store: ClusterStore;
  layout: KeyLayout;
  view: ClusterView;
  hold: Pick<HoldPublisher, 'applied'>;
  clock: Clock;
  metrics: ClusterMetrics;
  log: Logger | undefined;
  /** Delay before a failed claim or release is looked at again, ms. */
  retryMinMs: number;
  timed<T>(op: 'txn', fn: () => Promise<T>): Promise<T>;
  /** Where each IP goes when this node gives it up (placement without `without`). */
  moves(ips: readonly string[], without: string): Move[];
  publish(reason: HoldReason): void;
  /** Reconcile again soon. */
  kick(): void;
  /** `fn` after `ms` on the clock, unless the member stopped. */
  later(ms: number, fn: () => void): void;
}

export class Ownership {
  readonly #p: OwnershipParams;
  readonly #claiming = new Set<string>();
  readonly #releasing = new Set<string>();
  /** Clock time since which each desired IP has had no owner (for the failover metric). */
  readonly unownedSince = new Map<string, number>();

  constructor(p: OwnershipParams) {
    this.#p = p;
  }

  /** Forgets the releases that are done: the key is no longer ours under `lease`. */
  pruneReleasing(lease: string): void {
    for (const ip of this.#releasing) {
      const o = this.#p.view.owners.get(ip);
      if (!o || o.lease !== lease) this.#releasing.delete(ip);
    }
  }

  /** Claims `ip` under `lease` (one claim per IP at a time). */
  claim(ip: string, lease: string): void {
    const p = this.#p;
    if (this.#claiming.has(ip)) return;
    this.#claiming.add(ip);
    const key = p.layout.owner(ip);
    const value = encodeOwner(p.node);
    p.timed('txn', () => p.store.createIfAbsent(key, value, lease)).then(
      (rev) => {
        this.#claiming.delete(ip);
        if (rev === 0) return; // someone else was first; the watch shows who
        const now = p.clock.now();
        const since = this.unownedSince.get(ip); // gone if the watch showed the claim first
        if (since !== undefined) p.metrics.failover(now - since);
        this.unownedSince.delete(ip);
        p.view.local(key, value, lease, rev, now);
        p.publish('claim');
        p.kick();
      },
      (err: unknown) => {
        this.#claiming.delete(ip);
        p.log?.debug({ err: describeError(err), ip }, 'cluster claim failed');
        p.later(p.retryMinMs, () => p.kick());
      },
    );
  }

  /**
   * Stops holding `ip`, waits until the listeners dropped it, then hands its owner key to the
   * member placement names (one write: that member holds without a claim of its own), or
   * deletes it when there is none.
   */
  release(ip: string, lease: string): void {
    const p = this.#p;
    if (this.#releasing.has(ip)) return;
    this.#releasing.add(ip);
    p.publish('release');
    const key = p.layout.owner(ip);
    const hand = async (): Promise<number> => {
      const [move] = p.view.desired.has(ip) ? p.moves([ip], p.node) : [];
      if (move !== undefined) {
        const rev = await p
          .timed('txn', () => p.store.moveIfLease(key, move.value, lease, move.toLease))
          .catch(() => 0);
        if (rev > 0) {
          p.view.local(key, move.value, move.toLease, rev, p.clock.now());
          return -rev; // already applied to the view
        }
      }
      return p.timed('txn', () => p.store.deleteIfLease(key, lease));
    };
    p.hold
      .applied()
      .then(hand)
      .then(
        (rev) => {
          if (rev > 0) p.view.local(key, undefined, '0', rev, p.clock.now());
          this.#releasing.delete(ip);
          p.kick();
        },
        (err: unknown) => {
          // Still ours in etcd; not held. Try again (or let the lease expire).
          p.log?.debug({ err: describeError(err), ip }, 'cluster release failed');
          p.later(p.retryMinMs, () => {
            this.#releasing.delete(ip);
            p.kick();
          });
        },
      );
  }

  /** Every IP this node owns under `lease`. */
  ownedAll(lease: string): string[] {
    return [...this.#p.view.owners]
      .filter(([, o]) => o.node === this.#p.node && o.lease === lease)
      .map(([ip]) => ip);
  }

  /** The IPs this node owns under `lease`, desired and not being released. */
  owned(lease: string): string[] {
    const { view, node } = this.#p;
    const out: string[] = [];
    for (const [ip, o] of view.owners) {
      if (o.node === node && o.lease === lease && view.desired.has(ip) && !this.#releasing.has(ip))
        out.push(ip);
    }
    return out;
  }
}
