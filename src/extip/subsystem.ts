// ExternalIpSubsystem: the facade the agent wires. Its parts are listed and built in
// wiring.ts; here are the requests (validated against the node's addresses), the cluster
// calls and health. start()/stop() are idempotent; stop() leaves the addresses.
import type { EventSink } from '../events/index.js';
import type { Registry } from 'prom-client';
import { ClosedError, describeError } from '../errors/index.js';
import { parseIp, type IpArg, type ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import { noopExtipMetrics, registerExtipMetrics, type ExtipMetrics } from './metrics.js';
import type { DeviceFeed, NetlinkHandle } from '../netlink/index.js';
import { systemClock, type Clock } from '../sched/index.js';
import type { Assigner } from './assigner.js';
import { ClusterIps, type ClusterGate } from './cluster.js';
import { NodeAddresses } from './node-addresses.js';
import type { FrameSocket } from './linkio.js';
import { resolveOptions, type ExternalIpConfig } from './options.js';
import type { ExternalIpStatus } from './types.js';
import { unwireExtip, wireExtip, type ExtipParts } from './wiring.js';
import { validateExternalIps } from './validate.js';
import type { PacketSocketOptions } from '../native/index.js';

export interface ExternalIpParams {
  /** Network namespace to manage (name under /run/netns or a path); default the caller's. */
  netns?: string;
  /** A handle to share (not closed by stop()); default: one of its own in `netns`. */
  netlink?: NetlinkHandle;
  /**
   * The namespace's links and addresses, shared (started by its owner, not stopped by
   * stop()); default: a feed of its own on the handle.
   */
  devices?: DeviceFeed;
  /** extip.* options; see defaultOptions() for what is not given. */
  config: Partial<ExternalIpConfig>;
  /** Where the fibkeeper_extip_* metrics go; none when absent. */
  registry?: Registry;
  log: Logger;
  clock?: Clock;
  /** Tests: opens the packet sockets. */
  openSocket?: (o: PacketSocketOptions) => FrameSocket;
  /** The packet sockets were replaced after `cause`, or could not be (`err`). */
  onSocketReopen?: (cause: string, err?: unknown) => void;
  /** Where assignments, removals, refusals and claims by other hosts are reported. */
  events?: EventSink;
  /**
   * Cluster mode: cluster IPs come through setClusterIps() and are spoken for only while the
   * gate allows; the external interface's arp_ignore/arp_announce are set and kept.
   */
  cluster?: ClusterGate;
  /** The external interface gained or lost its link (up with a carrier), or was deleted. */
  onExternalUp?: (up: boolean) => void;
}

/** Same shape as the metrics server's HealthReport. */
export interface ExtipHealth {
  ok: boolean;
  reasons: string[];
}

export class ExternalIpSubsystem {
  readonly #p: ExternalIpParams;
  readonly #cfg: ExternalIpConfig;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #metrics: ExtipMetrics;
  /** The parts (wiring.ts), filled in as start() makes them. */
  readonly #parts: Partial<ExtipParts> = {};
  readonly #cluster: ClusterIps | undefined;
  /** Node-local external IPs wanted (extip add, setDesired), canonical. */
  readonly #local = new Set<string>();
  /** The node's addresses on devices other than the holder. */
  readonly #node = new NodeAddresses();
  #starting: Promise<void> | undefined;
  #started = false;
  #stopped = false;

  constructor(p: ExternalIpParams) {
    this.#p = p;
    this.#cfg = resolveOptions(p.config);
    this.#log = p.log;
    this.#clock = p.clock ?? systemClock;
    this.#metrics = p.registry ? registerExtipMetrics(p.registry) : noopExtipMetrics();
    this.#cluster =
      p.cluster &&
      new ClusterIps({
        gate: p.cluster,
        log: this.#log,
        clock: this.#clock,
        metrics: this.#metrics,
      });
  }

  /** The resolved options. */
  get config(): Readonly<ExternalIpConfig> {
    return this.#cfg;
  }

  /** The holder device (name always; ifindex 0 until started or while recreated). */
  get holder(): { name: string; ifindex: number } {
    return { name: this.#cfg.holderName, ifindex: this.#parts.holder?.ifindex ?? 0 };
  }

  /** The external interface, once started; `up`: up with a carrier, frames can leave. */
  get externalInterface(): { name: string; ifindex: number; mac: string; up: boolean } | undefined {
    const e = this.#parts.ext?.link;
    return (
      e && { name: e.name, ifindex: e.ifindex, mac: e.mac, up: this.#parts.ext!.present && e.up }
    );
  }

  // --- lifecycle --------------------------------------------------------------------------

  /**
   * Creates or adopts the holder, finds the external interface, loads the addresses already
   * on the holder (adopted, announced, never flushed) and starts listening. Idempotent.
   */
  start(): Promise<void> {
    if (this.#stopped) return Promise.reject(new ClosedError('extip: stopped'));
    this.#starting ??= this.#start().catch(async (err: unknown) => {
      await this.stop();
      throw err;
    });
    return this.#starting;
  }

  async #start(): Promise<void> {
    const p = this.#p;
    await wireExtip(
      {
        cfg: this.#cfg,
        netns: p.netns,
        ...(p.netlink ? { netlink: p.netlink } : {}),
        ...(p.devices ? { devices: p.devices } : {}),
        node: this.#node,
        metrics: this.#metrics,
        log: this.#log,
        clock: this.#clock,
        ...(p.events ? { events: p.events } : {}),
        cluster: this.#cluster,
        owns: (ip) => this.#owns(ip),
        ...(p.openSocket ? { openSocket: p.openSocket } : {}),
        ...(p.onSocketReopen ? { onSocketReopen: p.onSocketReopen } : {}),
        ...(p.onExternalUp ? { onExternalUp: p.onExternalUp } : {}),
        checkStopped: () => this.#throwIfStopped(),
      },
      this.#parts,
    );
    this.#started = true;
    const info = { holder: this.#cfg.holderName, interface: this.#parts.ext!.link.name };
    this.#log.info({ ...info, adopted: this.#parts.assigner!.list().length }, 'extip: started');
  }

  /**
   * Duplicate address detection on the external interface, as for a node-local IP, without
   * assigning anything: resolves when no other host answers for `ip`, rejects with
   * DuplicateAddressError (naming the MAC) when one does. Cluster mode runs it before a node
   * takes an IP whose previous holder no lease proves to have been a fibkeeper node.
   */
  async probe(ip: string): Promise<void> {
    await this.#ready();
    return this.#parts.ext!.dad.probe(parseIp(ip));
  }

  /** Stops timers, listeners and subscriptions, in reverse order. Addresses stay. Idempotent. */
  async stop(): Promise<void> {
    const first = !this.#stopped;
    this.#stopped = true;
    // Runs again when a start() that was under way fails: it closes what start() opened late.
    const shared = {
      netlink: this.#p.netlink !== undefined,
      devices: this.#p.devices !== undefined,
    };
    await unwireExtip(this.#parts, shared, this.#cluster);
    if (first) this.#log.info('extip: stopped');
  }

  #throwIfStopped(): void {
    if (this.#stopped) throw new ClosedError('extip: stopped during start-up');
  }

  // --- requests ---------------------------------------------------------------------------

  /**
   * Assigns external IPs: validates every one first (InvalidArgumentError naming the bad IP,
   * nothing changed), probes for each (DuplicateAddressError: another host holds it), adds it
   * to the holder and sends its first announcement. Already assigned = success. Concurrent
   * calls end as in their serial order by call time.
   */
  async assign(ips: readonly IpArg[]): Promise<void> {
    const a = await this.#ready();
    const valid = this.#validate(ips, 'assign');
    for (const ip of valid) this.#local.add(ip.address);
    return a.request(valid, true);
  }

  /** Unassigns external IPs (validated first, like assign). Not assigned = success. */
  async unassign(ips: readonly IpArg[]): Promise<void> {
    const a = await this.#ready();
    const valid = this.#validate(ips, 'unassign');
    for (const ip of valid) this.#local.delete(ip.address);
    return a.request(valid, false);
  }

  /**
   * The full desired set (config load or reload): assigns these, removes every other address
   * from the holder, adopted ones included. Removal happens only from this call on.
   */
  async setDesired(ips: readonly string[]): Promise<void> {
    const a = await this.#ready();
    const valid = this.#validate(ips, 'setDesired');
    this.#local.clear();
    for (const ip of valid) this.#local.add(ip.address);
    return a.setDesired(valid);
  }

  /**
   * Cluster mode: the IPs this node may hold now (the cluster component's hold set), on the
   * cluster holder. Removes those that left the set (fenced at once) and resolves once they
   * are off the holder and nothing announces or answers for them; then adds the new ones in
   * the background. IPs that are node-local here, or that this node cannot hold (one of its
   * own addresses, IPv6 without IPv6 on the interface), are refused and reported in health().
   */
  async setClusterIps(ips: readonly string[]): Promise<void> {
    const c = this.#cluster;
    if (c === undefined) throw new ClosedError('extip: not in cluster mode');
    await this.#ready();
    await c.apply(ips, (ip) => this.#clusterProblem(ip));
  }

  /**
   * Cluster mode: the hold set's deadline (monotonic ms; −∞: nothing may be held). The kernel
   * fence answers for the cluster IPs until then and drops everything after it. Synchronous,
   * with every hold set (the deadline moves with every lease renewal).
   */
  setClusterDeadline(untilMs: number): void {
    this.#cluster?.setDeadline(untilMs);
  }

  /** Cluster mode: the fence's drop counts (packets to/from fenced cluster IPs). */
  clusterFenceDrops(): { ingress: number; egress: number } | undefined {
    return this.#cluster?.fenceDrops();
  }

  #clusterProblem(ip: string): string | undefined {
    if (this.#local.has(ip))
      return 'it is a node-local external IP here (extip add / extip.static)';
    try {
      this.#validate([ip], 'hold');
      return undefined;
    } catch (err) {
      return describeError(err);
    }
  }

  /**
   * Checks IPs as assign() does, assigning nothing; returns them canonical. After start().
   * `forCluster`: as a cluster IP (one this node holds now is fine).
   */
  validate(ips: readonly IpArg[], opts: { forCluster?: boolean } = {}): string[] {
    if (this.#parts.ext === undefined)
      throw new ClosedError('extip: the external-IP subsystem is not started');
    const verb = opts.forCluster ? 'cluster extip add' : 'assign';
    return this.#validate(ips, verb).map((ip) => ip.address);
  }

  /** A copy of the external IPs with their state, sorted by IP text. */
  list(): ExternalIpStatus[] {
    const out = [
      ...(this.#parts.assigner?.list() ?? []).map((s) => ({ ...s, cluster: false })),
      ...(this.#cluster?.list() ?? []),
    ];
    return out.sort((x, y) => (x.ip < y.ip ? -1 : x.ip > y.ip ? 1 : 0));
  }

  async #ready(): Promise<Assigner> {
    if (this.#stopped) throw new ClosedError('extip: the external-IP subsystem is stopped');
    if (this.#starting === undefined) {
      throw new ClosedError('extip: the external-IP subsystem is not started');
    }
    await this.#starting;
    return this.#parts.assigner!;
  }

  #validate(ips: readonly IpArg[], verb: string): ParsedIp[] {
    const ext = this.#parts.ext!;
    const valid = validateExternalIps(ips, verb, {
      nodeAddresses: this.#node.byIp,
      ipv6: ext.ipv6,
      interfaceName: ext.link.name,
    });
    if (verb === 'assign' || verb === 'setDesired') {
      for (const ip of valid) this.#cluster?.checkLocal(ip.address);
    }
    return valid;
  }

  /** Assigned, and (a cluster IP) held with a valid lease right now: answer and defend it. */
  #owns(ip: string): boolean {
    if (this.#parts.assigner?.isAssigned(ip) === true) return this.#cluster?.mayAnswer(ip) ?? true;
    const c = this.#cluster;
    return c !== undefined && c.isAssigned(ip) && c.mayAnswer(ip);
  }

  /**
   * Compares the kernel with what the subsystem believes (periodic, or after lost events):
   * holder present and up, its addresses, the node's addresses, the external interface.
   */
  check(): Promise<void> {
    return this.#parts.sync!.check('periodic');
  }

  // --- status -----------------------------------------------------------------------------

  /** Ready: started, the holder exists, the external interface is known. */
  ready(): ExtipHealth {
    const reasons: string[] = [];
    if (!this.#started) reasons.push('extip: not started');
    else {
      if ((this.#parts.holder?.ifindex ?? 0) === 0)
        reasons.push(`extip: holder ${this.#cfg.holderName} missing`);
      if (this.#parts.ext?.present !== true) reasons.push('extip: external interface missing');
    }
    return { ok: reasons.length === 0, reasons };
  }

  /** Alive: the packet sockets are open while the external interface is there (/livez). */
  liveness(): ExtipHealth {
    const why = this.#parts.ext?.socketError;
    return why === undefined
      ? { ok: true, reasons: [] }
      : { ok: false, reasons: [`extip: ${why}`] };
  }

  /** Healthy: ready, the external interface is up, no IP failed, listeners work. */
  health(): ExtipHealth {
    const r = this.ready();
    if (!this.#started) return r;
    const reasons = [...r.reasons];
    const holderError = this.#parts.repair?.error;
    if (holderError !== undefined) reasons.push(`extip: holder: ${holderError}`);
    const ext = this.#parts.ext!;
    const down = `extip: external interface ${ext.link.name} is down; nothing can go out`;
    if (ext.present && !ext.link.up) reasons.push(down);
    if (ext.lastError !== undefined) reasons.push(`extip: ${ext.lastError}`);
    const failed = this.#parts.assigner!.counts().failed + (this.#cluster?.counts().failed ?? 0);
    if (failed > 0) reasons.push(`extip: ${failed} external IP(s) failed (see list)`);
    reasons.push(...(this.#cluster?.problems() ?? []));
    return { ok: reasons.length === 0, reasons };
  }
}
