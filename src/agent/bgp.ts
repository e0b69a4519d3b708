// The agent's BGP part: a BgpSpeaker (src/bgp) that announces the external IPs the node
// holds, node-local and cluster ones alike — those the external-IP subsystem lists as
// assigned (on the holder, so held by this node). It learns of changes from the agent's
// event log (every extip.* and cluster.* event asks for a sync, after the change that
// emitted it is done) and checks the set again every `resyncMs` in case an event said
// nothing it needed. Started after the external IPs and the cluster member, stopped before
// them (the peers withdraw first).
import type { Registry } from 'prom-client';
import { BgpSpeaker, registerBgpMetrics, type BgpPeerStatus } from '../bgp/index.js';
import { checkBgpOptions, type FibkeeperConfig } from '../config/index.js';
import type { EventLog } from '../events/index.js';
import type { ExternalIpSubsystem } from '../extip/index.js';
import type { AgentEvents } from './events.js';
import type { Logger } from '../log/index.js';
import { systemClock, Timer, type Clock } from '../sched/index.js';

export interface AgentBgpParams {
  cfg: FibkeeperConfig;
  netns?: string;
  extip: ExternalIpSubsystem;
  /** Cluster mode: held, but not to be announced (an active-active IP on its way out). */
  withdrawing?: (ip: string) => boolean;
  events: EventLog;
  registry: Registry;
  log: Logger;
  clock?: Clock;
  /** Level check of the held set besides the events. */
  resyncMs?: number;
}

export class AgentBgp {
  readonly speaker: BgpSpeaker;
  #unfollow: (() => void) | undefined;
  readonly #resync: Timer;
  readonly #sync: Timer;
  #pending = false;
  /** The sessions as last read (every resync), for health(). */
  #sessions: BgpPeerStatus[] = [];
  #stopped = false;
  readonly #clock: Clock;
  readonly #p: AgentBgpParams;

  constructor(p: AgentBgpParams) {
    this.#p = p;
    this.#clock = p.clock ?? systemClock;
    this.#resync = new Timer(this.#clock);
    this.#sync = new Timer(this.#clock);
    const peers = checkBgpOptions(p.cfg);
    const held = (): string[] =>
      p.extip
        .list()
        .filter((s) => s.state === 'assigned' && p.withdrawing?.(s.ip) !== true)
        .map((s) => s.ip);
    let speaker: BgpSpeaker | undefined;
    const metrics = registerBgpMetrics(p.registry, async () =>
      ((await speaker?.sessions()) ?? []).map((s) => ({
        peer: s.protocol,
        up: s.session === 'Established',
        exported: s.advertised,
      })),
    );
    speaker = this.speaker = new BgpSpeaker({
      config: p.cfg.bgp,
      peers,
      ...(p.netns !== undefined ? { netns: p.netns } : {}),
      held,
      clock: this.#clock,
      log: p.log,
      metrics,
    });
  }

  async start(): Promise<void> {
    await this.speaker.start();
    this.#unfollow = this.#p.events.follow((e) => {
      if (e.type.startsWith('extip.') || e.type.startsWith('cluster.')) this.#soon();
    });
    this.#tick();
    this.#soon(); // what changed while the daemon started
  }

  /** The held set changed in a way no event tells (an active-active IP withdrawn). */
  changed(): void {
    this.#soon();
  }

  /** A sync after the emitting change is done (the event comes before the state moves). */
  #soon(): void {
    if (this.#pending || this.#stopped) return;
    this.#pending = true;
    this.#sync.start(0, () => {
      this.#pending = false;
      void this.speaker.sync();
    });
  }

  #tick(): void {
    this.#resync.start(this.#p.resyncMs ?? 2000, () => {
      if (this.#stopped) return;
      void this.speaker.sync();
      void this.speaker.sessions().then(
        (s) => (this.#sessions = s),
        () => (this.#sessions = []),
      );
      this.#tick();
    });
  }

  /**
   * For /healthz: the daemon not running, each peer whose session is not established (with
   * the daemon's last error). As of the last resync.
   */
  problems(): string[] {
    if (this.speaker.daemon.pid === undefined) return ['bgp: the daemon is not running'];
    return this.#sessions
      .filter((s) => s.session !== 'Established')
      .map((s) => `bgp: peer ${s.address} ${s.session}${s.lastError ? `: ${s.lastError}` : ''}`);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unfollow?.();
    this.#resync.cancel();
    this.#sync.cancel();
    await this.speaker.stop();
  }
}

/**
 * The agent's hook: creates the BGP part over the agent's external IPs, events, registry and
 * log, registers its stop (before its start, so a failed start is stopped too), starts it.
 */
export async function startBgp(
  agent: {
    cfg: FibkeeperConfig;
    netns: string | undefined;
    extip: ExternalIpSubsystem | undefined;
    cluster: { member: { withdrawing(ip: string): boolean } } | undefined;
    events: AgentEvents;
    registry: Registry;
    log: Logger;
  },
  stoppers: (() => Promise<void> | void)[],
): Promise<AgentBgp> {
  if (agent.extip === undefined) throw new Error('bgp needs the external IPs (extip.enabled)');
  const b = new AgentBgp({
    cfg: agent.cfg,
    ...(agent.netns !== undefined ? { netns: agent.netns } : {}),
    extip: agent.extip,
    ...(agent.cluster
      ? { withdrawing: (ip: string) => agent.cluster!.member.withdrawing(ip) }
      : {}),
    events: agent.events.log,
    registry: agent.registry,
    log: agent.log.child({ component: 'bgp' }),
  });
  stoppers.push(() => b.stop());
  await b.start();
  return b;
}
