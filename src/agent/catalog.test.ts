import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerClusterMetrics } from '../cluster/index.js';
import { registerExtipMetrics } from '../extip/index.js';
import { NeighborMetrics } from '../neighbor/index.js';
import { metricCatalog, metricsMarkdown } from './catalog.js';
import { registerAgentMetrics } from './metrics.js';

describe('metric catalog', () => {
  it('follows the naming rules: fibkeeper_ prefix, counters end in _total, no IP labels', async () => {
    const all = await metricCatalog();
    expect(all.length).toBeGreaterThan(30);
    for (const m of all) {
      expect(m.name).toMatch(/^fibkeeper_[a-z0-9_]+$/);
      expect(m.name.endsWith('_total'), m.name).toBe(m.type === 'counter');
      expect(m.help.length, m.name).toBeGreaterThan(10);
      for (const l of m.labels)
        expect(['ip', 'dst', 'nexthop', 'address', 'addr']).not.toContain(l);
    }
  });

  it('is the README metric table (node scripts/update-readme.mjs regenerates it)', async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const m = /<!-- metrics:begin -->\n([\s\S]*?)\n?<!-- metrics:end -->/.exec(readme);
    expect(m?.[1]).toBe(await metricsMarkdown());
  });
});

describe('labelled counters', () => {
  it('start at zero for every label value they can take, before the first event', async () => {
    const registry = new Registry();
    registerAgentMetrics(registry, () => true);
    registerExtipMetrics(registry);
    registerClusterMetrics(registry);
    new NeighborMetrics({ registry });
    const json = await registry.getMetricsAsJSON();
    const series = (name: string) =>
      json
        .find((m) => m.name === name)!
        .values.filter((v) => !('metricName' in v) || !String(v.metricName).endsWith('_bucket'))
        .map((v) => Object.values(v.labels).join('/'))
        .sort();
    for (const m of json) {
      const labels = (registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] })
        .labelNames;
      if (String(m.type) !== 'counter' || !labels?.length) continue;
      expect(m.values.length, `${m.name} has no series before its first event`).toBeGreaterThan(0);
      for (const v of m.values) expect(v.value, m.name).toBe(0);
    }
    expect(series('fibkeeper_config_reloads_total')).toEqual(['error', 'ok']);
    expect(series('fibkeeper_neighbor_reinserts_total')).toEqual(['deleted', 'failed']);
    expect(series('fibkeeper_neighbor_deletes_total')).toEqual(['prune', 'reconcile']);
    expect(series('fibkeeper_neighbor_nexthop_lookups_total')).toEqual([
      'error',
      'nexthop',
      'unreachable',
    ]);
    expect(series('fibkeeper_neighbor_reconcile_errors_total')).toEqual([
      'delete',
      'prune',
      'update',
    ]);
    expect(series('fibkeeper_extip_repairs_total')).toEqual([
      'address',
      'foreign',
      'holder',
      'holder-up',
      'sysctl',
    ]);
    expect(series('fibkeeper_extip_errors_total')).toEqual(
      [
        'announce',
        'assign',
        'dad',
        'holder',
        'listen',
        'repair',
        'resync',
        'respond',
        'unassign',
      ].sort(),
    );
    expect(series('fibkeeper_extip_resyncs_total')).toEqual(['overflow', 'periodic']);
    expect(series('fibkeeper_extip_announcements_sent_total')).toHaveLength(2 * 5);
    expect(series('fibkeeper_extip_dad_total')).toEqual([
      'ipv4/duplicate',
      'ipv4/error',
      'ipv4/unique',
      'ipv6/duplicate',
      'ipv6/error',
      'ipv6/unique',
    ]);
    // every (table, reason) pair the neighbor subsystem counts
    expect(series('fibkeeper_neighbor_resyncs_total')).toEqual(
      [
        'devices/startup',
        'devices/overflow',
        'devices/dump-interrupted',
        'routes/startup',
        'routes/overflow',
        'routes/dump-interrupted',
        'routes/interval',
        'routes/device',
        'neighbors/startup',
        'neighbors/overflow',
        'neighbors/dump-interrupted',
        'desired/interval',
        'desired/device',
        'desired/rules',
      ].sort(),
    );
  });
});
