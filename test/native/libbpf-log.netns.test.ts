// Privileged tests: libbpf's messages reach the JS logger and never stderr.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  BpfObject,
  btfVmlinuxPresent,
  helperNames,
  mapTypeNames,
  probeHelper,
  probeMapType,
  probeProgType,
  progTypeNames,
  setLibbpfLogger,
  type LibbpfLogLevel,
} from '../../src/native/index.js';
import { privileged } from '../helpers/netns.js';
import { compileBpf } from './fixtures.js';

const { skip } = privileged();
const ADDON = fileURLToPath(new URL('../../native/build/Release/fibkeeper.node', import.meta.url));
const CHILD = fileURLToPath(new URL('./fixtures/libbpf-log.mjs', import.meta.url));

let badObj = '';
let testObj = '';
beforeAll(() => {
  if (skip) return;
  badObj = compileBpf('xdp_bad');
  testObj = compileBpf('xdp_test');
});
afterEach(() => setLibbpfLogger(null));

function runChild(mode: 'logger' | 'nologger') {
  const r = spawnSync(process.execPath, [CHILD, ADDON, badObj, mode], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  expect(r.status).toBe(0);
  return {
    stderr: r.stderr,
    out: JSON.parse(r.stdout) as { code: string; got: { level: string; msg: string }[] },
  };
}

describe.skipIf(skip)('libbpf logging', () => {
  it('without a logger libbpf stays silent on stderr', () => {
    const { stderr, out } = runChild('nologger');
    expect(out.code).toBe('EACCES');
    expect(stderr).toBe('');
  });

  it('with a logger every message reaches it and none reaches stderr', () => {
    const { stderr, out } = runChild('logger');
    expect(stderr).toBe('');
    expect(out.code).toBe('EACCES');
    expect(out.got.some((m) => m.level === 'debug' && /loading object/.test(m.msg))).toBe(true);
    expect(out.got.some((m) => m.level === 'warn' && /failed to load object/.test(m.msg))).toBe(
      true,
    );
    expect(out.got.every((m) => !m.msg.endsWith('\n'))).toBe(true);
  });

  it('setLibbpfLogger in this process', () => {
    const got: [LibbpfLogLevel, string][] = [];
    setLibbpfLogger((level, msg) => got.push([level, msg]));
    BpfObject.open(testObj).close();
    expect(got.some(([l, m]) => l === 'debug' && m.includes('xdp_test'))).toBe(true);
    setLibbpfLogger(null);
    const n = got.length;
    BpfObject.open(testObj).close();
    expect(got.length).toBe(n);
  });
});

describe.skipIf(skip)('feature probes', () => {
  it('reports what this kernel (6.x) has and lacks', () => {
    expect(progTypeNames()).toContain('xdp');
    expect(mapTypeNames()).toContain('devmap_hash');
    expect(helperNames()).toContain('fib_lookup');
    expect(probeProgType('xdp')).toBe(true);
    expect(probeMapType('devmap_hash')).toBe(true);
    expect(probeMapType('lru_percpu_hash')).toBe(true);
    expect(probeHelper('xdp', 'fib_lookup')).toBe(true);
    expect(probeHelper('xdp', 'redirect_map')).toBe(true);
    // not allowed for these program types (libbpf 1.1's own probe says "supported" here)
    expect(probeHelper('socket_filter', 'fib_lookup')).toBe(false);
    expect(probeHelper('xdp', 'skb_store_bytes')).toBe(false);
    expect(btfVmlinuxPresent()).toBe(true);
    expect(() => probeProgType('nope')).toThrow(/unknown program type/);
    expect(() => probeHelper('xdp', 'nope')).toThrow(/unknown helper/);
  });
});
