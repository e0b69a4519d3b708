// XdpForwarder: keeps fk_xdp_fwd attached to every selected device of one network namespace.
// Level-triggered: every change of the device feed's links or addresses, every netconf or
// node-policy change (and a periodic timer) reconciles the feed's links with the pinned
// records and writes the mirror; route and rule events (the route feed's) only update the
// route mirror (kroutes.ts) and write what it changed, coalesced, without a full pass. The
// kernel work goes through DatapathOps. wiring.ts lists the parts and builds them.
import type { Registry } from 'prom-client';
import { InvalidArgumentError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { forwarderMetrics, registerXdpMetrics } from './metrics.js';
import type { DeviceFeed, NetlinkHandle, RouteFeed } from '../netlink/index.js';
import { NetlinkHandle as Handle } from '../netlink/index.js';
import { systemClock, type Clock } from '../sched/index.js';
import { readCounters } from './counters.js';
import { ForwarderInputs } from './forwarder-inputs.js';
import type { RouteMirror } from './kroutes.js';
import { forwarderParts } from './wiring.js';
import { detachPinned } from './detach.js';
import type { SlotDevice } from './kstate.js';
import type { MirrorWriter } from './kwatch.js';
import type { MissEntry, MissKey } from './layout.js';
import { egressReasons, policyStatus, readNodePolicy, reasonIndex } from './policy-apply.js';
import { XdpFeatures } from './xdp-features.js';
import type { DatapathOps } from './ops.js';
import type { AttachPass } from './attach-pass.js';
import {
  type XdpDeviceCounters,
  type XdpDeviceStatus,
  type XdpForwarderConfig,
  type XdpHealth,
  type XdpNodePolicyMode,
} from './types.js';

export interface XdpForwarderParams {
  /** Network namespace (name under /run/netns or a path); default the agent's own. */
  netns?: string;
  /** Used for route dumps and events; opened (and closed) by the forwarder when absent. */
  netlink?: NetlinkHandle;
  /**
   * The namespace's links and addresses, shared (started by its owner, not stopped by
   * stop()); default: a feed of its own on the handle.
   */
  devices?: DeviceFeed;
  /**
   * The namespace's routes and rules, shared (started by its owner, not stopped by stop());
   * default: a feed of its own on the handle.
   */
  routes?: RouteFeed;
  /** Default: build/bpf/xdp_fwd.o of this package. */
  objectPath?: string;
  config: XdpForwarderConfig;
  registry?: Registry;
  log: Logger;
  /** Full resync period in ms (others' XDP changes raise no event); default 30000, 0 = off. */
  resyncIntervalMs?: number;
  /**
   * How often the sysctls the program mirrors are read (most raise no event: multipath hash
   * policy, disable_ipv6); default 1000 ms, 0 = off (tests).
   */
  sysctlPollMs?: number;
  /** Tests: the kernel side. Default: Datapath over libbpf. */
  ops?: DatapathOps;
  /** The timers (resync, watch renewal, sysctl poll) and genetlink timeouts; default the process clock. */
  clock?: Clock;
  /** The genetlink socket (xdp_features) was replaced after `cause`, or could not be (`err`). */
  onSocketReopen?: (cause: string, err?: unknown) => void;
  /** Every device's status after each pass (the agent's events tell what changed). */
  onPass?: (devices: readonly XdpDeviceStatus[]) => void;
}

type State = 'new' | 'starting' | 'running' | 'stopped';

export class XdpForwarder {
  readonly #p: XdpForwarderParams;
  readonly #cfg: XdpForwarderConfig;
  readonly #ops: DatapathOps;
  #nl: NetlinkHandle | undefined;
  #ownNl = false;
  /** Feeds, netconf, the policy watcher and the timers (forwarder-inputs.ts). */
  #inputs: ForwarderInputs | undefined;
  /** The route facts, from the route feed (kroutes.ts). */
  readonly #routes: RouteMirror;
  /** A route-only write is queued. */
  #routesPending = false;
  readonly #mirror: MirrorWriter;
  /** Passes completed (tests and status: a change was applied once this moved). */
  #passes = 0;
  #routeWrites = 0;
  #features: XdpFeatures | undefined;
  /** The xdp_features the last sync used, to see whether a poll found a change. */
  #lastFeatures = '';
  #state: State = 'new';
  #queue: Promise<void> = Promise.resolve();
  #pending = false;
  /** The next pass dumps the links first (resync(), the periodic timer, reconfigure). */
  #fresh = false;
  #synced = false;
  #syncError: string | undefined;
  #devices = new Map<string, XdpDeviceStatus>();
  readonly #attach: AttachPass;
  readonly #setMetricsSource: ((s: XdpForwarder | undefined) => void) | undefined;

  constructor(p: XdpForwarderParams) {
    this.#p = p;
    this.#cfg = { ...p.config };
    const parts = forwarderParts({ ...p, netns: p.netns, cfg: this.#cfg });
    this.#ops = parts.ops;
    this.#attach = parts.attach;
    this.#mirror = parts.mirror;
    this.#routes = parts.routes;
    if (p.registry !== undefined) {
      const set = registerXdpMetrics(p.registry);
      this.#setMetricsSource = (s) => set(s && forwarderMetrics(s));
    }
  }

  get netns(): string | undefined {
    return this.#p.netns;
  }

  /**
   * Mounts the bpffs if needed, opens or creates the pinned maps, adopts pinned programs,
   * subscribes to link events, then attaches to every selected device (first sync). A
   * device whose attach fails (a foreign program, say) is reported, not fatal.
   */
  async start(): Promise<void> {
    if (this.#state !== 'new')
      throw new InvalidArgumentError(`XdpForwarder already ${this.#state}`);
    this.#state = 'starting';
    try {
      this.#nl = this.#p.netlink;
      if (this.#nl === undefined) {
        this.#nl = Handle.open(this.#p.netns === undefined ? {} : { netns: this.#p.netns });
        this.#ownNl = true;
      }
      const { records, mapsReplaced } = this.#ops.open();
      if (this.#p.ops === undefined) {
        const { netns, log, onSocketReopen } = this.#p;
        this.#features = XdpFeatures.open(netns, log, onSocketReopen, this.#clock);
      }
      this.#p.log.info(
        { records: records.map((r) => r.name), mapsReplaced },
        records.length > 0 ? 'xdp: adopting pinned programs' : 'xdp: no pinned programs',
      );
      if (this.#mode === 'bypass') {
        this.#p.log.warn(
          "xdp: xdp.nodePolicy bypass: frames forwarded in XDP skip the node's netfilter, tc and xfrm policy",
        );
      }
      // Links (the device feed's) decide the attachments; links, addresses, routes and
      // netconf (rp_filter, forwarding) changes what the program must know of the kernel.
      const inputs = (this.#inputs = new ForwarderInputs({
        netns: this.#p.netns,
        nl: this.#nl,
        log: this.#p.log,
        clock: this.#clock,
        devices: this.#p.devices,
        routes: this.#p.routes,
        mirror: this.#routes,
        schedule: (fresh) => this.#schedule(fresh),
        routesChanged: () => this.#routesChanged(),
        renew: () => this.#renew(),
        poll: () => this.#pollSysctls(),
      }));
      await inputs.start();
      this.#state = 'running';
      // a shared feed may not have read the last events yet: the first pass dumps
      await this.#enqueue(this.#p.devices !== undefined);
      if (this.#state !== 'running') return; // stopped while the first sync ran
      inputs.startTimers(this.#p.resyncIntervalMs ?? 30_000, this.#p.sysctlPollMs ?? 1000);
      this.#setMetricsSource?.(this);
    } catch (err) {
      // a start that fails leaves nothing attached or pinned behind
      await this.#shutdown(false);
      throw err;
    }
  }

  /**
   * Stops watching. With keepOnStop the programs stay attached and pinned (forwarding goes
   * on; the next start adopts them); without, fibkeeper's programs are detached and
   * unpinned. Idempotent.
   */
  async stop(): Promise<void> {
    await this.#shutdown(this.#cfg.keepOnStop);
  }

  /**
   * Detaches and unpins everything fibkeeper attached in this namespace and stops watching
   * (the running agent's `fibkeeper xdp detach`). Returns the devices detached. On a
   * forwarder that is not running (stopped with keepOnStop), detaches from the pins.
   */
  async detach(): Promise<string[]> {
    if (this.#state === 'new' || this.#state === 'stopped') {
      const { netns } = this.#p;
      return detachPinned({
        pinDir: this.#cfg.pinDir,
        log: this.#p.log,
        ...(netns ? { netns } : {}),
      });
    }
    const attached = this.status()
      .filter((d) => d.attached === 'ours')
      .map((d) => d.name);
    await this.#shutdown(false);
    return attached;
  }

  async #shutdown(keep: boolean): Promise<void> {
    if (this.#state === 'stopped') return;
    const wasRunning = this.#state !== 'new';
    this.#state = 'stopped';
    this.#inputs?.stop();
    await this.#queue.catch(() => undefined);
    this.#setMetricsSource?.(undefined);
    if (wasRunning) {
      if (keep) {
        this.#ops.close();
        this.#p.log.info('xdp: stopped; programs stay attached and pinned');
      } else {
        const names = this.#ops.destroy();
        this.#p.log.info({ devices: names }, 'xdp: detached and unpinned');
      }
    }
    this.#devices = new Map();
    this.#features?.close();
    this.#features = undefined;
    if (this.#ownNl) this.#nl?.close();
    this.#nl = undefined;
  }

  /** Resync now from a fresh dump of the links; resolves when done. */
  resync(): Promise<void> {
    return this.#enqueue(true);
  }

  /**
   * Applies a new configuration (a reload) and resyncs: devices that stop matching are
   * detached, new ones attached, a changed ipv6/missTrack swaps programs atomically, a changed
   * explicit mode re-attaches. pinDir cannot change while running (InvalidArgumentError).
   */
  async reconfigure(config: XdpForwarderConfig): Promise<void> {
    if (config.pinDir !== this.#cfg.pinDir) {
      throw new InvalidArgumentError('xdp.pinDir cannot change while the agent runs; restart it');
    }
    // the attach pass reads the same object: takes effect at the next pass
    Object.assign(this.#cfg, config, { devices: [...config.devices] });
    await this.#enqueue(true);
  }

  /** A pass soon; `fresh`: the device feed dumps first (not only its events). */
  #schedule(fresh = false): void {
    if (fresh) this.#fresh = true;
    if (this.#pending || this.#state !== 'running') return;
    void this.#enqueue();
  }

  /**
   * Route or rule events were applied to the route mirror: one write of what they changed,
   * after whatever pass runs now (events read together share it); none while a full pass
   * waits to run (it writes them too). Also after an event that changed no fact: the write
   * raises fk_state.rp_gen, so no cached reverse-path answer outlives a route change.
   */
  #routesChanged(): void {
    if (this.#routesPending || this.#state !== 'running') return;
    this.#routesPending = true;
    this.#queue = this.#queue.then(() => {
      this.#routesPending = false;
      if (this.#state !== 'running' || this.#pending) return;
      try {
        this.#mirror.routesChanged(this.#routes.facts());
        this.#routeWrites++;
      } catch (err) {
        this.#syncError = describeError(err);
        this.#p.log.error({ err: this.#syncError }, 'xdp: writing route changes failed');
        this.#schedule(); // a full pass writes everything again
      }
    });
  }

  /** Devices with a slot of their own (or :other) and fibkeeper's program attached. */
  #slotDevices(): SlotDevice[] {
    const out: SlotDevice[] = [];
    for (const d of this.#devices.values()) {
      if (d.attached === 'ours' && d.ifindex > 0 && d.slot !== undefined) {
        const p = d.policy?.applied ? d.policy : undefined;
        out.push({
          name: d.name,
          ifindex: d.ifindex,
          slot: d.slot,
          policy4: reasonIndex(p?.ipv4[0]),
          policy6: reasonIndex(p?.ipv6[0]),
        });
      }
    }
    return out;
  }

  get #clock(): Clock {
    return this.#p.clock ?? systemClock;
  }

  get #mode(): XdpNodePolicyMode {
    return this.#cfg.nodePolicy ?? 'respect';
  }

  /** The ifindexes of the devices the selection picks now (their tcx hooks are read). */
  #selectedIfindexes(): number[] {
    return [...this.#devices.values()].filter((d) => d.ifindex > 0).map((d) => d.ifindex);
  }

  async #readFeatures(): Promise<Map<number, bigint> | undefined> {
    const f = await this.#features?.read();
    this.#lastFeatures = f === undefined ? '' : JSON.stringify([...f].map(([k, v]) => [k, `${v}`]));
    return f;
  }

  /** The watch's deadline moved on, in turn with the passes (which move it too). */
  #renew(): void {
    if (this.#state !== 'running') return;
    this.#queue = this.#queue.then(() => {
      if (this.#state !== 'running') return;
      try {
        this.#mirror.renew();
      } catch (err) {
        this.#p.log.warn({ err: describeError(err) }, 'xdp: renewing the watch');
      }
    });
  }

  /** Sysctls and xdp_features change without events: looked at every sysctlPollMs. */
  #pollSysctls(): void {
    if (this.#pending || this.#state !== 'running') return;
    try {
      if (this.#mirror.sysctlsChanged(this.#slotDevices().map((d) => d.name))) {
        this.#schedule();
        return;
      }
    } catch (err) {
      this.#p.log.warn({ err: describeError(err) }, 'xdp: reading sysctls');
    }
    // the parts of the node's policy that raise no event: legacy iptables, tcx programs
    try {
      if (this.#inputs?.policy?.poll(this.#selectedIfindexes())) {
        this.#schedule();
        return;
      }
    } catch (err) {
      this.#p.log.warn({ err: describeError(err) }, 'xdp: reading iptables and tcx');
    }
    // after whatever sync runs now: one genetlink request at a time
    this.#queue = this.#queue.then(async () => {
      if (this.#state !== 'running' || this.#features === undefined) return;
      const last = this.#lastFeatures;
      try {
        const f = await this.#features.read();
        const now = f === undefined ? '' : JSON.stringify([...f].map(([k, v]) => [k, `${v}`]));
        if (now !== last) this.#schedule();
      } catch (err) {
        this.#p.log.warn({ err: describeError(err) }, 'xdp: reading xdp_features');
      }
    });
  }

  #enqueue(fresh = false): Promise<void> {
    this.#pending = true;
    if (fresh) this.#fresh = true;
    const run = this.#queue.then(async () => {
      this.#pending = false;
      const dump = this.#fresh;
      this.#fresh = false;
      const feed = this.#inputs?.feed;
      if (this.#state !== 'running' || this.#nl === undefined || feed === undefined) return;
      try {
        if (dump) await feed.refresh();
        const links = feed.links();
        const features = await this.#readFeatures();
        if (this.#state !== 'running') return;
        const sel = { devices: this.#cfg.devices, holderName: this.#cfg.holderName };
        const watcher = this.#inputs?.policy;
        if (watcher === undefined) return;
        const { policy, names } = await readNodePolicy(watcher, links, sel);
        if (this.#state !== 'running') return;
        const egress = egressReasons(policy, names, this.#mode);
        this.#devices = this.#attach.run(links, features, new Set(egress.keys()));
        for (const d of this.#devices.values()) d.policy = policyStatus(policy, d.name, this.#mode);
        this.#mirror.refresh(this.#routes.facts(), {
          addresses: feed.addresses(),
          devices: this.#slotDevices(),
          egress,
        });
        this.#passes++;
        this.#p.onPass?.(this.status());
        this.#syncError = undefined;
      } catch (err) {
        this.#syncError = describeError(err);
        this.#p.log.error({ err: this.#syncError }, 'xdp: sync failed');
      }
      this.#synced = true;
    });
    this.#queue = run;
    return run;
  }

  // --- reading ----------------------------------------------------------------------------

  /** Per device: attachment, program, link, slot; gone devices with a kept record too. */
  status(): XdpDeviceStatus[] {
    return [...this.#devices.values()].map((d) => ({ ...d }));
  }

  /** Counters per device slot (and ":other"), summed over CPUs, read now. */
  counters(): XdpDeviceCounters[] {
    if (this.#state !== 'running') return [];
    return readCounters(this.#ops, (name) => this.#devices.get(name)?.ifindex ?? 0);
  }

  /** Redirect errors can be counted on this kernel (the tracer is loaded). */
  redirectErrorsCounted(): boolean {
    return this.#state === 'running' && this.#ops.readRedirectErrors() !== undefined;
  }

  /** The NO_NEIGH miss map as it is now. */
  readMisses(): MissEntry[] {
    return this.#state === 'running' ? this.#ops.readMisses() : [];
  }

  /** Deletes consumed miss entries; returns how many were there. */
  deleteMisses(keys: readonly MissKey[]): number {
    if (this.#state !== 'running') return 0;
    let n = 0;
    for (const k of keys) if (this.#ops.deleteMiss(k)) n++;
    return n;
  }

  /** Reads and deletes every miss entry (what the miss tracker consumes). */
  takeMisses(): MissEntry[] {
    const misses = this.readMisses();
    this.deleteMisses(misses);
    return misses;
  }

  /** respect or bypass (xdp.nodePolicy). */
  nodePolicyMode(): XdpNodePolicyMode {
    return this.#mode;
  }

  /** Route-only writes since start (route and rule events, no full pass). */
  get routeWrites(): number {
    return this.#routeWrites;
  }

  /** Route facts kept by the mirror: for tests, the facts now (kstate.ts RouteFacts). */
  routeFacts(): ReturnType<RouteMirror['facts']> {
    return this.#routes.facts();
  }

  /** Passes completed since start (each read the kernel and wrote the maps). */
  get passes(): number {
    return this.#passes;
  }

  /** Ready: started and the first sync done. */
  ready(): XdpHealth {
    const reasons: string[] = [];
    if (this.#state !== 'running') reasons.push(`forwarder ${this.#state}`);
    else if (!this.#synced) reasons.push('first sync not done');
    return { ok: reasons.length === 0, reasons };
  }

  /** Alive: its genetlink socket answers (it is asked every sysctlPollMs). For /livez. */
  liveness(): XdpHealth {
    const why = this.#features?.silence(20_000);
    return why === undefined ? { ok: true, reasons: [] } : { ok: false, reasons: [`xdp: ${why}`] };
  }

  /** Healthy: ready, the last sync worked and every selected device has the program. */
  health(): XdpHealth {
    const r = this.ready();
    const reasons = [...r.reasons, ...(this.#inputs?.policy?.liveness().reasons ?? [])];
    if (this.#syncError !== undefined) reasons.push(`sync: ${this.#syncError}`);
    for (const d of this.#devices.values()) {
      if (d.error !== undefined) reasons.push(`${d.name}: ${d.error}`);
    }
    return { ok: reasons.length === 0, reasons };
  }
}
