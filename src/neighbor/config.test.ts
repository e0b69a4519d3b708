import { describe, expect, it } from 'vitest';
import { ConfigError, NotSupportedError } from '../errors/index.js';
import { matchGlob, resolveMode, validateConfig, type NeighborConfig } from './config.js';

const good: NeighborConfig = {
  devices: ['eth*', 'bond0'],
  holderName: 'fibkeeper0',
  refresh: 'auto',
  resyncIntervalMs: 300_000,
  retryMinMs: 100,
  retryMaxMs: 60_000,
  rateLimit: 1000,
};

describe('neighbor config', () => {
  it('accepts the defaults and names the option at fault', () => {
    expect(() => validateConfig(good)).not.toThrow();
    const cases: [Partial<NeighborConfig>, string][] = [
      [{ devices: ['eth 0'] }, 'devices'],
      [{ refresh: 'sometimes' as 'auto' }, 'neighbor.refresh'],
      [{ resyncIntervalMs: 10 }, 'neighbor.resyncInterval'],
      [{ retryMinMs: 0 }, 'neighbor.retryMin'],
      [{ retryMaxMs: 50 }, 'neighbor.retryMax'],
      [{ rateLimit: 0.5 }, 'neighbor.rateLimit'],
      [{ holderName: 'a-very-long-device-name' }, 'extip.holderName'],
    ];
    for (const [over, option] of cases) {
      let err: unknown;
      try {
        validateConfig({ ...good, ...over });
      } catch (e) {
        err = e;
      }
      expect(err, option).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).option).toBe(option);
    }
  });

  it('picks managed when the kernel has it, and refuses to force it when not', () => {
    expect(resolveMode('auto', true)).toBe('managed');
    expect(resolveMode('auto', false)).toBe('legacy');
    expect(resolveMode('legacy', true)).toBe('legacy');
    expect(resolveMode('managed', true)).toBe('managed');
    expect(() => resolveMode('managed', false)).toThrow(NotSupportedError);
  });

  it('matches device globs', () => {
    expect(matchGlob('eth*', 'eth0')).toBe(true);
    expect(matchGlob('eth*', 'veth0')).toBe(false);
    expect(matchGlob('e?h0', 'eth0')).toBe(true);
    expect(matchGlob('*0', 'bond0')).toBe(true);
    expect(matchGlob('ens*p*', 'ens3p1')).toBe(true);
    expect(matchGlob('bond0', 'bond01')).toBe(false);
  });
});
