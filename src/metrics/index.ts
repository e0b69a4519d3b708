// Prometheus metrics: the registry (default process metrics plus `fibkeeper_build_info`)
// and the HTTP endpoint. Each metric group lives with the subsystem it describes
// (src/<subsystem>/metrics.ts) and takes the registry; BPF counters are read lazily in
// collect(). The catalog of every metric is the agent's (src/agent/catalog.ts).
import { Gauge, Registry, collectDefaultMetrics } from './prom.js';

export { Counter, Gauge, Histogram, Registry } from './prom.js';

export { MetricsServer, type HealthReport, type MetricsServerParams } from './server.js';
/** Kept here for the control API's TCP listener (one parser: src/ipaddr). */
export { parseHostPort } from '../ipaddr/index.js';

/** A registry with the default process metrics and `fibkeeper_build_info`. */
export function createRegistry(version: string, opts: { processMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.processMetrics ?? true) {
    collectDefaultMetrics({ register: registry });
    // These three gauges duplicate nodejs_active_{handles,requests,resources} and break the
    // naming rule promtool checks (only counters end in _total).
    for (const name of ['handles', 'requests', 'resources']) {
      registry.removeSingleMetric(`nodejs_active_${name}_total`);
    }
  }
  const info = new Gauge({
    name: 'fibkeeper_build_info',
    help: 'Always 1; the labels say which fibkeeper and Node.js are running.',
    labelNames: ['version', 'node'],
    registers: [registry],
  });
  info.set({ version, node: process.version }, 1);
  return registry;
}
