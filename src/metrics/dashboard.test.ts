import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { metricCatalog } from './index.js';

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
}

describe('Grafana dashboard (deploy/grafana/fibkeeper.json)', () => {
  it('queries only metrics fibkeeper exports, and covers every group', async () => {
    const dash = JSON.parse(
      readFileSync(new URL('../../deploy/grafana/fibkeeper.json', import.meta.url), 'utf8'),
    ) as {
      panels: Panel[];
    };
    const known = new Set((await metricCatalog()).map((m) => m.name));
    const used = new Set<string>();
    for (const p of dash.panels) {
      for (const t of p.targets ?? []) {
        for (const m of t.expr.match(/fibkeeper_[a-z0-9_]+/g) ?? []) {
          const base = m.replace(/_(bucket|sum|count)$/, '');
          expect(known.has(base), `${p.title}: ${m}`).toBe(true);
          used.add(base);
        }
      }
    }
    for (const group of [
      'fibkeeper_xdp_fib_lookup_packets_total',
      'fibkeeper_neighbor_kernel_entries',
      'fibkeeper_neighbor_reconcile_errors_total',
      'fibkeeper_extip_announcements_sent_total',
    ]) {
      expect(used.has(group), group).toBe(true);
    }
  });
});
