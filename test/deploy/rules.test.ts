// The alert rules (deploy/prometheus/fibkeeper-rules.yaml) as Prometheus reads them:
// promtool checks them and runs their unit tests on synthetic series; every alert has a
// test in which it fires; they query only metrics fibkeeper exports; the Prometheus
// Operator objects carry the same rules.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { metricCatalog } from '../../src/agent/index.js';

const DIR = 'deploy/prometheus';
interface Rule {
  alert?: string;
  expr: string;
}
const rules = parse(readFileSync(`${DIR}/fibkeeper-rules.yaml`, 'utf8')) as {
  groups: { name: string; rules: Rule[] }[];
};
const alerts = rules.groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);

describe('alert rules', () => {
  it('pass promtool check rules', () => {
    const r = spawnSync('promtool', ['check', 'rules', `${DIR}/fibkeeper-rules.yaml`], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('pass their promtool unit tests', () => {
    const r = spawnSync('promtool', ['test', 'rules', 'fibkeeper-rules.test.yaml'], {
      cwd: DIR,
      encoding: 'utf8',
    });
    expect(r.stdout + r.stderr).toContain('SUCCESS');
    expect(r.status).toBe(0);
  });

  it('fire in at least one test each', () => {
    const tests = parse(readFileSync(`${DIR}/fibkeeper-rules.test.yaml`, 'utf8')) as {
      tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const fired = new Set(
      tests.tests
        .flatMap((t) => t.alert_rule_test)
        .filter((a) => a.exp_alerts.length > 0)
        .map((a) => a.alertname),
    );
    expect(alerts.map((a) => a.alert).filter((a) => !fired.has(a as string))).toEqual([]);
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        'FibkeeperNotReady',
        'FibkeeperNeighborEntriesFailing',
        'FibkeeperForeignXdpProgram',
        'FibkeeperExternalIpConflict',
      ]),
    );
  });

  it('query only metrics fibkeeper exports, with the labels they have', async () => {
    const catalog = new Map((await metricCatalog()).map((m) => [m.name, new Set(m.labels)]));
    // What Prometheus adds to every series it scrapes.
    const target = ['instance', 'job'];
    for (const a of alerts) {
      for (const sel of a.expr.matchAll(/(fibkeeper_[a-z0-9_]+)(?:\{([^}]*)\})?/g)) {
        const name = sel[1]!.replace(/_(bucket|sum|count)$/, '');
        const labels = catalog.get(name);
        expect(labels, `${a.alert}: ${name}`).toBeDefined();
        for (const m of (sel[2] ?? '').matchAll(/([a-z_]+)\s*[=!~]/g))
          expect(labels!.has(m[1]!), `${a.alert}: ${name} has no label ${m[1]}`).toBe(true);
      }
      // Every label an aggregation keeps is one of the metric's or the target's.
      const metrics = [...a.expr.matchAll(/fibkeeper_[a-z0-9_]+/g)].map((m) => m[0]);
      for (const by of a.expr.matchAll(/by \(([^)]*)\)/g)) {
        for (const l of by[1]!.split(',').map((x) => x.trim())) {
          const has = metrics.some((m) => catalog.get(m)?.has(l));
          expect(has || target.includes(l), `${a.alert}: by ${l}`).toBe(true);
        }
      }
    }
    // The label values the rules match on are checked against a live agent's exposition in
    // test/deploy/alerts.netns.test.ts.
  });

  it('are in the PrometheusRule of deploy/kubernetes/monitoring.yaml, beside a PodMonitor', () => {
    const r = spawnSync(process.execPath, ['scripts/monitoring.mjs', '--check'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const docs = parseAllDocuments(readFileSync('deploy/kubernetes/monitoring.yaml', 'utf8'))
      .map((d) => d.toJS() as { kind: string; spec: Record<string, unknown> } | null)
      .filter((d) => d !== null);
    const rule = docs.find((d) => d.kind === 'PrometheusRule');
    expect(rule?.spec).toEqual(rules);
    const pm = docs.find((d) => d.kind === 'PodMonitor');
    expect(pm?.spec).toMatchObject({
      podMetricsEndpoints: [{ port: 'metrics', path: '/metrics' }],
    });
  });
});
