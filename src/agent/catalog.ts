// Every fibkeeper metric with its type, labels and meaning, read from the metric groups
// themselves (registered on a scratch registry), for the README and its test. It sits in
// the agent, above every subsystem, and reads each group through its subsystem's index.ts.
import { registerBgpMetrics } from '../bgp/index.js';
import { Registry } from '../metrics/index.js';
import { registerClusterMetrics } from '../cluster/index.js';
import { registerExtipMetrics } from '../extip/index.js';
import { registerXdpMetrics } from '../fib/index.js';
import { NeighborMetrics } from '../neighbor/index.js';
import { registerAgentMetrics, registerMissTrackerMetrics } from './metrics.js';

export interface MetricInfo {
  name: string;
  type: string;
  labels: string[];
  help: string;
}

export async function metricCatalog(): Promise<MetricInfo[]> {
  const registry = new Registry();
  registerAgentMetrics(
    registry,
    () => true,
    () => 0,
    () => true,
  );
  registerMissTrackerMetrics(registry, () => 0);
  registerExtipMetrics(registry);
  registerClusterMetrics(registry);
  new NeighborMetrics({ registry });
  registerXdpMetrics(registry);
  registerBgpMetrics(registry, async () => []);
  const json = await registry.getMetricsAsJSON();
  const info = (name: string) =>
    (registry.getSingleMetric(name) as unknown as { labelNames?: string[] } | undefined)
      ?.labelNames ?? [];
  const out = json.map((m) => ({
    name: m.name,
    type: String(m.type),
    labels: [...info(m.name)],
    help: m.help,
  }));
  out.push({
    name: 'fibkeeper_build_info',
    type: 'gauge',
    labels: ['version', 'node'],
    help: 'Always 1; the labels say which fibkeeper and Node.js are running.',
  });
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The README's metric table rows (between `<!-- metrics:begin -->` and `<!-- metrics:end -->`). */
export async function metricsMarkdown(): Promise<string> {
  return (await metricCatalog())
    .map(
      (m) =>
        `| \`${m.name}\` | ${m.type} | ${m.labels.join(', ') || '—'} | ${m.help.replace(/\|/g, '\\|')} |`,
    )
    .join('\n');
}
