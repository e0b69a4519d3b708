// The neighbor metric group (src/neighbor/metrics.ts): names under fibkeeper_neighbor_,
// counters ending in _total, bounded labels, gauges read at scrape time.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { NeighborMetrics } from './metrics.js';

describe('neighbor metrics', () => {
  it('exposes every figure under fibkeeper_neighbor_ with bounded labels', async () => {
    const registry = new Registry();
    const m = new NeighborMetrics({ registry });
    m.setSource({
      forwardableIps: () => 3,
      selectedDevices: () => 2,
      desiredByStatus: () => ({ pending: 1, done: 4, error: 0 }),
      kernelEntriesByState: () =>
        new Map([
          ['reachable', 4],
          ['failed', 1],
        ]),
      foreignEntries: () => 2,
      refreshMode: () => 'legacy',
      managedOverLimit: () => false,
      unusableByDevice: () =>
        new Map([
          ['eth0', 0],
          ['eth1', 2],
        ]),
    });
    m.inserted(4);
    m.reinserted('deleted', 2);
    m.refreshed(1);
    m.deleted('prune', 1);
    m.lookups('nexthop', 5);
    m.resync('neighbors', 'overflow');
    m.reconcileErrors('neighbors', 'update', 1);
    m.reconcileDuration('neighbors', 'update', 0.002);
    m.rateLimited('neighbors', 1);
    const text = await registry.metrics();
    for (const line of [
      'fibkeeper_neighbor_forwardable_ips 3',
      'fibkeeper_neighbor_selected_devices 2',
      'fibkeeper_neighbor_desired_entries{status="done"} 4',
      'fibkeeper_neighbor_kernel_entries{state="reachable"} 4',
      'fibkeeper_neighbor_foreign_entries 2',
      'fibkeeper_neighbor_unusable_entries{device="eth0"} 0',
      'fibkeeper_neighbor_unusable_entries{device="eth1"} 2',
      'fibkeeper_neighbor_refresh_mode{mode="legacy"} 1',
      'fibkeeper_neighbor_refresh_mode{mode="managed"} 0',
      'fibkeeper_neighbor_managed_over_limit 0',
      'fibkeeper_neighbor_mode_switches_total{to="managed"} 0',
      'fibkeeper_neighbor_mode_switches_total{to="legacy"} 0',
      'fibkeeper_neighbor_inserts_total 4',
      'fibkeeper_neighbor_reinserts_total{cause="deleted"} 2',
      'fibkeeper_neighbor_refreshes_total 1',
      'fibkeeper_neighbor_deletes_total{source="prune"} 1',
      'fibkeeper_neighbor_nexthop_lookups_total{result="nexthop"} 5',
      'fibkeeper_neighbor_resyncs_total{table="neighbors",reason="overflow"} 1',
      'fibkeeper_neighbor_reconcile_errors_total{op="update"} 1',
      'fibkeeper_neighbor_reconcile_duration_seconds_count{op="update"} 1',
      'fibkeeper_neighbor_rate_limited_total 1',
    ]) {
      expect(text).toContain(line);
    }
    for (const name of text.matchAll(/^# TYPE (\S+) (\S+)/gm)) {
      expect(name[1]).toMatch(/^fibkeeper_neighbor_/);
      if (name[2] === 'counter') expect(name[1]).toMatch(/_total$/);
      else expect(name[1]).not.toMatch(/_total$/);
    }
    expect(m.counters()).toMatchObject({ inserts: 4, resyncs: { 'neighbors/overflow': 1 } });
  });
});
