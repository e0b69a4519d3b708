// The agent: wires the subsystems together in one namespace. Validate, lock, then act:
// start checks the capabilities the configuration needs, takes the namespace lock, loads
// the state file, binds the control socket (its directory's owner and mode checked; it
// answers 503 until the agent runs) and the metrics endpoint, probes the kernel, and checks
// the config's static lists against the node's addresses (node-check.ts) — all before its
// first kernel change. Then XDP (a verifier refusal fails the start before
// anything else is touched), the neighbor tables and reconciler, external IPs and the miss
// tracker. Stop runs in reverse and leaves neighbor entries, external IPs and (by default)
// XDP in place. In cluster mode the first kernel change removes from the holder whatever is
// not a node-local external IP (cluster IPs of an earlier run, another node's by now), the
// cluster member starts after the external IPs and stops before them (dropping its IPs and
// handing them over), and its peers' node IPs become forwardable (owner `cluster`).
// wiring.ts lists the parts: who owns which table, who writes the kernel, which feed each reads.
import type { Registry } from 'prom-client';
import { ApiServer } from '../api/index.js';
import { CLUSTER_OWNER, checkRunnable, type FibkeeperConfig } from '../config/index.js';
import { ClosedError, NotSupportedError, describeError } from '../errors/index.js';
import { ExternalIpSubsystem } from '../extip/index.js';
import { XdpForwarder, type XdpForwarderConfig } from '../fib/index.js';
import type { Logger } from '../log/index.js';
import { MetricsServer, createRegistry, type HealthReport } from '../metrics/index.js';
import { NeighborSubsystem } from '../neighbor/index.js';
import {
  DeviceFeed,
  NetlinkHandle,
  RouteFeed,
  type HealthParams,
  type SocketName,
} from '../netlink/index.js';
import { featureAvailable, type FeatureResult, type ProbeReport } from '../probe/index.js';
import { startBgp, type AgentBgp } from './bgp.js';
import { AgentCluster, dropLeftovers, setPeers } from './cluster.js';
import { ControlPlane } from './control.js';
import { AgentEvents } from './events.js';
import { neighborProblems, prefixed } from './health.js';
import { startHeapTrim } from './heap-trim.js';
import { handlersFor } from './handlers.js';
import { acquireAgentLock, type AgentLock } from './lock.js';
import { registerAgentMetrics, type AgentMetrics } from './metrics.js';
import { MISS_OWNER, MissTracker } from './miss-tracker.js';
import { RecentMisses } from './misses.js';
import { checkStaticsOnNode } from './node-check.js';
import { checkCapabilities, probeForStart, refuseMissing, verifierRefusal } from './preflight.js';
import { reportReopen } from './sockets.js';
import { reloadAgent, type ReloadResult } from './reload.js';
import { planExtip, planForwardable, staticSets } from './restore.js';
import { StateStore, type ControlState, type SkippedEntry } from './state.js';
import { extipParams, missTrackerParams, neighborParams, xdpParams } from './wiring.js';
import type { AgentPhase, AgentView } from './view.js';

export interface AgentParams {
  config: FibkeeperConfig;
  /** The file SIGHUP re-reads (with the same flags on top). */
  configPath?: string;
  flags?: Readonly<Record<string, string | boolean>>;
  version: string;
  log: Logger;
  /** Tests: the probe's feature table instead of probing. */
  probe?: () => Promise<FeatureResult[]>;
  /** Tests: the effective capability set instead of /proc/self/status. */
  capabilities?: bigint;
  /** The XDP object; default build/bpf/xdp_fwd.o of this package. */
  objectPath?: string;
  /** Tests (FIBKEEPER_TEST_FAULTS): shorter socket health timings than defaultHealth(). */
  health?: Partial<Omit<HealthParams, 'clock'>>;
}

export { RESERVED_OWNERS } from '../config/index.js';

type Stopper = () => Promise<void> | void;
export type { AgentPhase } from './view.js';

export class Agent implements AgentView {
  readonly registry: Registry;
  cfg: FibkeeperConfig;
  probeReport: ProbeReport | undefined;
  netlink: NetlinkHandle | undefined;
  /** The namespace's links and addresses, one feed read by the xdp, neighbor and extip parts. */
  devices: DeviceFeed | undefined;
  /** The namespace's routes and rules, one feed read by the xdp and neighbor parts. */
  routes: RouteFeed | undefined;
  neighbor: NeighborSubsystem | undefined;
  extip: ExternalIpSubsystem | undefined;
  xdp: XdpForwarder | undefined;
  missTracker: MissTracker | undefined;
  cluster: AgentCluster | undefined;
  /** BGP announcement of the held external IPs (bgp.enabled). */
  bgp: AgentBgp | undefined;
  /** Done once the cluster's node IPs are in the neighbor table (its first prune waits). */
  #peersLoaded: (() => void) | undefined;
  /** What the control API added: durable before a request is answered, restored on start. */
  readonly store: StateStore;
  /** The one ordered write path of every change (API, reload, miss tracker). */
  readonly control: ControlPlane;
  /** Entries of the state file not applied at the last start or reload, with the reason. */
  skipped: SkippedEntry[] = [];
  #metricsServer: MetricsServer | undefined;
  #lock: AgentLock | undefined;
  readonly #stoppers: Stopper[] = [];
  readonly metrics: AgentMetrics;
  /** What the agent did and saw (GET /v1/events). */
  readonly events = new AgentEvents();
  /** NO_NEIGH destinations the miss tracker took from the miss map lately. */
  readonly misses = new RecentMisses();
  #phase: AgentPhase = 'new';
  #starting: Promise<void> | undefined;
  readonly startedAt = new Date();

  readonly #p: AgentParams;
  constructor(p: AgentParams) {
    this.#p = p;
    this.cfg = p.config;
    this.store = new StateStore(p.config.stateFile);
    this.registry = createRegistry(p.version);
    this.metrics = registerAgentMetrics(
      this.registry,
      () => this.ready().ok,
      () => this.skipped.length,
      () => this.health().ok,
      () => this.events.log.followers,
    );
    this.control = new ControlPlane({
      store: this.store,
      forwardable: () => this.neighbor,
      extip: () =>
        this.extip && {
          check: (ips) => this.extip!.validate(ips),
          assign: (ips) => this.extip!.assign(ips),
          unassign: (ips) => this.extip!.unassign(ips),
          problems: () => this.extip!.health().reasons,
        },
      statics: () => staticSets(this.cfg),
      clusterIps: () => this.cluster?.clusterIps(),
      log: this.log.child({ component: 'control' }),
      onSave: (ok) => this.metrics.stateSaves.inc({ result: ok ? 'ok' : 'error' }),
      onApplied: (change, changed) => this.events.forwardable(change, changed),
    });
  }

  get log(): Logger {
    return this.#p.log;
  }

  get version(): string {
    return this.#p.version;
  }

  get netns(): string | undefined {
    return this.cfg.netns || undefined;
  }

  get phase(): AgentPhase {
    return this.#phase;
  }

  /** Throws ClosedError (503) unless the agent runs: requests wait for the start. */
  assertRunning(): void {
    if (this.#phase !== 'running') {
      throw new ClosedError(`the agent is ${this.#phase}; try again when it is ready`);
    }
  }

  start(): Promise<void> {
    if (this.#phase !== 'new') return Promise.reject(new Error(`agent already ${this.#phase}`));
    this.#phase = 'starting';
    this.#starting = this.#start();
    return this.#starting;
  }

  /** Resolves when a start in progress has ended (either way). */
  async settled(): Promise<void> {
    await this.#starting?.catch(() => undefined);
  }

  async #start(): Promise<void> {
    try {
      // Validate: nothing below changes the kernel.
      const { token } = checkRunnable(this.cfg);
      checkCapabilities(this.cfg, this.#p.capabilities);
      this.#lock = acquireAgentLock({ netns: this.cfg.netns, stateFile: this.cfg.stateFile });
      this.#stoppers.push(() => this.#lock?.release(), startHeapTrim());
      const { usable, skipped } = this.store.load(staticSets(this.cfg));
      this.skipped = [...skipped];
      await this.#startApi(token);
      await this.#startMetrics();
      await this.#startProbe();
      this.netlink = NetlinkHandle.open({
        ...(this.netns ? { netns: this.netns } : {}),
        health: this.#p.health ?? {}, // probe every socket; reopen those that stop answering
        onReopen: (socket, cause, err) => this.socketReopened(socket, cause, err),
      });
      this.#stoppers.push(() => this.netlink?.close());
      await checkStaticsOnNode(this.netlink, this.cfg, this.netns); // reads only
      // Act.
      const devices = (this.devices = new DeviceFeed({
        nl: this.netlink,
        log: this.log.child({ component: 'devices' }),
      }));
      this.#stoppers.push(() => devices.stop());
      await devices.start();
      const routes = (this.routes = new RouteFeed({
        nl: this.netlink,
        log: this.log.child({ component: 'routes' }),
        devices,
      }));
      this.#stoppers.push(() => routes.stop());
      if (this.cfg.cluster.enabled) {
        const keep = new Set([...staticSets(this.cfg).extip, ...usable.extip]);
        await dropLeftovers(this.netlink, devices, this.cfg.extip.holderName, keep, this.log);
      }
      if (this.cfg.xdp.enabled) await this.#startXdp();
      if (this.cfg.neighbor.enabled) await this.#startNeighbor(usable);
      if (this.cfg.extip.enabled) await this.#startExtip(usable);
      if (this.cfg.cluster.enabled) await this.#startCluster();
      if (this.cfg.bgp.enabled) this.bgp = await startBgp(this, this.#stoppers);
      if (this.cfg.xdp.enabled && this.cfg.xdp.missTracker.enabled) this.#startMissTracker();
      this.reportSkipped('state file entries not applied');
      this.#phase = 'running';
      this.events.sink.emit('agent.started', `fibkeeper ${this.version} started`, {
        netns: this.netns ?? null,
      });
      this.log.info(
        {
          netns: this.netns ?? '(own)',
          xdp: this.cfg.xdp.enabled,
          neighbor: this.cfg.neighbor.enabled,
          extip: this.cfg.extip.enabled,
          cluster: this.cfg.cluster.enabled,
          stateFile: this.cfg.stateFile || '(none)',
        },
        'fibkeeper agent started',
      );
    } catch (err) {
      this.log.error({ err: describeError(err) }, 'fibkeeper agent failed to start');
      // A failed start leaves no XDP program attached or pinned (adopted ones included): the
      // kernel forwards until an agent starts for good.
      await this.xdp?.detach().catch((e: unknown) => {
        this.log.error({ err: describeError(e) }, 'xdp: detach after a failed start');
      });
      await this.stop();
      throw err;
    }
  }

  /** One log line per skipped entry (the file named), then a summary. */
  reportSkipped(msg: string): void {
    for (const s of this.skipped) {
      this.log.error(
        { stateFile: this.cfg.stateFile, entry: s.entry, reason: s.reason },
        `state file ${this.cfg.stateFile}: ${s.entry} skipped: ${s.reason}`,
      );
    }
    if (this.skipped.length > 0) {
      this.log.warn(
        { stateFile: this.cfg.stateFile, skipped: this.skipped.length },
        `${msg}; they stay in the file and are tried again at the next start or reload`,
      );
    }
  }

  async #startProbe(): Promise<void> {
    this.probeReport = await probeForStart(this.cfg, this.netns, this.log, this.#p.probe);
    refuseMissing(this.probeReport);
  }

  async #startNeighbor(usable: ControlState): Promise<void> {
    const report = this.probeReport as ProbeReport;
    const managed = featureAvailable(report, 'managed_neighbors');
    const n = new NeighborSubsystem(neighborParams(this, managed));
    const configLoaded = n.registerInitializer('config');
    if (this.cfg.cluster.enabled) this.#peersLoaded = n.registerInitializer(CLUSTER_OWNER);
    this.neighbor = n;
    this.#stoppers.push(() => n.stop());
    await n.start();
    // The config's IPs and the API's owners from the state file (each IP on its own), before
    // the first prune can run.
    const plan = planForwardable(n, this.cfg, usable);
    for (const [owner, ips] of plan.owners) n.setOwner(owner, ips);
    this.skipped.push(...plan.skipped);
    configLoaded();
  }

  async #startExtip(usable: ControlState): Promise<void> {
    const x = new ExternalIpSubsystem(extipParams(this));
    this.extip = x;
    this.#stoppers.push(() => x.stop());
    await x.start();
    const { desired, skipped } = planExtip({ check: (ips) => x.validate(ips) }, this.cfg, usable);
    this.skipped.push(...skipped);
    await x.setDesired(desired).catch((err: unknown) => {
      // The set is desired whatever the kernel said; the assigner retries and reports.
      this.log.error({ err: describeError(err) }, 'extip: some external IPs are not assigned yet');
    });
  }

  async #startCluster(): Promise<void> {
    const x = this.extip as ExternalIpSubsystem;
    const c = new AgentCluster({
      cfg: this.cfg,
      registry: this.registry,
      log: this.log.child({ component: 'cluster' }),
      hold: (ips) => x.setClusterIps(ips),
      deadline: (until) => x.setClusterDeadline(until),
      probe: (ip) => x.probe(ip),
      peers: (ips) =>
        void this.control.exclusive('cluster peers', () =>
          setPeers(this.neighbor, ips, this.log.child({ component: 'cluster' })),
        ),
      onHoldSet: (set, status) => this.events.cluster.hold(set, status),
      withdraw: () => this.bgp?.changed(), // the routes go now, the addresses after the linger
    });
    this.cluster = c;
    this.#stoppers.push(() => c.stop());
    if (x.externalInterface?.up === false) c.member.setAble(false);
    await c.start(this.cfg.cluster.static, this.#peersLoaded);
  }

  async #startXdp(): Promise<void> {
    const x = new XdpForwarder(xdpParams(this, this.#p.objectPath));
    this.xdp = x;
    this.#stoppers.push(() => x.stop());
    try {
      await x.start();
    } catch (err) {
      const refusal = verifierRefusal(err);
      if (refusal === undefined) throw err;
      throw new NotSupportedError(
        'xdp',
        `the kernel's verifier refused the XDP program (${refusal}); ` +
          'fix: run `fibkeeper probe` and use a kernel with what it lists as missing, or set xdp.enabled: false to run without XDP forwarding',
        { cause: err },
      );
    }
  }

  #startMissTracker(): void {
    const x = this.xdp;
    const neighbor = this.neighbor;
    if (!x || !neighbor) return;
    const t = new MissTracker(missTrackerParams(this, x, neighbor));
    this.missTracker = t;
    this.#stoppers.push(() => t.stop());
    t.start();
  }

  xdpConfig(cfg: FibkeeperConfig): XdpForwarderConfig {
    return { ...cfg.xdp, devices: cfg.devices, holderName: cfg.extip.holderName, missTrack: true };
  }

  async #startApi(token: Buffer | undefined): Promise<void> {
    const api = new ApiServer({
      socketPath: this.cfg.api.socket,
      socketMode: this.cfg.api.socketMode,
      ...(this.cfg.api.tcp ? { tcp: this.cfg.api.tcp } : {}),
      ...(token ? { token } : {}),
      requestTimeoutMs: this.cfg.api.requestTimeout,
      handlers: handlersFor(this),
      log: this.log.child({ component: 'api' }),
    });
    this.#stoppers.push(() => api.stop());
    await api.start();
  }

  async #startMetrics(): Promise<void> {
    if (this.cfg.metrics.address === '') return;
    const m = new MetricsServer({
      address: this.cfg.metrics.address,
      registry: this.registry,
      live: () => this.live(),
      health: () => this.health(),
      ready: () => this.ready(),
      log: this.log.child({ component: 'metrics' }),
    });
    this.#stoppers.push(() => m.stop());
    await m.start();
    this.#metricsServer = m;
  }

  /** The metrics endpoint's port (after start). */
  get metricsPort(): number | undefined {
    return this.#metricsServer?.port;
  }

  /** A kernel socket was replaced after `cause`, or could not be (`err`): logged, counted. */
  socketReopened(socket: SocketName, cause: string, err?: unknown): void {
    reportReopen(this.log, this.metrics, socket, cause, err);
    this.events.socketReopened(socket, cause, err !== undefined);
  }

  /**
   * Alive while the process works: it answers (the caller is on its event loop) and every
   * kernel socket answers its probes (netlink: NetlinkHandle.liveness; the genetlink socket
   * of xdp_features; the packet sockets are open). For liveness probes (/livez) and the
   * systemd watchdog: nothing that an operator must fix (a foreign XDP program, a detach, a
   * down NIC) makes it fail.
   */
  live(): HealthReport {
    if (this.phase === 'stopped') return { ok: false, reasons: ['agent stopped'] };
    const reasons = [
      ...(this.netlink?.liveness().reasons ?? []),
      ...(this.xdp?.liveness().reasons ?? []),
      ...(this.extip?.liveness().reasons ?? []),
    ];
    return { ok: reasons.length === 0, reasons };
  }

  /** Ready once the initial dumps are done and the first reconciliation round finished. */
  ready(): HealthReport {
    const reasons: string[] = [];
    if (this.#phase !== 'running') reasons.push(`agent ${this.#phase}`);
    if (this.neighbor && !this.neighbor.ready())
      reasons.push('neighbor: initial dumps or first reconciliation not done');
    const ex = this.extip?.ready();
    if (ex && !ex.ok) reasons.push(...ex.reasons.map((r) => prefixed('extip', r)));
    const xr = this.xdp?.ready();
    if (xr && !xr.ok) reasons.push(...xr.reasons.map((r) => prefixed('xdp', r)));
    reasons.push(...(this.cluster?.ready() ?? []));
    return { ok: reasons.length === 0, reasons };
  }

  /** Healthy while every reconciler is. */
  health(): HealthReport {
    const reasons: string[] = [];
    const n = this.neighbor?.health();
    if (n && n.level !== 'ok') reasons.push(`neighbor: ${neighborProblems(n)}`);
    const e = this.extip?.health();
    if (e && !e.ok) reasons.push(...e.reasons.map((r) => prefixed('extip', r)));
    const x = this.xdp?.health();
    if (x && !x.ok) reasons.push(...x.reasons.map((r) => prefixed('xdp', r)));
    reasons.push(...(this.cluster?.health() ?? []));
    reasons.push(...(this.bgp?.problems() ?? []));
    return { ok: reasons.length === 0, reasons };
  }

  /**
   * SIGHUP: re-reads the config file, all or nothing (see reload.ts). During a start it
   * waits for the start to end first; after a failed start it does nothing.
   */
  async reload(): Promise<ReloadResult> {
    if (this.#phase === 'starting') await this.settled();
    if (this.#phase !== 'running') {
      throw new ClosedError(`reload: the agent is ${this.#phase}`);
    }
    return this.control.exclusive('a config reload', async () => {
      try {
        const r = await reloadAgent(this, {
          configPath: this.#p.configPath,
          flags: this.#p.flags ?? {},
        });
        this.events.reloaded(r);
        return r;
      } catch (err) {
        this.events.reloadRefused(describeError(err));
        throw err;
      }
    });
  }

  /** Graceful, reverse order, idempotent. */
  async stop(): Promise<void> {
    if (this.#phase === 'stopped' || this.#phase === 'stopping') return;
    if (this.#phase === 'running') this.events.sink.emit('agent.stopping', 'the agent stops');
    this.#phase = 'stopping';
    while (this.#stoppers.length > 0) {
      const stop = this.#stoppers.pop() as Stopper;
      try {
        await stop();
      } catch (err) {
        this.log.warn({ err: describeError(err) }, 'error while stopping');
      }
    }
    this.#phase = 'stopped';
    this.log.info('fibkeeper agent stopped');
  }
}

export { MISS_OWNER };
