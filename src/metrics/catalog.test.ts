import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { metricCatalog, metricsMarkdown } from './index.js';

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
