// The agent's status document: what `fibkeeper status` shows and GET /v1/status returns.
import { describeError } from '../errors/index.js';
import { readClusterSysctls } from '../extip/index.js';
import type { AgentView } from './view.js';

export interface StatusOptions {
  /** Most rows per table. */
  limit?: number;
}

export function buildStatus(agent: AgentView, opts: StatusOptions = {}): Record<string, unknown> {
  const limit = opts.limit ?? 1000;
  const ready = agent.ready();
  const health = agent.health();
  const probe = agent.probeReport;
  return {
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
    xdp: agent.xdp ? { devices: agent.xdp.status(), counters: agent.xdp.counters() } : null,
    neighbor: agent.neighbor ? agent.neighbor.status({ limit }) : null,
    extip: agent.extip
      ? {
          holder: agent.extip.holder,
          externalInterface: agent.extip.externalInterface ?? null,
          ips: agent.extip.list().slice(0, limit),
        }
      : null,
    missTracker: agent.missTracker ? { tracked: agent.missTracker.tracked } : null,
    cluster: agent.cluster ? clusterStatus(agent, limit) : null,
    stateFile: {
      path: agent.cfg.stateFile || null,
      skipped: agent.skipped.slice(0, limit),
      queued: agent.control.depth,
    },
  };
}

/**
 * Cluster mode: this member's lease and view (members with their lease age, every cluster IP
 * with its owner, placement and last move), and the sysctls that keep the kernel quiet.
 */
export function clusterStatus(agent: AgentView, limit = 1000): Record<string, unknown> | null {
  const c = agent.cluster;
  if (!c) return null;
  const st = c.status();
  const ext = agent.extip?.externalInterface;
  let sysctls: unknown;
  try {
    sysctls = ext ? readClusterSysctls(agent.netns, ext.name) : [];
  } catch (err) {
    sysctls = describeError(err);
  }
  return { ...st, ips: st.ips.slice(0, limit), totalIps: st.ips.length, sysctls };
}
