// The agent's BGP part: a BgpSpeaker (src/bgp) that announces the external IPs the node
// holds, node-local and cluster ones alike — those the external-IP subsystem lists as
// assigned (on the holder, so held by this node). It learns of changes from the agent's
// event log (every extip.* and cluster.* event asks for a sync, after the change that
// emitted it is done) and checks the set again every `resyncMs` in case an event said
// nothing it needed. Started after the external IPs and the cluster member, stopped before
// them (the peers withdraw first).
import type { Registry } from 'prom-client';
import { BgpSpeaker, registerBgpMetrics } from '../bgp/index.js';
import { checkBgpOptions, type FibkeeperConfig } from '../config/index.js';
import type { EventLog } from '../events/index.js';
import type { ExternalIpSubsystem } from '../extip/index.js';
import type { Logger } from '../log/index.js';
import { systemClock, type Clock, type TimerHandle } from '../sched/index.js';

export interface AgentBgpParams {
  cfg: FibkeeperConfig;
  netns?: string;
  extip: ExternalIpSubsystem;
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
  #timer: TimerHandle | undefined;
  #pending = false;
  #stopped = false;
  readonly #clock: Clock;
  readonly #p: AgentBgpParams;

  constructor(p: AgentBgpParams) {
    this.#p = p;
    this.#clock = p.clock ?? systemClock;
    const peers = checkBgpOptions(p.cfg);
    const held = (): string[] =>
      p.extip
        .list()
        .filter((s) => s.state === 'assigned')
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

  /** A sync after the emitting change is done (the event comes before the state moves). */
  #soon(): void {
    if (this.#pending || this.#stopped) return;
    this.#pending = true;
    this.#clock.setTimeout(() => {
      this.#pending = false;
      void this.speaker.sync();
    }, 0);
  }

  #tick(): void {
    this.#timer = this.#clock.setTimeout(() => {
      if (this.#stopped) return;
      void this.speaker.sync();
      this.#tick();
    }, this.#p.resyncMs ?? 2000);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unfollow?.();
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    await this.speaker.stop();
  }
}
