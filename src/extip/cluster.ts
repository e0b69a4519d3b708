// Cluster external IPs on this node (cluster mode). The cluster component publishes the set
// of IPs this node may hold now (its hold set); apply() makes the assigner follow it —
// removals first, and only once they are off the holder (no longer announced or answered
// for) does it resolve, so that a release deletes its ownership key after the address is
// gone; additions follow, without duplicate address detection (the previous holder is
// fenced by its lease). Every announcement of and answer for a cluster IP is gated by
// mayAnswer(), which asks the cluster component whether the node's lease is provably valid
// right now: timers fire late in a starved or stopped process, the clock does not.
import type { Logger } from '../log/index.js';
import { ConflictError, describeError } from '../errors/index.js';
import { parseIp, type ParsedIp } from '../ipaddr/index.js';

export interface ClusterGate {
  /** True while the node may speak for `ip`: in its hold set and its lease provably valid. */
  mayHold(ip: string): boolean;
}

interface AssignerLike {
  request(ips: readonly ParsedIp[], want: boolean): Promise<void>;
}

export class ClusterIps {
  readonly #gate: ClusterGate;
  readonly #log: Logger;
  /** The last hold set, without the IPs refused here: wanted on the holder for the cluster. */
  #held = new Set<string>();
  /** Held, or removed and not yet off the holder: gated by mayHold, added without DAD. */
  readonly #known = new Set<string>();
  /** IPs of the hold set refused here, with why (a node-local external IP, a node address). */
  #refused = new Map<string, string>();

  constructor(gate: ClusterGate, log: Logger) {
    this.#gate = gate;
    this.#log = log;
  }

  /** A cluster IP on this node (held, or being removed). */
  isCluster(ip: string): boolean {
    return this.#known.has(ip);
  }

  /** The cluster IPs wanted on the holder now. */
  held(): string[] {
    return [...this.#held];
  }

  /** Hold-set IPs this node refuses to put on its holder, with the reason. */
  refused(): { ip: string; reason: string }[] {
    return [...this.#refused].map(([ip, reason]) => ({ ip, reason }));
  }

  /** Nothing forbids speaking for `ip`: not a cluster IP, or held with a valid lease now. */
  mayAnswer(ip: string): boolean {
    return !this.#known.has(ip) || this.#gate.mayHold(ip);
  }

  /** A node-local request (extip add) for `ip`: refused while it is a cluster IP here. */
  checkLocal(ip: string): void {
    if (this.#known.has(ip)) {
      throw new ConflictError(
        `${ip} is a cluster external IP that this node holds now, so it cannot also be a node-local one; to hold it here only, delete it from the cluster (fibkeeper cluster extip del ${ip}) first`,
      );
    }
  }

  /**
   * Follows a hold set: IPs for which `problem` names a reason are refused (and reported);
   * the rest replace the previous set — removed ones first (awaited: they are off the
   * holder when this resolves), then the new ones (assigned in the background).
   */
  async apply(
    ips: readonly string[],
    problem: (ip: string) => string | undefined,
    assigner: AssignerLike,
  ): Promise<void> {
    const next = new Set<string>();
    const refused = new Map<string, string>();
    for (const ip of ips) {
      const why = this.#known.has(ip) ? undefined : problem(ip);
      if (why === undefined) next.add(ip);
      else refused.set(ip, why);
    }
    for (const [ip, reason] of refused) {
      if (!this.#refused.has(ip)) {
        this.#log.error({ ip, reason }, 'extip: cluster IP owned by this node is not held here');
      }
    }
    this.#refused = refused;
    const removed = [...this.#held].filter((ip) => !next.has(ip));
    const added = [...next].filter((ip) => !this.#held.has(ip));
    this.#held = next;
    for (const ip of added) this.#known.add(ip);
    if (removed.length > 0) {
      try {
        await assigner.request(removed.map(parse), false);
      } catch (err) {
        // The announcer forgot them and nothing answers for them; the periodic check
        // removes what is still on the holder.
        this.#log.error(
          { err: describeError(err), ips: removed.length },
          'extip: cluster IPs not removed from the holder yet',
        );
      }
      for (const ip of removed) if (!this.#held.has(ip)) this.#known.delete(ip);
    }
    if (added.length > 0) {
      assigner.request(added.map(parse), true).catch((err: unknown) => {
        this.#log.error({ err: describeError(err) }, 'extip: cluster IPs not assigned');
      });
    }
  }
}

function parse(ip: string): ParsedIp {
  return parseIp(ip);
}
