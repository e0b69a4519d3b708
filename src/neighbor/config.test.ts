import { describe, expect, it } from 'vitest';
import { NotSupportedError } from '../errors/index.js';
import { matchGlob, resolveMode } from './config.js';

describe('neighbor config', () => {
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
