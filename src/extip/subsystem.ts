// ExternalIpSubsystem: the component the agent wires. It owns the holder device, the
// assigner, the announcer and the external interface's sockets and probes; it follows link
// and address events (from the device feed), repairs what others change, and runs the
// periodic check. start()/stop() are idempotent; stop() leaves the addresses.
import type { EventSink } from '../events/index.js';
import type { Registry } from 'prom-client';
import { ClosedError, describeError, errnoCode } from '../errors/index.js';
import { parseIp, type IpArg, type ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import { noopExtipMetrics, registerExtipMetrics, type ExtipMetrics } from './metrics.js';
import {
  DeviceFeed,
  IFF_UP,
  NetlinkHandle,
  type Address,
  type Link,
  type RtEvent,
} from '../netlink/index.js';
import { backoff, systemClock, type Clock, type TimerHandle } from '../sched/index.js';
import { Announcer } from './announcer.js';
import { Assigner } from './assigner.js';
import { ClusterIps, type ClusterGate } from './cluster.js';
import { NodeAddresses } from './node-addresses.js';
import { ConflictLog } from './conflict-log.js';
import { ExternalWatch } from './external-watch.js';
import { Holder, observe } from './holder.js';
import type { FrameSocket } from './linkio.js';
import { resolveOptions, type ExternalIpConfig } from './options.js';
import type { ExternalIpStatus, ObservedAddress } from './types.js';
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
  #nl: NetlinkHandle | undefined;
  #feed: DeviceFeed | undefined;
  #unlisten: (() => void) | undefined;
  #holder: Holder | undefined;
  #announcer: Announcer | undefined;
  #assigner: Assigner | undefined;
  #ext: ExternalWatch | undefined;
  #conflictLog: ConflictLog | undefined;
  readonly #cluster: ClusterIps | undefined;
  /** Node-local external IPs wanted (extip add, setDesired), canonical. */
  readonly #local = new Set<string>();
  /** Events that arrive before the first dump is applied, replayed after it. */
  #queued: RtEvent[] | undefined;
  /** The node's addresses on devices other than the holder. */
  readonly #node = new NodeAddresses();
  #starting: Promise<void> | undefined;
  #started = false;
  #stopped = false;
  #checkTimer: TimerHandle | undefined;
  #checking: Promise<void> | undefined;
  #recreating: Promise<void> | undefined;
  /** A set-up of the holder under way (#setHolderUp), and whether to look again after it. */
  #settingUp: Promise<void> | undefined;
  #setUpAgain = false;
  #holderError: string | undefined;
  readonly #sleepers = new Set<() => void>();
  /** Notifications were lost before the first dump was applied: check once started. */
  #overflowAtStart = false;
  /** The feed's subscription overflowed; its next dump answers it. */
  #lost = false;

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
    return { name: this.#cfg.holderName, ifindex: this.#holder?.ifindex ?? 0 };
  }

  /** The external interface, once started; `up`: up with a carrier, frames can leave. */
  get externalInterface(): { name: string; ifindex: number; mac: string; up: boolean } | undefined {
    const e = this.#ext?.link;
    return e && { name: e.name, ifindex: e.ifindex, mac: e.mac, up: this.#ext!.present && e.up };
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
    const cfg = this.#cfg;
    const nl = (this.#nl = this.#p.netlink ?? NetlinkHandle.open({ netns: this.#p.netns }));
    this.#queued = [];
    const feed = (this.#feed =
      this.#p.devices ?? new DeviceFeed({ nl, log: this.#log, clock: this.#clock }));
    this.#unlisten = feed.listen({
      resyncing: (reason) => {
        if (reason === 'overflow') this.#lost = true;
      },
      loaded: () => this.#onLoaded(),
      link: (kind, msg) => this.#onEvent({ kind, object: 'link', msg }),
      address: (kind, msg) => this.#onEvent({ kind, object: 'address', msg }),
    });
    await feed.start();
    this.#throwIfStopped();
    const holder = (this.#holder = new Holder({
      nl,
      devices: feed,
      name: cfg.holderName,
      kind: cfg.holderKind,
      // the holder sees no segment: DAD there proves nothing (ours runs on the interface)
      nodad: true,
      log: this.#log,
      onMissing: () => void this.#recreateHolder(),
    }));
    await holder.ensure();
    this.#throwIfStopped();
    this.#ext = await this.#openExternal(feed);
    this.#throwIfStopped();
    this.#announcer = new Announcer({
      count: cfg.announceCount,
      intervalMs: cfg.announceInterval,
      refreshIntervalMs: cfg.refreshInterval,
      defendIntervalMs: cfg.defendInterval,
      defendRatePerSecond: cfg.defendRate,
      sink: this.#ext,
      clock: this.#clock,
      log: this.#log,
      metrics: this.#metrics,
      ...(this.#cluster ? { allowed: (ip: string) => this.#cluster!.mayAnswer(ip) } : {}),
    });
    this.#assigner = new Assigner({
      ops: holder,
      announcer: this.#announcer,
      clock: this.#clock,
      log: this.#log,
      metrics: this.#metrics,
      ...(cfg.dad ? { dad: (ip: ParsedIp) => this.#ext!.dad.probe(ip) } : {}),
      ...(this.#p.events ? { events: this.#p.events } : {}),
    });
    await this.#cluster?.start({
      nl,
      netns: this.#p.netns,
      announcer: this.#announcer,
      extIfindex: this.#ext.link.ifindex,
    });
    this.#throwIfStopped();
    this.#loadAll(feed);
    const queued = this.#queued;
    this.#queued = undefined;
    for (const ev of queued) this.#onEvent(ev);
    this.#scheduleCheck();
    this.#started = true;
    // lost notifications may be newer than the first dump: compare once more
    if (this.#overflowAtStart) void this.#check('overflow');
    const info = { holder: cfg.holderName, interface: this.#ext.link.name };
    this.#log.info({ ...info, adopted: this.#assigner.list().length }, 'extip: started');
  }

  /** The external interface's watch; what its listeners see goes to the announcer and log. */
  #openExternal(devices: DeviceFeed): Promise<ExternalWatch> {
    const cfg = this.#cfg;
    const conflictLog = (this.#conflictLog = new ConflictLog({
      log: this.#log,
      clock: this.#clock,
      intervalMs: Math.max(1000, cfg.defendInterval),
      ...(this.#p.events ? { events: this.#p.events } : {}),
    }));
    return ExternalWatch.open({
      devices,
      netns: this.#p.netns,
      cfg,
      log: this.#log,
      metrics: this.#metrics,
      clock: this.#clock,
      owns: (ip) => this.#owns(ip),
      onConflict: (c) => {
        this.#metrics.conflict(c.family === 4 ? 'ipv4' : 'ipv6');
        conflictLog.record(c, this.#announcer?.defend(c.ip) === true);
      },
      onLinkChange: () => {
        this.#announcer?.burstAll('link');
        this.#assigner?.retryFailed(); // probes can go out again
      },
      ...(this.#p.onExternalUp ? { onUpChange: this.#p.onExternalUp } : {}),
      openSocket: this.#p.openSocket,
      onSocketReopen: this.#p.onSocketReopen,
      clusterMode: this.#cluster !== undefined,
    });
  }

  /**
   * Duplicate address detection on the external interface, as for a node-local IP, without
   * assigning anything: resolves when no other host answers for `ip`, rejects with
   * DuplicateAddressError (naming the MAC) when one does. Cluster mode runs it before a node
   * takes an IP whose previous holder no lease proves to have been a fibkeeper node.
   */
  async probe(ip: string): Promise<void> {
    await this.#ready();
    return this.#ext!.dad.probe(parseIp(ip));
  }

  /** The feed's view at start: links, node addresses, the holder's addresses (adopted). */
  #loadAll(feed: DeviceFeed): void {
    this.#node.resetLinks(feed.links());
    this.#assigner!.adopt(this.#takeAddresses(feed.addresses()));
  }

  /** Records the node's addresses from a dump; returns the holder's (external IPs). */
  #takeAddresses(addrs: readonly Address[]): ObservedAddress[] {
    const onHolder: ObservedAddress[] = [];
    const cluster = this.#cluster?.holderIfindex ?? 0;
    for (const a of addrs) {
      if (cluster !== 0 && a.index === cluster) continue; // the cluster holder's: not the node's
      const o = a.index === this.#holder!.ifindex ? observe(a) : undefined;
      if (o !== undefined) onHolder.push(o);
      else if (a.index !== this.#holder!.ifindex) this.#node.address('new', a);
    }
    return onHolder;
  }

  /** Stops timers, listeners and subscriptions, in reverse order. Addresses stay. Idempotent. */
  async stop(): Promise<void> {
    const first = !this.#stopped;
    this.#stopped = true;
    // Runs again when a start() that was under way fails: it closes what start() opened late.
    if (this.#checkTimer !== undefined) this.#clock.clearTimeout(this.#checkTimer);
    this.#checkTimer = undefined;
    for (const wake of [...this.#sleepers]) wake();
    this.#assigner?.stop();
    this.#cluster?.stop();
    this.#announcer?.stop();
    this.#conflictLog?.stop();
    this.#ext?.close();
    this.#unlisten?.();
    if (this.#p.devices === undefined) this.#feed?.stop();
    if (this.#p.netlink === undefined) this.#nl?.close();
    await Promise.allSettled([this.#checking, this.#recreating, this.#settingUp]);
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
    if (this.#ext === undefined)
      throw new ClosedError('extip: the external-IP subsystem is not started');
    const verb = opts.forCluster ? 'cluster extip add' : 'assign';
    return this.#validate(ips, verb).map((ip) => ip.address);
  }

  /** A copy of the external IPs with their state, sorted by IP text. */
  list(): ExternalIpStatus[] {
    const out = [
      ...(this.#assigner?.list() ?? []).map((s) => ({ ...s, cluster: false })),
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
    return this.#assigner!;
  }

  #validate(ips: readonly IpArg[], verb: string): ParsedIp[] {
    const ext = this.#ext!;
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
    if (this.#assigner?.isAssigned(ip) === true) return this.#cluster?.mayAnswer(ip) ?? true;
    const c = this.#cluster;
    return c !== undefined && c.isAssigned(ip) && c.mayAnswer(ip);
  }

  // --- events -----------------------------------------------------------------------------

  /** The feed loaded a dump: if it answered lost notifications, compare once more. */
  #onLoaded(): void {
    if (this.#stopped || !this.#lost) return;
    this.#lost = false;
    if (this.#queued !== undefined) {
      this.#overflowAtStart = true;
      return;
    }
    this.#log.warn('extip: netlink notifications lost; resynchronizing');
    void this.#check('overflow');
  }

  #onEvent(ev: RtEvent): void {
    if (this.#stopped) return;
    if (this.#queued !== undefined) {
      this.#queued.push(ev);
      return;
    }
    if (ev.object === 'link') this.#onLink(ev.kind, ev.msg);
    else if (ev.object === 'address') this.#onAddress(ev.kind, ev.msg);
  }

  #onLink(kind: 'new' | 'del', l: Link): void {
    this.#node.link(kind, l);
    const holder = this.#holder!;
    if (l.index === holder.ifindex) {
      if (kind === 'del') this.#holderDeleted();
      else if ((l.flags & IFF_UP) === 0) {
        void this.#setHolderUp(l.index);
      }
    } else if (kind === 'new' && l.name === holder.name && holder.ifindex === 0) {
      void this.#recreateHolder(); // someone else created it meanwhile: adopt it
    }
    this.#ext!.onLink(kind, l);
    this.#cluster?.onLink(kind, l, this.#ext!.present ? this.#ext!.link.ifindex : 0);
  }

  #onAddress(kind: 'new' | 'del', a: Address): void {
    const c = this.#cluster;
    if (c !== undefined && a.index === c.holderIfindex && a.index !== 0) {
      c.onAddress(kind, a);
      return;
    }
    if (a.index === this.#holder!.ifindex && a.index !== 0) {
      const o = observe(a);
      if (o !== undefined) this.#assigner!.onAddress(kind, o);
      return;
    }
    this.#node.address(kind, a);
  }

  // --- repair -----------------------------------------------------------------------------

  /**
   * Sets the holder up again, one repair at a time: several events can say it is down (a
   * batch of changes, a feed's replay of an older event after a dump), so the kernel is asked
   * first, and a repair is made and counted only while the holder really is down. An event
   * that comes while one runs makes it look once more when it ends.
   */
  #setHolderUp(index: number): Promise<void> {
    if (this.#settingUp !== undefined) {
      this.#setUpAgain = true;
      return this.#settingUp;
    }
    this.#settingUp = (async () => {
      do {
        this.#setUpAgain = false;
        try {
          const now = await this.#nl!.linkGet(index);
          if ((now.flags & IFF_UP) !== 0) continue;
          this.#log.warn(
            { holder: this.#holder!.name },
            'extip: the holder device was set down; setting up',
          );
          await this.#nl!.linkSetUp(index);
          this.#metrics.repaired('holder-up');
        } catch (err) {
          // ENODEV: it is being deleted; the link event that follows recreates it
          if (errnoCode(err) !== 'ENODEV') this.#repairFailed(err);
          return;
        }
      } while (this.#setUpAgain && !this.#stopped);
    })().finally(() => {
      this.#settingUp = undefined;
    });
    return this.#settingUp;
  }

  #holderDeleted(): void {
    this.#log.warn(
      { holder: this.#cfg.holderName },
      'extip: the holder device was deleted; recreating',
    );
    this.#holder!.markGone();
    this.#assigner!.holderLost();
    void this.#recreateHolder();
  }

  /** Recreates (or re-adopts) the holder until it works; the assigner then refills it. */
  #recreateHolder(): Promise<void> {
    this.#recreating ??= (async () => {
      for (let failures = 1; !this.#stopped; failures++) {
        try {
          this.#holder!.markGone();
          const { created } = await this.#holder!.ensure();
          this.#holderError = undefined;
          this.#metrics.repaired('holder');
          this.#assigner!.holderBack();
          this.#log.info({ holder: this.#cfg.holderName, created }, 'extip: holder device back');
          return;
        } catch (err) {
          this.#repairFailed(err);
          this.#holderError = describeError(err);
          await this.#sleep(backoff(100, 10_000, failures));
        }
      }
    })().finally(() => {
      this.#recreating = undefined;
    });
    return this.#recreating;
  }

  /** A pause that stop() cuts short. */
  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        this.#sleepers.delete(wake);
        this.#clock.clearTimeout(timer);
        resolve();
      };
      const timer = this.#clock.setTimeout(wake, ms);
      this.#sleepers.add(wake);
    });
  }

  #repairFailed(err: unknown): void {
    this.#metrics.error('repair');
    this.#log.warn({ err: describeError(err) }, 'extip: repair failed');
  }

  #scheduleCheck(): void {
    if (this.#cfg.checkInterval === 0 || this.#stopped) return;
    this.#checkTimer = this.#clock.setTimeout(() => {
      void this.#check('periodic').finally(() => this.#scheduleCheck());
    }, this.#cfg.checkInterval);
    (this.#checkTimer as { unref?: () => void }).unref?.();
  }

  /**
   * Compares the kernel with what the subsystem believes (periodic, or after lost events):
   * holder present and up, its addresses, the node's addresses, the external interface.
   */
  check(): Promise<void> {
    return this.#check('periodic');
  }

  #check(reason: 'overflow' | 'periodic'): Promise<void> {
    this.#checking ??= this.#checkOnce(reason).finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #checkOnce(reason: 'overflow' | 'periodic'): Promise<void> {
    const feed = this.#feed!;
    const holder = this.#holder!;
    this.#metrics.resync(reason);
    try {
      const since = this.#assigner!.epoch();
      const clusterSince = this.#cluster?.epoch() ?? 0;
      await feed.refresh();
      if (this.#stopped) return;
      const [links, addrs] = [feed.links(), feed.addresses()];
      this.#node.resetLinks(links);
      const h = links.find((l) => l.name === holder.name);
      if (h === undefined || h.index !== holder.ifindex) {
        if (holder.ifindex !== 0) this.#holderDeleted();
        else void this.#recreateHolder();
        return;
      }
      if ((h.flags & IFF_UP) === 0) this.#onLink('new', h);
      this.#node.clearAddresses();
      const onHolder = this.#takeAddresses(addrs);
      this.#ext!.resync(links);
      this.#assigner!.reconcile(onHolder, since);
      this.#cluster?.reconcile(addrs, clusterSince);
      if (this.#ext!.present) this.#cluster?.externalAt(this.#ext!.link.ifindex);
    } catch (err) {
      if (this.#stopped) return;
      this.#metrics.error('resync');
      this.#log.warn({ err: describeError(err), reason }, 'extip: check failed');
    }
  }

  // --- status -----------------------------------------------------------------------------

  /** Ready: started, the holder exists, the external interface is known. */
  ready(): ExtipHealth {
    const reasons: string[] = [];
    if (!this.#started) reasons.push('extip: not started');
    else {
      if ((this.#holder?.ifindex ?? 0) === 0)
        reasons.push(`extip: holder ${this.#cfg.holderName} missing`);
      if (this.#ext?.present !== true) reasons.push('extip: external interface missing');
    }
    return { ok: reasons.length === 0, reasons };
  }

  /** Alive: the packet sockets are open while the external interface is there (/livez). */
  liveness(): ExtipHealth {
    const why = this.#ext?.socketError;
    return why === undefined
      ? { ok: true, reasons: [] }
      : { ok: false, reasons: [`extip: ${why}`] };
  }

  /** Healthy: ready, the external interface is up, no IP failed, listeners work. */
  health(): ExtipHealth {
    const r = this.ready();
    if (!this.#started) return r;
    const reasons = [...r.reasons];
    if (this.#holderError !== undefined) reasons.push(`extip: holder: ${this.#holderError}`);
    const ext = this.#ext!;
    const down = `extip: external interface ${ext.link.name} is down; nothing can go out`;
    if (ext.present && !ext.link.up) reasons.push(down);
    if (ext.lastError !== undefined) reasons.push(`extip: ${ext.lastError}`);
    const failed = this.#assigner!.counts().failed + (this.#cluster?.counts().failed ?? 0);
    if (failed > 0) reasons.push(`extip: ${failed} external IP(s) failed (see list)`);
    reasons.push(...(this.#cluster?.problems() ?? []));
    return { ok: reasons.length === 0, reasons };
  }
}
