// What the control API's handlers, the status document and the config reload see of the
// agent: an interface that the Agent implements, so that they depend on it and not on the
// class that wires them in (agent.ts imports them; nothing here imports agent.ts).
import type { FibkeeperConfig } from '../config/index.js';
import type { ExternalIpSubsystem } from '../extip/index.js';
import type { XdpForwarder, XdpForwarderConfig } from '../fib/index.js';
import type { Logger } from '../log/index.js';
import type { HealthReport } from '../metrics/index.js';
import type { NeighborSubsystem } from '../neighbor/index.js';
import type { DeviceFeed, NetlinkHandle } from '../netlink/index.js';
import type { ProbeReport } from '../probe/index.js';
import type { AgentBgp } from './bgp.js';
import type { AgentCluster } from './cluster.js';
import type { ControlPlane } from './control.js';
import type { AgentEvents } from './events.js';
import type { AgentMetrics } from './metrics.js';
import type { MissTracker } from './miss-tracker.js';
import type { RecentMisses } from './misses.js';
import type { SkippedEntry, StateStore } from './state.js';

export type AgentPhase = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** The running agent as its handlers, status and reload read it (undefined: subsystem off). */
export interface AgentView {
  readonly version: string;
  readonly netns: string | undefined;
  readonly phase: AgentPhase;
  readonly startedAt: Date;
  readonly log: Logger;
  readonly metrics: AgentMetrics;
  readonly probeReport: ProbeReport | undefined;
  readonly neighbor: NeighborSubsystem | undefined;
  readonly extip: ExternalIpSubsystem | undefined;
  readonly xdp: XdpForwarder | undefined;
  readonly missTracker: MissTracker | undefined;
  readonly cluster: AgentCluster | undefined;
  readonly bgp: AgentBgp | undefined;
  readonly store: StateStore;
  readonly control: ControlPlane;
  /** What the agent did and saw, for GET /v1/events. */
  readonly events: AgentEvents;
  /** NO_NEIGH destinations taken from the miss map lately (`status IP`). */
  readonly misses: RecentMisses;
  /** The namespace's links and addresses (after start). */
  readonly devices: DeviceFeed | undefined;
  /** The request socket (after start). */
  readonly netlink: NetlinkHandle | undefined;
  /** The configuration in force (a reload replaces it). */
  cfg: FibkeeperConfig;
  /** Entries of the state file not applied at the last start or reload (a reload sets them). */
  skipped: SkippedEntry[];
  /** Throws ClosedError (503) unless the agent runs. */
  assertRunning(): void;
  ready(): HealthReport;
  health(): HealthReport;
  /** The forwarder's settings for a configuration. */
  xdpConfig(cfg: FibkeeperConfig): XdpForwarderConfig;
  /** One log line per skipped entry, then a summary. */
  reportSkipped(msg: string): void;
}
