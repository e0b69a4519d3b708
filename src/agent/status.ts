// The agent's status document: what `fibkeeper status` shows and GET /v1/status returns.
import type { Agent } from './agent.js';

export interface StatusOptions {
  /** Most rows per table. */
  limit?: number;
}

export function buildStatus(agent: Agent, opts: StatusOptions = {}): Record<string, unknown> {
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
    stateFile: {
      path: agent.cfg.stateFile || null,
      skipped: agent.skipped.slice(0, limit),
      queued: agent.control.depth,
    },
  };
}
