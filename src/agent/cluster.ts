// Cluster mode in the agent (docs/cluster.md): the cluster member, its etcd connection and
// the desired set's administration, wired to the external-IP subsystem (hold sets in, the
// fencing gate out) and to the neighbor subsystem (the other members' node IPs, owner
// `cluster`). Start publishes the empty hold set first and joins the cluster in the
// background; stop drops every cluster IP, then hands ownership over.
import type { Registry } from 'prom-client';
import {
  ClusterAdmin,
  ClusterMember,
  EtcdStore,
  UdpPeerTransport,
  registerClusterMetrics,
  type ClusterStatus,
  type Eligibility,
  type HoldSet,
} from '../cluster/index.js';
import { CLUSTER_OWNER, type FibkeeperConfig } from '../config/index.js';
import { clusterSettings } from './cluster-settings.js';
import { describeError } from '../errors/index.js';
import { removeHolderAddresses } from '../extip/index.js';
import type { Logger } from '../log/index.js';
import { backoff, monotonicClock, sleep, Timer, type Clock } from '../sched/index.js';
import type { NeighborSubsystem } from '../neighbor/index.js';
import type { DeviceFeed, NetlinkHandle } from '../netlink/index.js';

export interface AgentClusterParams {
  cfg: FibkeeperConfig;
  registry: Registry;
  log: Logger;
  /** Applies a hold set (the external-IP subsystem's setClusterIps). */
  hold: (ips: readonly string[]) => Promise<void>;
  /** Every hold set's deadline, synchronously (the kernel fence: setClusterDeadline). */
  deadline: (untilMs: number) => void;
  /** The other members' node IPs changed. */
  peers: (ips: readonly string[]) => void;
  /** Duplicate address detection on the external interface (ExternalIpSubsystem.probe). */
  probe?: (ip: string) => Promise<void>;
  /** Active-active IPs whose routes are to be withdrawn now (they stay held a moment). */
  withdraw?: (ips: readonly string[]) => void;
  /** Told of every hold set (events: IPs taken and given up, fences, moves). */
  onHoldSet?: (set: HoldSet, status: () => ClusterStatus) => void;
  /** Times the wait for the peers and the seeding retries; default the monotonic clock. */
  clock?: Clock;
}

/** How long the neighbor subsystem's first prune waits for the cluster's node IPs. */
const PEERS_WAIT_MS = 5000;

export class AgentCluster {
  readonly member: ClusterMember;
  readonly admin: ClusterAdmin;
  readonly #store: EtcdStore;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #startedAt: number;
  #seeded: readonly string[] = [];
  #lastIps: readonly string[] = [];

  constructor(p: AgentClusterParams) {
    const { options, store } = clusterSettings(p.cfg.cluster, {
      nodeIP: p.cfg.extip.nodeIP,
      bgp: p.cfg.bgp.enabled,
    });
    this.#log = p.log;
    this.#clock = p.clock ?? monotonicClock;
    this.#startedAt = this.#clock.now();
    this.#store = new EtcdStore({ ...store, clock: this.#clock });
    this.admin = new ClusterAdmin(this.#store, options.prefix);
    const hbIp = options.nodeIPs[0];
    if (hbIp === undefined) {
      p.log.warn(
        'cluster: no node IP (cluster.nodeIPs, extip.nodeIP): no peer heartbeat; a dead or silent peer is seen only when its lease expires',
      );
    }
    const netns = p.cfg.netns || undefined;
    this.member = new ClusterMember({
      store: this.#store,
      clock: this.#clock,
      options,
      log: p.log,
      metrics: registerClusterMetrics(p.registry),
      // every set in the log, as computed: the applying listener skips sets while it waits
      // for a removal, and the log is the record of what this node held when
      onSet: (set) => {
        p.deadline(set.deadline);
        this.#logHold(set);
        p.onHoldSet?.(set, () => this.member.status());
      },
      onHold: (set) => p.hold(set.ips),
      onPeers: p.peers,
      ...(p.withdraw ? { onWithdraw: p.withdraw } : {}),
      ...(hbIp === undefined
        ? {}
        : {
            peers: new UdpPeerTransport({
              local: { ip: hbIp, port: p.cfg.cluster.heartbeatPort },
              ...(netns ? { netns } : {}),
              log: (msg, err) => p.log.debug({ err: err && describeError(err) }, msg),
            }),
          }),
      ...(p.probe ? { probe: p.probe } : {}),
    });
  }

  /**
   * Publishes the empty hold set and waits until it is applied, then joins in the
   * background and seeds cluster.static. `peersLoaded` is called once the member has read
   * the cluster (or after PEERS_WAIT_MS: etcd may be down).
   */
  async start(seed: readonly string[], peersLoaded?: () => void): Promise<void> {
    await this.member.start();
    if (peersLoaded) {
      const t = new Timer(this.#clock, { unref: true });
      t.start(PEERS_WAIT_MS, peersLoaded);
      void this.member.ready().then(() => {
        t.cancel();
        peersLoaded();
      });
    }
    this.reseed(seed);
  }

  /** Adds cluster.static's IPs that etcd lacks, retrying until etcd answers. */
  reseed(seed: readonly string[]): void {
    this.#seeded = seed;
    if (seed.length === 0) return;
    const attempt = (failures: number): void => {
      if (this.#seeded !== seed) return; // a reload replaced it
      this.admin.seed(seed).then(
        (added) => {
          if (added.length > 0) this.#log.info({ added }, 'cluster: seeded cluster.static');
        },
        (err: unknown) => {
          this.#log.debug({ err: describeError(err) }, 'cluster: seeding failed; retrying');
          const retry = backoff(100, 5000, failures + 1);
          void sleep(this.#clock, retry, { unref: true }).then(() => attempt(failures + 1));
        },
      );
    };
    attempt(0);
  }

  /** Drops every cluster IP (applied), then revokes the lease (handover). Never throws. */
  async stop(): Promise<void> {
    await this.member.stop();
    this.#store.close();
  }

  /** The desired cluster IPs (as last read) and cluster.static. */
  clusterIps(): ReadonlySet<string> {
    return new Set([...this.member.desiredIps(), ...this.#seeded]);
  }

  add(ips: readonly string[], eligible: Eligibility): Promise<string[]> {
    return Promise.all(ips.map((ip) => this.admin.add(ip, eligible)));
  }

  async del(ips: readonly string[]): Promise<string[]> {
    const gone: string[] = [];
    for (const ip of ips) if (await this.admin.del(ip)) gone.push(ip);
    return gone;
  }

  status(): ClusterStatus {
    return this.member.status();
  }

  /** Drains `node` (cordon), or lets it hold IPs again (uncordon). */
  drain(node: string): Promise<boolean> {
    return this.admin.cordon(node);
  }

  uncordon(node: string): Promise<boolean> {
    return this.admin.uncordon(node);
  }

  /** For /readyz: registered, the cluster read, and the lease provably valid now. */
  ready(): string[] {
    const s = this.member.status();
    if (!s.ready) return ['cluster: not yet a registered member'];
    if ((s.lease.holdForMs ?? 0) <= 0) {
      return [
        'cluster: the lease cannot be proven valid (etcd unreachable?); no cluster IP is held',
      ];
    }
    return [];
  }

  /** For /healthz: a member that has not been registered for a while needs a look. */
  health(): string[] {
    const s = this.member.status();
    if (s.ready || this.#clock.now() - this.#startedAt < 10_000) return [];
    return [
      `cluster: node ${s.node} is not a registered member with a live lease (etcd unreachable, or another agent uses the name?); it holds no cluster IPs`,
    ];
  }

  /** One line per hold set: info when its IPs change, debug for deadline extensions. */
  #logHold(set: HoldSet): void {
    const changed =
      set.ips.length !== this.#lastIps.length || set.ips.some((ip, i) => ip !== this.#lastIps[i]);
    const fields = {
      ips: set.ips,
      reason: set.reason,
      at: set.at,
      deadline: Number.isFinite(set.deadline) ? set.deadline : null,
    };
    if (changed) this.#log.info(fields, 'cluster hold set');
    else this.#log.debug(fields, 'cluster hold set');
    this.#lastIps = set.ips;
  }
}

/**
 * Cluster mode, the first kernel change at start: every address on the holder that is not
 * in `keep` (the node-local external IPs: extip.static, the state file) goes — cluster IPs
 * held by an earlier run, which another node may own by now. Nothing announced them since.
 */
export async function dropLeftovers(
  nl: NetlinkHandle,
  devices: DeviceFeed,
  holderName: string,
  keep: ReadonlySet<string>,
  log: Logger,
): Promise<void> {
  const removed = await removeHolderAddresses(nl, devices, holderName, keep);
  if (removed.length > 0) {
    log.info(
      { removed },
      'cluster: removed the cluster IPs of an earlier run from the holder before anything else',
    );
  }
}

/** The other members' node IPs, forwardable under owner `cluster` (those this node takes). */
export function setPeers(
  n: NeighborSubsystem | undefined,
  ips: readonly string[],
  log: Logger,
): void {
  if (!n) return;
  const ok: string[] = [];
  for (const ip of ips) {
    try {
      ok.push(...n.check([ip]));
    } catch (err) {
      log.warn({ ip, err: describeError(err) }, 'cluster: a peer node IP is not forwardable here');
    }
  }
  n.setOwner(CLUSTER_OWNER, ok);
}
