// Cluster external IPs on this node (cluster mode). The cluster component publishes the set
// of IPs this node may hold now (its hold set) and the deadline by which it must stop;
// apply() makes the cluster holder follow the set — removals first, and only once they are
// off the holder (no longer announced or answered for, by us or the kernel) does it resolve,
// so that a release deletes its ownership key after the address is gone; additions follow.
// The holder is a TUN device bound to this process (cluster-holder.ts): when the agent dies
// the kernel deletes it and every cluster IP with it. The fence (fence.ts) drops every IP
// packet to or from a cluster IP once the deadline has passed, by the kernel's clock: a hung
// agent's node goes quiet at the IP level too. Every announcement of and answer for a
// cluster IP is gated by mayAnswer(), which asks the cluster component whether the node may
// hold it right now: timers fire late in a starved or stopped process, the clock does not.
import type { Logger } from '../log/index.js';
import { ConflictError, describeError } from '../errors/index.js';
import { parseIp, type ParsedIp } from '../ipaddr/index.js';
import type { Address, Link, NetlinkHandle } from '../netlink/index.js';
import type { Clock } from '../sched/index.js';
import { Assigner } from './assigner.js';
import { ClusterHolder } from './cluster-holder.js';
import { ClusterFence, type FenceOps } from './fence.js';
import { observe } from './holder.js';
import type { ExtipMetrics } from './metrics.js';
import type { AnnouncerLike, ExternalIpStatus, ObservedAddress } from './types.js';

export interface ClusterGate {
  /** True while the node may speak for `ip`: in its hold set and its lease provably valid. */
  mayHold(ip: string): boolean;
  /**
   * An IP held by several nodes at once (active-active), announced over BGP only: no
   * gratuitous ARP or unsolicited NA is sent for it and no ARP/NDP request is answered.
   */
  routedOnly?(ip: string): boolean;
  /** The cluster holder's name (cluster.holderName); default fkcluster0. */
  holderName?: string;
  /** Tests: the fence object file. */
  fenceObject?: string;
}

export interface ClusterIpsParams {
  gate: ClusterGate;
  log: Logger;
  clock: Clock;
  metrics: ExtipMetrics;
}

export class ClusterIps {
  readonly #gate: ClusterGate;
  readonly #log: Logger;
  readonly #p: ClusterIpsParams;
  #holder: ClusterHolder | undefined;
  #assigner: Assigner | undefined;
  #fence: FenceOps & { close(): void; attach(ifindex: number): void; ifindex: number };
  #fenceError: string | undefined;
  #holderError: string | undefined;
  #deadline = -Infinity;
  #recreating: Promise<void> | undefined;
  #stopped = false;
  /** The last hold set, without the IPs refused here: wanted on the holder for the cluster. */
  #held = new Set<string>();
  /** Held, or removed and not yet off the holder: gated by mayHold. */
  readonly #known = new Set<string>();
  /** IPs of the hold set refused here, with why (a node-local external IP, a node address). */
  #refused = new Map<string, string>();

  constructor(p: ClusterIpsParams) {
    this.#p = p;
    this.#gate = p.gate;
    this.#log = p.log;
    this.#fence = noFence();
  }

  get holderName(): string {
    return this.#gate.holderName ?? 'fkcluster0';
  }

  /** The cluster holder's ifindex (0 while it does not exist). */
  get holderIfindex(): number {
    return this.#holder?.ifindex ?? 0;
  }

  /**
   * Creates the cluster holder and its assigner, and attaches the fence to the external
   * interface. A fence the kernel refuses (no tcx) is reported in health(), not fatal.
   */
  async start(ctx: {
    nl: NetlinkHandle;
    netns: string | undefined;
    announcer: AnnouncerLike;
    extIfindex: number;
  }): Promise<void> {
    const holder = new ClusterHolder({
      nl: ctx.nl,
      netns: ctx.netns,
      name: this.holderName,
      log: this.#log,
    });
    this.#holder = holder;
    await holder.open();
    this.#assigner = new Assigner({
      ops: holder,
      announcer: ctx.announcer,
      clock: this.#p.clock,
      log: this.#log,
      metrics: this.#p.metrics,
    });
    this.#assigner.setDesired([]).catch(() => undefined); // loaded: nothing is adopted here
    try {
      this.#fence = ClusterFence.open({
        ifindex: ctx.extIfindex,
        netns: ctx.netns,
        log: this.#log,
        ...(this.#gate.fenceObject ? { objectPath: this.#gate.fenceObject } : {}),
      });
      this.#fenceError = undefined;
    } catch (err) {
      this.#fenceError = describeError(err);
      this.#log.error(
        { err: this.#fenceError },
        'extip: no kernel fence for the cluster IPs: a hung agent keeps answering for them at the IP level until it runs again',
      );
    }
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

  /**
   * Nothing forbids speaking for `ip` on the segment: not a cluster IP, or held with a valid
   * lease now and not routed only (active-active IPs reach the node by BGP, never by ARP/NDP).
   */
  mayAnswer(ip: string): boolean {
    if (!this.#known.has(ip)) return true;
    return this.#gate.mayHold(ip) && this.#gate.routedOnly?.(ip) !== true;
  }

  /** On the cluster holder and assigned (we answer for it, while mayAnswer allows). */
  isAssigned(ip: string): boolean {
    return this.#assigner?.isAssigned(ip) === true;
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
   * The deadline of the current hold set (clock ms; −∞ when nothing may be held): the kernel
   * fence answers for the cluster IPs until then. Called synchronously with every set.
   */
  setDeadline(untilMs: number): void {
    this.#deadline = untilMs;
    try {
      this.#fence.setDeadline(untilMs);
    } catch (err) {
      this.#log.error({ err: describeError(err) }, 'extip: cannot move the fence deadline');
    }
  }

  get deadline(): number {
    return this.#deadline;
  }

  /** Packets the fence dropped (to and from fenced cluster IPs). */
  fenceDrops(): { ingress: number; egress: number } {
    return this.#fence.drops();
  }

  /**
   * Follows a hold set: IPs for which `problem` names a reason are refused (and reported);
   * the rest replace the previous set — removed ones first (fenced at once, then awaited: they
   * are off the holder when this resolves), then the new ones (assigned in the background).
   */
  async apply(ips: readonly string[], problem: (ip: string) => string | undefined): Promise<void> {
    const assigner = this.#assigner;
    if (assigner === undefined) return;
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
    const removed = [...this.#held].filter((ip) => !next.has(ip)).map(parse);
    const added = [...next].filter((ip) => !this.#held.has(ip)).map(parse);
    this.#held = next;
    for (const ip of added) {
      this.#known.add(ip.address);
      this.#fenceCall('follow', ip);
    }
    if (removed.length > 0) {
      for (const ip of removed) this.#fenceCall('block', ip);
      try {
        await assigner.request(removed, false);
      } catch (err) {
        // The fence drops them, the announcer forgot them and nothing answers for them; the
        // periodic check removes what is still on the holder.
        this.#log.error(
          { err: describeError(err), ips: removed.length },
          'extip: cluster IPs not removed from the holder yet',
        );
      }
      for (const ip of removed) {
        if (this.#held.has(ip.address)) continue;
        this.#known.delete(ip.address);
        this.#fenceCall('forget', ip);
      }
    }
    if (added.length > 0) {
      assigner.request(added, true).catch((err: unknown) => {
        this.#log.error({ err: describeError(err) }, 'extip: cluster IPs not assigned');
      });
    }
  }

  #fenceCall(op: 'follow' | 'block' | 'forget', ip: ParsedIp): void {
    try {
      this.#fence[op](ip);
    } catch (err) {
      this.#log.error({ err: describeError(err), ip: ip.address, op }, 'extip: cluster fence');
    }
  }

  // --- what the kernel says ---------------------------------------------------------------

  /** An address event on the cluster holder. */
  onAddress(kind: 'new' | 'del', a: Address): void {
    const o = observe(a);
    if (o !== undefined) this.#assigner?.onAddress(kind, o);
  }

  /** A link event: the cluster holder deleted (recreated), the external interface moved. */
  onLink(kind: 'new' | 'del', l: Link, extIfindex: number): void {
    const h = this.#holder;
    if (h !== undefined && kind === 'del' && l.index === h.ifindex && h.ifindex !== 0) {
      this.#log.warn({ holder: h.name }, 'extip: the cluster holder was deleted; recreating');
      h.lost();
      this.#assigner?.holderLost();
      void this.#recreate();
    }
    this.externalAt(extIfindex);
  }

  /** The external interface's ifindex now: the fence follows it (a recreated interface). */
  externalAt(ifindex: number): void {
    if (this.#fenceError !== undefined || ifindex === 0 || this.#fence.ifindex === ifindex) return;
    try {
      this.#fence.attach(ifindex);
    } catch (err) {
      this.#log.error({ err: describeError(err) }, 'extip: cannot attach the cluster fence');
    }
  }

  #recreate(): Promise<void> {
    this.#recreating ??= (async () => {
      try {
        if (this.#stopped) return;
        await this.#holder!.open();
        this.#holderError = undefined;
        this.#p.metrics.repaired('holder');
        this.#assigner?.holderBack();
      } catch (err) {
        this.#holderError = describeError(err);
        this.#log.error({ err: this.#holderError }, 'extip: cannot recreate the cluster holder');
      }
    })().finally(() => {
      this.#recreating = undefined;
    });
    return this.#recreating;
  }

  /** The periodic check: the holder's addresses from a dump requested at `since`. */
  reconcile(addrs: readonly Address[], since: number): void {
    const h = this.#holder;
    if (h === undefined || this.#assigner === undefined) return;
    if (h.ifindex === 0) {
      void this.#recreate();
      return;
    }
    const mine: ObservedAddress[] = [];
    for (const a of addrs) {
      if (a.index !== h.ifindex) continue;
      const o = observe(a);
      if (o !== undefined) mine.push(o);
    }
    this.#assigner.reconcile(mine, since);
  }

  /** The epoch to pass to reconcile() with a dump requested after reading it. */
  epoch(): number {
    return this.#assigner?.epoch() ?? 0;
  }

  list(): ExternalIpStatus[] {
    return (this.#assigner?.list() ?? []).map((s) => ({ ...s, cluster: true }));
  }

  counts(): { assigned: number; failed: number; pending: number } {
    return this.#assigner?.counts() ?? { assigned: 0, failed: 0, pending: 0 };
  }

  /** What needs an operator here. */
  problems(): string[] {
    const out: string[] = [];
    if (this.#fenceError !== undefined) out.push(`extip: cluster fence: ${this.#fenceError}`);
    if (this.#holderError !== undefined) out.push(`extip: cluster holder: ${this.#holderError}`);
    for (const r of this.refused()) {
      out.push(`extip: cluster IP ${r.ip} is owned by this node but not held: ${r.reason}`);
    }
    return out;
  }

  /** Ends the assigner; closing the holder deletes it with its addresses. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#assigner?.stop();
    this.#holder?.close();
    this.#fence.close();
  }
}

function parse(ip: string): ParsedIp {
  return parseIp(ip);
}

/** Until the fence is attached (or when the kernel refused it): nothing to do. */
function noFence(): FenceOps & { close(): void; attach(ifindex: number): void; ifindex: number } {
  return {
    ifindex: 0,
    setDeadline: () => undefined,
    follow: () => undefined,
    block: () => undefined,
    forget: () => undefined,
    drops: () => ({ ingress: 0, egress: 0 }),
    close: () => undefined,
    attach: () => undefined,
  };
}
