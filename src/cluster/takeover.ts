// What a member does in etcd when the heartbeat says a peer is gone (peers.ts):
//
//  - dead (its process is gone, and its cluster holder with it): revoke its lease. Its
//    member key and every owner key go in one revision, and the next owners claim at once.
//    Nothing of the dead node answers for its IPs any more, so nothing waits.
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
import type { ClusterStore } from './store.js';

export interface TakeoverParams {
  store: ClusterStore;
  layout: KeyLayout;
  clock: Clock;
  /** How long a silent node's kernel may answer after its lease is revoked, ms. */
  coolMs: number;
  log: (msg: string, fields: Record<string, unknown>) => void;
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

  /** The process behind `lease` is dead: revoke it. */
  async dead(node: string, lease: string): Promise<boolean> {
    if (this.#busy.has(lease)) return false;
    this.#busy.add(lease);
    try {
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
