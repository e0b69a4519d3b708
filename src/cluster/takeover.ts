// What a member does in etcd when the heartbeat says a peer is gone (peers.ts):
//
//  - dead (its process is gone, and its cluster holder with it): each of its owner keys is
//    moved to the member placement now names (one transaction per IP, conditional on the
//    dead lease: of several members that saw the death, one wins), so the next owners hold
//    without a claim of their own; then its lease is revoked (its member key, and any owner
//    key not moved, go with it). Nothing of the dead node answers for its IPs any more, so
//    nothing waits.
//  - silent (hung, cut off, its link lost): its kernel may still answer for its IPs until
//    its fence deadline, which a keep-alive it sent before the revoke may have moved as far
//    as revoke + (TTL − fence margin). So first `fenced/<node>` is written (create-if-absent,
//    bound to a short lease of our own: it cleans itself up), naming the revoked lease, its
//    IPs and the cool-down; then the lease is revoked. Every member that sees the owner keys
//    of that lease go while the fenced key is there waits coolMs before it claims them.
//
// A revoke is sent only within a second of the fenced key's write, so the key outlives the
// cool-down it announces. Revoking a lease that is gone is not an error. Each call is
// best-effort: when etcd does not answer, the lease expires by itself.
import type { Clock } from '../sched/index.js';
import { encodeFenced, type KeyLayout } from './keys.js';
import type { ClusterMetrics } from './metrics.js';
import type { ClusterStore } from './store.js';
import type { ClusterView } from './view.js';

/** An owner key to hand to another member: its key, new value and that member's lease. */
export interface Move {
  key: string;
  value: string;
  toLease: string;
}

export interface TakeoverParams {
  store: ClusterStore;
  layout: KeyLayout;
  clock: Clock;
  /** How long a silent node's kernel may answer after its lease is revoked, ms. */
  coolMs: number;
  log: (msg: string, fields: Record<string, unknown>) => void;
  view: ClusterView;
  metrics: ClusterMetrics;
  /** This node may act in etcd for the others now: not stopping, its own lease valid. */
  mayAct(): boolean;
  /** This node hears most other members besides `node` (the side of a split that acts). */
  hearsMostBesides(node: string): boolean;
  /** The moves that hand `ips` to their next owners without `without`. */
  moves(ips: readonly string[], without: string): Move[];
}

/** The revoke must follow the fenced key's write within this, or it is not sent. */
const REVOKE_WITHIN_MS = 1000;

export class Takeover {
  readonly #p: TakeoverParams;
  /** Leases being revoked (one attempt at a time each). */
  readonly #busy = new Set<string>();

  constructor(p: TakeoverParams) {
    this.#p = p;
  }

  #ipsOf(lease: string): string[] {
    return [...this.#p.view.owners].filter(([, o]) => o.lease === lease).map(([ip]) => ip);
  }

  /** The heartbeat says `node`'s process (lease `lease`) is dead. */
  onDead(node: string, lease: string): void {
    this.#p.metrics.peer('dead');
    if (!this.#p.mayAct()) return;
    const moves = this.#p.moves(this.#ipsOf(lease), node);
    void this.dead(node, lease, moves).then((done) => {
      if (done) this.#p.metrics.takeover('dead');
    });
  }

  /** The heartbeat says `node` went silent. Cut off ourselves (etcd, the segment): not ours. */
  onSilent(node: string, lease: string): void {
    this.#p.metrics.peer('silent');
    if (!this.#p.mayAct() || !this.#p.hearsMostBesides(node)) return;
    void this.silent(node, lease, this.#ipsOf(lease)).then((done) => {
      if (done) this.#p.metrics.takeover('silent');
    });
  }

  /** The process behind `lease` is dead: hand its owner keys over (`moves`), revoke it. */
  async dead(node: string, lease: string, moves: readonly Move[] = []): Promise<boolean> {
    if (this.#busy.has(lease)) return false;
    this.#busy.add(lease);
    try {
      await moveAll(this.#p.store, lease, moves);
      await this.#p.store.revokeLease(lease);
      this.#p.log('cluster: revoked the lease of a dead peer', { node, lease });
      return true;
    } catch (err) {
      this.#p.log('cluster: revoking a dead peer failed', { node, lease, err: String(err) });
      return false;
    } finally {
      this.#busy.delete(lease);
    }
  }

  /**
   * `node` (lease `lease`, owning `ips`) went silent: writes the fenced key, then revokes.
   * Returns whether this call revoked it.
   */
  async silent(node: string, lease: string, ips: readonly string[]): Promise<boolean> {
    if (this.#busy.has(lease)) return false;
    this.#busy.add(lease);
    const { store, layout, clock, coolMs } = this.#p;
    try {
      const start = clock.now();
      const ttl = Math.ceil((coolMs + 2 * REVOKE_WITHIN_MS) / 1000);
      const own = await store.grantLease(ttl);
      const key = layout.fenced(node);
      const rev = await store.createIfAbsent(key, encodeFenced({ lease, ips, coolMs }), own.id);
      if (rev === 0) {
        // Someone else is fencing it (or did, for an earlier lease: that key expires soon).
        await store.revokeLease(own.id).catch(() => undefined);
        return false;
      }
      if (clock.now() - start > REVOKE_WITHIN_MS) {
        await store.revokeLease(own.id).catch(() => undefined);
        this.#p.log('cluster: fencing a silent peer took too long; left to its lease', {
          node,
          lease,
        });
        return false;
      }
      await store.revokeLease(lease);
      this.#p.log('cluster: fenced a silent peer (its lease revoked, its IPs cool down)', {
        node,
        lease,
        ips: ips.length,
        coolMs,
      });
      return true;
    } catch (err) {
      this.#p.log('cluster: fencing a silent peer failed', { node, lease, err: String(err) });
      return false;
    } finally {
      this.#busy.delete(lease);
    }
  }
}

/**
 * Moves every key of `moves` from `fromLease` to its new owner's lease, in parallel; a key
 * that is not bound to `fromLease` any more, or whose new owner's lease is gone, is left as it
 * is (a later revoke or release deletes it, and placement claims it).
 */
export async function moveAll(
  store: ClusterStore,
  fromLease: string,
  moves: readonly Move[],
): Promise<number> {
  const done = await Promise.all(
    moves.map((m) =>
      store.moveIfLease(m.key, m.value, fromLease, m.toLease).then(
        (rev) => (rev > 0 ? 1 : 0),
        () => 0,
      ),
    ),
  );
  return done.reduce((a: number, b) => a + b, 0);
}
