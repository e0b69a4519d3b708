// The agent: wires the subsystems together in one namespace. Start order: probe the
// kernel, open netlink, neighbor tables and reconciler, external IPs, XDP, the miss
// tracker, then the control API and the metrics endpoint. Stop runs in reverse and leaves
// neighbor entries, external IPs and (by default) XDP in place.
import type { Registry } from 'prom-client';
import { ApiServer } from '../api/index.js';
import { loadConfig, type FibkeeperConfig } from '../config/index.js';
import {
  ConfigError,
  NotSupportedError,
  describeError,
  InvalidArgumentError,
} from '../errors/index.js';
import { ExternalIpSubsystem } from '../extip/index.js';
import { XdpForwarder, type XdpForwarderConfig } from '../fib/index.js';
import type { Logger } from '../log/index.js';
import {
  MetricsServer,
  createRegistry,
  registerAgentMetrics,
  type AgentMetrics,
  type HealthReport,
} from '../metrics/index.js';
import { NeighborSubsystem } from '../neighbor/index.js';
import { NetlinkHandle } from '../netlink/index.js';
import {
  buildReport,
  featureAvailable,
  probeKernel,
  type FeatureResult,
  type ProbeReport,
} from '../probe/index.js';
import { MISS_OWNER, MissTracker } from './miss-tracker.js';
import { handlersFor } from './handlers.js';
import { StateStore } from './state.js';

export interface AgentParams {
  config: FibkeeperConfig;
  /** The file SIGHUP re-reads (with the same flags on top). */
  configPath?: string;
  flags?: Readonly<Record<string, string | boolean>>;
  version: string;
  log: Logger;
  /** Tests: the probe's feature table instead of probing. */
  probe?: () => Promise<FeatureResult[]>;
  /** The XDP object; default build/bpf/xdp_fwd.o of this package. */
  objectPath?: string;
}

/** Owners that the agent manages itself; the API refuses them. */
export const RESERVED_OWNERS = new Set(['config', MISS_OWNER]);

type Stopper = () => Promise<void> | void;

export class Agent {
  readonly registry: Registry;
  cfg: FibkeeperConfig;
  probeReport: ProbeReport | undefined;
  netlink: NetlinkHandle | undefined;
  neighbor: NeighborSubsystem | undefined;
  extip: ExternalIpSubsystem | undefined;
  xdp: XdpForwarder | undefined;
  missTracker: MissTracker | undefined;
  /** What the control API added, restored on start. */
  readonly state: StateStore;
  private metricsServer: MetricsServer | undefined;
  private readonly stoppers: Stopper[] = [];
  private readonly metrics: AgentMetrics;
  private phase: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new';
  readonly startedAt = new Date();

  constructor(private readonly p: AgentParams) {
    this.cfg = p.config;
    this.state = new StateStore(p.config.stateFile);
    this.registry = createRegistry(p.version);
    this.metrics = registerAgentMetrics(this.registry, () => this.ready().ok);
  }

  get log(): Logger {
    return this.p.log;
  }

  get version(): string {
    return this.p.version;
  }

  get netns(): string | undefined {
    return this.cfg.netns || undefined;
  }

  async start(): Promise<void> {
    if (this.phase !== 'new') throw new Error(`agent already ${this.phase}`);
    this.phase = 'starting';
    try {
      await this.startProbe();
      this.state.load();
      this.netlink = NetlinkHandle.open(this.netns ? { netns: this.netns } : {});
      this.stoppers.push(() => this.netlink?.close());
      if (this.cfg.neighbor.enabled) await this.startNeighbor();
      if (this.cfg.extip.enabled) await this.startExtip();
      if (this.cfg.xdp.enabled) await this.startXdp();
      await this.startApi();
      await this.startMetrics();
      this.phase = 'running';
      this.log.info(
        {
          netns: this.netns ?? '(own)',
          xdp: this.cfg.xdp.enabled,
          neighbor: this.cfg.neighbor.enabled,
          extip: this.cfg.extip.enabled,
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

  private async startProbe(): Promise<void> {
    const features = this.p.probe
      ? await this.p.probe()
      : await probeKernel({
          ...(this.netns ? { netns: this.netns } : {}),
          pinDir: this.cfg.xdp.pinDir,
        });
    const report = buildReport(features, this.cfg);
    this.probeReport = report;
    for (const f of report.assumed) {
      this.log.warn(
        { feature: f.name, detail: f.detail },
        `assuming ${f.title} from kernel ${report.kernel}`,
      );
    }
    if (report.missing.length > 0) {
      const lines = report.missing.map((f) => `${f.title}: ${f.detail} (fix: ${f.fix})`);
      throw new NotSupportedError(
        report.missing.map((f) => f.name).join(','),
        `the kernel lacks what this configuration needs:\n  ${lines.join('\n  ')}`,
      );
    }
  }

  private async startNeighbor(): Promise<void> {
    const report = this.probeReport as ProbeReport;
    const n = new NeighborSubsystem({
      ...(this.netns ? { netns: this.netns } : {}),
      netlink: this.netlink as NetlinkHandle,
      config: {
        devices: this.cfg.devices,
        holderName: this.cfg.extip.holderName,
        refresh: this.cfg.neighbor.refresh,
        resyncIntervalMs: this.cfg.neighbor.resyncInterval,
        retryMinMs: this.cfg.neighbor.retryMin,
        retryMaxMs: this.cfg.neighbor.retryMax,
        rateLimit: this.cfg.neighbor.rateLimit,
      },
      managedSupported: featureAvailable(report, 'managed_neighbors'),
      registry: this.registry,
      log: this.log, // the subsystem names itself (component: neighbor)
    });
    const configLoaded = n.registerInitializer('config');
    this.neighbor = n;
    this.stoppers.push(() => n.stop());
    await n.start();
    try {
      n.setOwner('config', this.cfg.forwardable.static);
    } catch (err) {
      throw new ConfigError('forwardable.static', describeError(err), { cause: err });
    }
    // The API's owners from the state file, before the first prune can run.
    for (const [owner, ips] of Object.entries(this.state.snapshot().forwardable)) {
      try {
        n.setOwner(owner, ips);
      } catch (err) {
        this.log.error(
          { owner, err: describeError(err) },
          'forwardable IPs from the state file refused',
        );
      }
    }
    configLoaded();
  }

  private async startExtip(): Promise<void> {
    const c = this.cfg.extip;
    const x = new ExternalIpSubsystem({
      ...(this.netns ? { netns: this.netns } : {}),
      netlink: this.netlink as NetlinkHandle,
      config: {
        holderName: c.holderName,
        holderKind: c.holderKind,
        interface: c.interface,
        nodeIP: c.nodeIP,
        announceCount: c.announceCount,
        announceIntervalMs: c.announceInterval,
        refreshIntervalMs: c.refreshInterval,
        checkIntervalMs: c.checkInterval,
        defendIntervalMs: c.defendInterval,
        defendRatePerSecond: c.defendRate,
        ipv6Dad: c.ipv6Dad,
        dadTimeoutMs: c.dadTimeout,
        arpResponder: c.arpResponder,
      },
      registry: this.registry,
      log: this.log.child({ component: 'extip' }),
    });
    this.extip = x;
    this.stoppers.push(() => x.stop());
    await x.start();
    try {
      await x.setDesired([...new Set([...c.static, ...this.state.extip])]);
    } catch (err) {
      if (err instanceof InvalidArgumentError) {
        throw new ConfigError('extip.static', describeError(err), { cause: err });
      }
      throw err;
    }
  }

  private async startXdp(): Promise<void> {
    const c = this.cfg.xdp;
    const x = new XdpForwarder({
      ...(this.netns ? { netns: this.netns } : {}),
      netlink: this.netlink as NetlinkHandle,
      ...(this.p.objectPath ? { objectPath: this.p.objectPath } : {}),
      config: this.xdpConfig(this.cfg),
      registry: this.registry,
      log: this.log.child({ component: 'xdp' }),
    });
    this.xdp = x;
    this.stoppers.push(() => x.stop());
    await x.start();
    if (c.missTracker.enabled && this.neighbor) {
      const neighbor = this.neighbor;
      const t = new MissTracker({
        source: { takeMisses: () => x.takeMisses() },
        sink: {
          upsert: (o, ips) => neighbor.upsert(o, ips),
          delete: (o, ips) => neighbor.delete(o, ips),
        },
        ttlMs: c.missTracker.ttl,
        intervalMs: c.missTracker.interval,
        registry: this.registry,
        log: this.log.child({ component: 'miss-tracker' }),
      });
      this.missTracker = t;
      this.stoppers.push(() => t.stop());
      t.start();
    }
  }

  private xdpConfig(cfg: FibkeeperConfig): XdpForwarderConfig {
    return {
      devices: cfg.devices,
      holderName: cfg.extip.holderName,
      mode: cfg.xdp.mode,
      pinDir: cfg.xdp.pinDir,
      keepOnStop: cfg.xdp.keepOnStop,
      force: cfg.xdp.force,
      ipv6: cfg.xdp.ipv6,
      ipv4Options: cfg.xdp.ipv4Options,
      missTrack: true,
    };
  }

  private async startApi(): Promise<void> {
    const api = new ApiServer({
      socketPath: this.cfg.api.socket,
      socketMode: this.cfg.api.socketMode,
      ...(this.cfg.api.tcp ? { tcp: this.cfg.api.tcp } : {}),
      handlers: handlersFor(this),
      log: this.log.child({ component: 'api' }),
    });
    await api.start();
    this.stoppers.push(() => api.stop());
  }

  private async startMetrics(): Promise<void> {
    if (this.cfg.metrics.address === '') return;
    const m = new MetricsServer({
      address: this.cfg.metrics.address,
      registry: this.registry,
      health: () => this.health(),
      ready: () => this.ready(),
      log: this.log.child({ component: 'metrics' }),
    });
    await m.start();
    this.metricsServer = m;
    this.stoppers.push(() => m.stop());
  }

  /** The metrics endpoint's port (after start). */
  get metricsPort(): number | undefined {
    return this.metricsServer?.port;
  }

  /** Ready once the initial dumps are done and the first reconciliation round finished. */
  ready(): HealthReport {
    const reasons: string[] = [];
    if (this.phase !== 'running') reasons.push(`agent ${this.phase}`);
    if (this.neighbor && !this.neighbor.ready())
      reasons.push('neighbor: initial dumps or first reconciliation not done');
    const ex = this.extip?.ready();
    if (ex && !ex.ok) reasons.push(...ex.reasons.map((r) => `extip: ${r}`));
    const xr = this.xdp?.ready();
    if (xr && !xr.ok) reasons.push(...xr.reasons.map((r) => `xdp: ${r}`));
    return { ok: reasons.length === 0, reasons };
  }

  /** Healthy while every reconciler is. */
  health(): HealthReport {
    const reasons: string[] = [];
    const n = this.neighbor?.health();
    if (n && n.level !== 'ok') {
      reasons.push(
        `neighbor: ${n.reconciler.errorCount} entries failing` +
          (n.failingLookups ? `, ${n.failingLookups} next-hop lookups failing` : '') +
          Object.entries(n.feeds)
            .map(([feed, why]) => `, ${feed}: ${why}`)
            .join(''),
      );
    }
    const e = this.extip?.health();
    if (e && !e.ok) reasons.push(...e.reasons.map((r) => `extip: ${r}`));
    const x = this.xdp?.health();
    if (x && !x.ok) reasons.push(...x.reasons.map((r) => `xdp: ${r}`));
    return { ok: reasons.length === 0, reasons };
  }

  /**
   * SIGHUP: re-reads the config file. The static forwardable and external IPs and the log
   * level take effect at once; other changes need a restart (logged). A bad file changes nothing.
   */
  async reload(): Promise<{ applied: string[]; needRestart: string[] }> {
    let next: FibkeeperConfig;
    try {
      next = loadConfig(this.p.configPath, this.p.flags ?? {});
    } catch (err) {
      this.metrics.reloads.inc({ result: 'error' });
      this.log.error(
        { err: describeError(err) },
        'config reload refused; keeping the running configuration',
      );
      throw err;
    }
    const applied: string[] = [];
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    try {
      if (!same(next.forwardable.static, this.cfg.forwardable.static) && this.neighbor) {
        this.neighbor.setOwner('config', next.forwardable.static);
        applied.push('forwardable.static');
      }
      if (!same(next.extip.static, this.cfg.extip.static) && this.extip) {
        await this.extip.setDesired([...new Set([...next.extip.static, ...this.state.extip])]);
        applied.push('extip.static');
      }
      // XDP options apply at once (programs swapped atomically); the device list is shared
      // with the neighbor subsystem and needs a restart.
      const xdpKeys = ['mode', 'keepOnStop', 'force', 'ipv6', 'ipv4Options'] as const;
      const xdpChanged = xdpKeys.filter((k) => next.xdp[k] !== this.cfg.xdp[k]);
      if (this.xdp && xdpChanged.length > 0 && next.xdp.pinDir === this.cfg.xdp.pinDir) {
        await this.xdp.reconfigure(this.xdpConfig({ ...next, devices: this.cfg.devices }));
        applied.push(...xdpChanged.map((k) => `xdp.${k}`));
      }
    } catch (err) {
      this.metrics.reloads.inc({ result: 'error' });
      this.log.error({ err: describeError(err) }, 'config reload refused');
      throw err;
    }
    if (next.log.level !== this.cfg.log.level) {
      this.log.level = next.log.level;
      applied.push('log.level');
    }
    const flat = (o: unknown, prefix = ''): [string, string][] =>
      Object.entries(o as Record<string, unknown>).flatMap(([k, v]) =>
        v !== null && typeof v === 'object' && !Array.isArray(v)
          ? flat(v, `${prefix}${k}.`)
          : [[`${prefix}${k}`, JSON.stringify(v)] as [string, string]],
      );
    const before = new Map(flat(this.cfg));
    const needRestart = flat(next)
      .filter(([k, v]) => before.get(k) !== v && !applied.includes(k))
      .map(([k]) => k);
    this.cfg = { ...next, netns: this.cfg.netns };
    this.metrics.reloads.inc({ result: 'ok' });
    this.log.info({ applied, needRestart }, 'config reloaded');
    if (needRestart.length > 0) {
      this.log.warn({ options: needRestart }, 'these option changes take effect after a restart');
    }
    return { applied, needRestart };
  }

  /** Graceful, reverse order, idempotent. */
  async stop(): Promise<void> {
    if (this.phase === 'stopped' || this.phase === 'stopping') return;
    this.phase = 'stopping';
    while (this.stoppers.length > 0) {
      const stop = this.stoppers.pop() as Stopper;
      try {
        await stop();
      } catch (err) {
        this.log.warn({ err: describeError(err) }, 'error while stopping');
      }
    }
    this.phase = 'stopped';
    this.log.info('fibkeeper agent stopped');
  }
}
