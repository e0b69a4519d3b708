import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { metricCatalog } from '../agent/index.js';

interface Target {
  expr: string;
  datasource?: { type: string; uid: string };
}
interface Panel {
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  __inputs?: unknown;
  templating: { list: { name: string; type: string; query?: string; datasource?: unknown }[] };
  panels: Panel[];
}

const FILE = new URL('../../deploy/grafana/fibkeeper.json', import.meta.url);
const text = readFileSync(FILE, 'utf8');
const dash = JSON.parse(text) as Dashboard;
const DS = { type: 'prometheus', uid: '${datasource}' };

describe('Grafana dashboard (deploy/grafana/fibkeeper.json)', () => {
  it('charts every metric fibkeeper exports, and queries nothing else', async () => {
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
    expect([...known].filter((m) => !used.has(m))).toEqual([]);
  });

  it('can be provisioned from a file: a data source variable, no __inputs', () => {
    expect(dash.__inputs).toBeUndefined();
    expect(text).not.toContain('${DS_');
    const v = dash.templating.list.find((t) => t.type === 'datasource');
    expect(v).toMatchObject({ name: 'datasource', query: 'prometheus' });
    for (const t of dash.templating.list.filter((t) => t.type === 'query')) {
      expect(t.datasource, t.name).toEqual(DS);
    }
    for (const p of dash.panels.filter((p) => p.type !== 'row')) {
      expect(p.datasource, p.title).toEqual(DS);
      for (const t of p.targets ?? []) expect(t.datasource, p.title).toEqual(DS);
    }
  });

  it('lays panels out on the 24-column grid without overlaps', () => {
    const cells = new Map<string, string>();
    for (const p of dash.panels) {
      const g = p.gridPos;
      expect(g.x + g.w, p.title).toBeLessThanOrEqual(24);
      for (let y = g.y; y < g.y + g.h; y++) {
        for (let x = g.x; x < g.x + g.w; x++) {
          const other = cells.get(`${x},${y}`);
          expect(other, `${p.title} overlaps ${other}`).toBeUndefined();
          cells.set(`${x},${y}`, p.title);
        }
      }
    }
  });

  it('is what scripts/grafana-dashboard.mjs writes', () => {
    const r = spawnSync(process.execPath, ['scripts/grafana-dashboard.mjs', '--check'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
  it('has queries that Prometheus parses (promtool, with the variables filled in)', () => {
    const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const rules = exprs.map(
      (e, i) =>
        `      - record: dashboard:query${i}\n        expr: ${JSON.stringify(
          e.replaceAll('$__rate_interval', '2m').replaceAll('$instance', '.*'),
        )}`,
    );
    const dir = mkdtempSync(join(tmpdir(), 'fkt-dash-'));
    try {
      const file = join(dir, 'queries.yaml');
      writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
      const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain(`SUCCESS: ${exprs.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
