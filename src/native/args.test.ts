// Root-free tests of the wrapper's argument checks and the xdp_md layout.
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/index.js';
import { checkNetns, checkPath, checkUint } from './args.js';
import { xdpMd } from './bpf-program.js';

describe('checkNetns', () => {
  it('accepts names under /run/netns and absolute paths', () => {
    expect(checkNetns('netns', 'blue')).toBe('blue');
    expect(checkNetns('netns', 'fkt-ns-0a1b')).toBe('fkt-ns-0a1b');
    expect(checkNetns('netns', '/proc/123/ns/net')).toBe('/proc/123/ns/net');
  });
  it.each(['', '.', '..', 'a/b', '../x', 'x y', 'a\0b', '/x\0'])('rejects %j', (v) => {
    expect(() => checkNetns('netns', v)).toThrow(InvalidArgumentError);
  });
  it('rejects non-strings', () => {
    expect(() => checkNetns('netns', 3)).toThrow(/netns must be/);
  });
});

describe('checkUint / checkPath', () => {
  it('checks integer ranges and names the option', () => {
    expect(checkUint('portId', 0)).toBe(0);
    expect(checkUint('portId', 0xffff_ffff)).toBe(0xffff_ffff);
    expect(() => checkUint('portId', -1)).toThrow(/portId must be an integer in \[0, 4294967295\]/);
    expect(() => checkUint('portId', 1.5)).toThrow(InvalidArgumentError);
    expect(() => checkUint('groups[0]', 0, 10, 1)).toThrow(/groups\[0\]/);
    expect(() => checkUint('x', '1')).toThrow(InvalidArgumentError);
  });
  it('wants absolute paths', () => {
    expect(checkPath('path', '/sys/fs/bpf/x')).toBe('/sys/fs/bpf/x');
    expect(() => checkPath('path', 'relative')).toThrow(/absolute path/);
  });
});

describe('xdpMd', () => {
  it('lays out struct xdp_md (6 × u32) with data_end = length', () => {
    const md = xdpMd(60, { ingressIfindex: 7, rxQueueIndex: 2 });
    expect(md.length).toBe(24);
    expect([0, 4, 8, 12, 16, 20].map((o) => md.readUInt32LE(o))).toEqual([0, 60, 0, 7, 2, 0]);
  });
});
