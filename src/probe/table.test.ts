import { describe, expect, it } from 'vitest';
import {
  ProbeCache,
  compareKernel,
  formatFeatureTable,
  parseKernelVersion,
  runFeatureTable,
  type FeatureSpec,
} from './table.js';

describe('probe table', () => {
  it('runs every probe, turns a throw into inconclusive, and keeps the table order', async () => {
    const specs: FeatureSpec<{ ok: boolean }>[] = [
      {
        name: 'a',
        title: 'Feature A',
        minKernel: '5.4',
        fix: 'upgrade',
        probe: async (ctx) => ({ outcome: ctx.ok ? 'supported' : 'not supported', detail: 'x' }),
      },
      {
        name: 'b',
        title: 'Feature B',
        fix: 'enable CONFIG_B',
        probe: async () => {
          throw new Error('EPERM');
        },
      },
    ];
    const res = await runFeatureTable(specs, { ok: true });
    expect(res.map((r) => [r.name, r.outcome, r.minKernel])).toEqual([
      ['a', 'supported', '5.4'],
      ['b', 'inconclusive', null],
    ]);
    expect(res[1]?.detail).toBe('probe failed: EPERM');
  });

  it('parses and compares kernel versions', () => {
    expect(parseKernelVersion('6.18.44-fc-v857')).toEqual([6, 18, 44]);
    expect(parseKernelVersion('5.16')).toEqual([5, 16, 0]);
    expect(compareKernel('6.18.44-fc', '5.16')).toBeGreaterThan(0);
    expect(compareKernel('5.15.200', '5.16')).toBeLessThan(0);
    expect(compareKernel('5.16.0', '5.16')).toBe(0);
  });

  it('caches one run and retries after a failure', async () => {
    let runs = 0;
    const cache = new ProbeCache(async () => {
      runs++;
      if (runs === 1) throw new Error('first fails');
      return runs;
    });
    await expect(cache.get()).rejects.toThrow('first fails');
    expect(await cache.get()).toBe(2);
    expect(await cache.get()).toBe(2);
    expect(runs).toBe(2);
  });

  it('formats an aligned table that flags needed features', () => {
    const text = formatFeatureTable(
      [
        { name: 'a', title: 'A', minKernel: '5.4', outcome: 'supported', detail: 'ok', fix: '' },
        {
          name: 'dummy',
          title: 'Dummy links',
          minKernel: null,
          outcome: 'not supported',
          detail: 'no',
          fix: '',
        },
      ],
      new Set(['dummy']),
    );
    expect(text.split('\n')[0]).toMatch(/^FEATURE\s+MIN KERNEL\s+RESULT\s+DETAIL$/);
    expect(text).toContain('not supported (NEEDED)');
    expect(text).toMatch(/Dummy links\s+n\/a/);
  });
});
