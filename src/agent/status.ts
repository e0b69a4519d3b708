// The agent's status document: what `fibkeeper status` shows and GET /v1/status returns.
// It is a contract (docs/status.md documents every field; test/build/status-doc.test.ts
// checks these types against it and test/agent/e2e.netns.test.ts a running agent's
// document): fields are added, never renamed or retyped within one schemaVersion.
import { describeError } from '../errors/index.js';
import { readClusterSysctls, type ExternalIpStatus, type SysctlState } from '../extip/index.js';
import type { XdpDeviceCounters, XdpDeviceStatus, XdpNodePolicyMode } from '../fib/index.js';
import type { ClusterStatus } from '../cluster/index.js';
import type { NeighborStatus, StatusQuery } from '../neighbor/index.js';
import type { IpExplanation } from './explain.js';
import type { SkippedEntry } from './state.js';
import type { AgentPhase, AgentView } from './view.js';

/**
 * The status document's schema version: raised when a field is removed, renamed or changes
 * its type or meaning (adding a field keeps it).
 */
export const STATUS_SCHEMA_VERSION = 1;

/** The kernel as the probe saw it at start. */
export interface KernelSection {
  release: string;
  /** Needed features the kernel lacks (the agent does not start with any). */
  missing: string[];
  /** Needed features assumed present from the kernel version (probe inconclusive). */
  assumed: string[];
}

/** The XDP forwarder: every selected device's attachment, and the counters read now. */
export interface XdpSection {
  /** xdp.nodePolicy: respect (the node's policy sends its traffic to the kernel) or bypass. */
  nodePolicy: XdpNodePolicyMode;
  devices: XdpDeviceStatus[];
  counters: XdpDeviceCounters[];
}

/** The neighbor subsystem (src/neighbor/status.ts). */
export type NeighborSection = NeighborStatus;

/** External IPs: the holder device, the interface they are announced from, each IP. */
export interface ExtipSection {
  holder: { name: string; ifindex: number };
  externalInterface: { name: string; ifindex: number; mac: string; up: boolean } | null;
  ips: ExternalIpStatus[];
}

export interface MissTrackerSection {
  /** Next hops learned from XDP's misses, still tracked. */
  tracked: number;
}

/** Cluster mode: this member's status, the IP list cut at the limit, the quiet sysctls. */
export interface ClusterSection extends ClusterStatus {
  /** Cluster IPs in all (`ips` may be cut at the limit). */
  totalIps: number;
  /** The sysctls that keep the kernel quiet for holder addresses, or why they are unknown. */
  sysctls: SysctlState[] | string;
}

export interface StateFileSection {
  path: string | null;
  skipped: SkippedEntry[];
  /** Changes waiting in the write queue. */
  queued: number;
}

/** What a filtered document was asked for (GET /v1/status?ip=&owner=&device=). */
export interface QuerySection {
  ip: string | null;
  owner: string | null;
  device: string | null;
  state: string | null;
}

/** The whole document; a section is null while its subsystem is off (or not started). */
export interface StatusDocument {
  schemaVersion: typeof STATUS_SCHEMA_VERSION;
  /** The agent's version. */
  version: string;
  netns: string | null;
  phase: AgentPhase;
  startedAt: string;
  ready: boolean;
  notReady: string[];
  healthy: boolean;
  unhealthy: string[];
  kernel: KernelSection | null;
  xdp: XdpSection | null;
  neighbor: NeighborSection | null;
  extip: ExtipSection | null;
  missTracker: MissTrackerSection | null;
  cluster: ClusterSection | null;
  stateFile: StateFileSection;
  /** The filter of the neighbor rows, or null for the whole document. */
  query: QuerySection | null;
  /** With ?ip=: that IP explained (route, external IP state, XDP, misses), else null. */
  explain: IpExplanation | null;
}

export interface StatusOptions {
  /** Most rows per table. */
  limit?: number;
  /** Only the neighbor rows of this IP, owner or device (ifindex resolved by the caller). */
  query?: { ip?: string; owner?: string; device?: string; state?: string; ifindex?: number };
  /** The explanation of query.ip, made by the caller (it asks the kernel). */
  explain?: IpExplanation;
}

export function buildStatus(agent: AgentView, opts: StatusOptions = {}): StatusDocument {
  const limit = opts.limit ?? 1000;
  const ready = agent.ready();
  const health = agent.health();
  const probe = agent.probeReport;
  return {
    schemaVersion: STATUS_SCHEMA_VERSION,
    version: agent.version,
    netns: agent.netns ?? null,
    phase: agent.phase,
    startedAt: agent.startedAt.toISOString(),
    ready: ready.ok,
    notReady: ready.reasons,
    healthy: health.ok,
    unhealthy: health.reasons,
    kernel: probe
      ? {
          release: probe.kernel,
          missing: probe.missing.map((f) => f.name),
          assumed: probe.assumed.map((f) => f.name),
        }
      : null,
    xdp: agent.xdp
      ? {
          nodePolicy: agent.xdp.nodePolicyMode(),
          devices: agent.xdp.status(),
          counters: agent.xdp.counters(),
        }
      : null,
    neighbor: agent.neighbor ? agent.neighbor.status({ ...neighborQuery(opts), limit }) : null,
    extip: agent.extip
      ? {
          holder: agent.extip.holder,
          externalInterface: agent.extip.externalInterface ?? null,
          ips: agent.extip.list().slice(0, limit),
        }
      : null,
    missTracker: agent.missTracker ? { tracked: agent.missTracker.tracked } : null,
    cluster: clusterStatus(agent, limit),
    stateFile: {
      path: agent.cfg.stateFile || null,
      skipped: agent.skipped.slice(0, limit),
      queued: agent.control.depth,
    },
    query: opts.query
      ? {
          ip: opts.query.ip ?? null,
          owner: opts.query.owner ?? null,
          device: opts.query.device ?? null,
          state: opts.query.state ?? null,
        }
      : null,
    explain: opts.explain ?? null,
  };
}

/** The neighbor subsystem's StatusQuery of a GET /v1/status?ip=&owner=&device=&state=. */
function neighborQuery(opts: StatusOptions): StatusQuery {
  const q = opts.query;
  if (q === undefined) return {};
  return {
    ...(q.ip !== undefined ? { ip: q.ip } : {}),
    ...(q.owner !== undefined ? { owner: q.owner } : {}),
    ...(q.ifindex !== undefined ? { ifindex: q.ifindex } : {}),
    ...(q.state !== undefined ? { state: q.state } : {}),
  };
}

/**
 * Cluster mode: this member's lease and view (members with their lease age, every cluster IP
 * with its owner, placement and last move), and the sysctls that keep the kernel quiet.
 */
export function clusterStatus(agent: AgentView, limit = 1000): ClusterSection | null {
  const c = agent.cluster;
  if (!c) return null;
  const st = c.status();
  const ext = agent.extip?.externalInterface;
  let sysctls: SysctlState[] | string;
  try {
    sysctls = ext ? readClusterSysctls(agent.netns, ext.name) : [];
  } catch (err) {
    sysctls = describeError(err);
  }
  return { ...st, ips: st.ips.slice(0, limit), totalIps: st.ips.length, sysctls };
}
