import { describe, expect, it } from 'vitest';
import { buildConfig } from '../config/index.js';
import { buildReport, featureAvailable, neededFeatures, type FeatureResult } from './index.js';

const f = (
  name: string,
  outcome: FeatureResult['outcome'],
  minKernel: string | null = null,
): FeatureResult => ({
  name,
  title: name,
  minKernel,
  outcome,
  detail: '',
  fix: '',
  ...(name === 'kernel' ? { value: '5.10.0' } : {}),
});

describe('probe report', () => {
  it('derives the needed features from the configuration', () => {
    const all = neededFeatures(buildConfig(undefined, { 'extip-enabled': true }));
    expect(all).toEqual(
      expect.arrayContaining(['extern_learn', 'fib_lookup', 'dummy_link', 'ip_forward']),
    );
    const lean = neededFeatures(
      buildConfig(undefined, {
        'xdp-enabled': false,
        'extip-enabled': false,
        'neighbor-refresh': 'managed',
      }),
    );
    expect(lean.sort()).toEqual([
      'cap_net_admin',
      'extern_learn',
      'managed_neighbors',
      'neigh_protocol',
    ]);
  });

  it('assumes an undecided feature only on a kernel at least its minimum', () => {
    const features = [
      f('kernel', 'supported'),
      f('extern_learn', 'inconclusive', '4.15'),
      f('neigh_protocol', 'inconclusive', '5.2'),
      f('managed_neighbors', 'inconclusive', '5.16'),
      f('cap_net_admin', 'supported'),
    ];
    const cfg = buildConfig(undefined, {
      'xdp-enabled': false,
      'extip-enabled': false,
      'neighbor-refresh': 'managed',
    });
    const r = buildReport(features, cfg);
    expect(r.assumed.map((x) => x.name).sort()).toEqual(['extern_learn', 'neigh_protocol']);
    expect(r.missing.map((x) => x.name)).toEqual(['managed_neighbors']);
    expect(featureAvailable(r, 'extern_learn')).toBe(true);
    expect(featureAvailable(r, 'managed_neighbors')).toBe(false);
  });

  it('accepts CAP_SYS_ADMIN in place of CAP_BPF', () => {
    const base = [f('kernel', 'supported'), f('cap_net_admin', 'supported')];
    const cfg = buildConfig(undefined, { 'neighbor-enabled': false, 'extip-enabled': false });
    const only = (bpf: FeatureResult['outcome'], admin: FeatureResult['outcome']) =>
      buildReport([...base, f('cap_bpf', bpf, '5.8'), f('cap_sys_admin', admin)], cfg).missing.map(
        (x) => x.name,
      );
    expect(only('not supported', 'supported')).not.toContain('cap_bpf');
    expect(only('supported', 'not supported')).not.toContain('cap_bpf');
    expect(only('not supported', 'not supported')).toContain('cap_bpf');
  });
});
