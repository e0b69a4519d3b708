import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  OPTIONS,
  buildConfig,
  defaultConfig,
  exampleConfigYaml,
  flagName,
  optionsMarkdown,
  parseDuration,
} from './index.js';

describe('config', () => {
  it('has safe defaults', () => {
    const c = defaultConfig();
    expect(c.xdp.mode).toBe('auto');
    expect(c.xdp.keepOnStop).toBe(true);
    expect(c.xdp.force).toBe(false);
    expect(c.neighbor.resyncInterval).toBe(300_000);
    expect(c.neighbor.retryMin).toBe(100);
    expect(c.neighbor.retryMax).toBe(60_000);
    expect(c.api.socketMode).toBe(0o660);
    expect(c.api.tcp).toBe('');
    expect(c.metrics.address).toBe('127.0.0.1:9470');
    expect(c.extip.holderKind).toBe('dummy');
  });

  it('reads YAML and JSON, and flags win over the file', () => {
    const y = buildConfig('xdp:\n  mode: native\nneighbor:\n  resyncInterval: 1m30s\n', {
      'xdp-mode': 'generic',
    });
    expect(y.xdp.mode).toBe('generic');
    expect(y.neighbor.resyncInterval).toBe(90_000);
    const j = buildConfig('{"devices": ["veth*"], "extip": {"holderKind": "bridge"}}');
    expect(j.devices).toEqual(['veth*']);
    expect(j.extip.holderKind).toBe('bridge');
    expect(buildConfig(undefined, { devices: 'a0,b0' }).devices).toEqual(['a0', 'b0']);
  });

  it('names the option and the allowed values in errors', () => {
    expect(() => buildConfig('xdp:\n  mode: turbo\n')).toThrow(
      'xdp.mode: must be one of auto, native, generic, got "turbo"',
    );
    expect(() => buildConfig('xdp:\n  pindir: /x\n')).toThrow(/xdp.pindir: unknown option/);
    expect(() => buildConfig('mode: native\n')).toThrow(/did you mean xdp.mode/);
    expect(() => buildConfig(undefined, { 'neighbor-retry-min': 'fast' })).toThrow(
      /--neighbor-retry-min: must be a duration/,
    );
    expect(() => buildConfig(undefined, { 'no-such': '1' })).toThrow(/--no-such: unknown option/);
    expect(() => buildConfig('api:\n  socketMode: "0666"\n')).toThrow(/api.socketMode/);
    expect(() => buildConfig('neighbor:\n  retryMin: 2m\n')).toThrow(/neighbor.retryMin/);
    expect(() => buildConfig('xdp: [1]\n')).toThrow(/xdp: must be a mapping/);
    expect(() => buildConfig('extip:\n  announceCount: -1\n')).toThrow(/below the minimum 0/);
    expect(() => buildConfig('xdp: [unclosed')).toThrow(/config file/);
  });

  it('parses durations', () => {
    expect(parseDuration('100ms')).toBe(100);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration(250)).toBe(250);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('5 m')).toBeUndefined();
    expect(parseDuration('')).toBeUndefined();
    expect(parseDuration('-1s')).toBeUndefined();
  });

  it('documents every option in the example config, which loads to the defaults', () => {
    const text = exampleConfigYaml();
    for (const o of OPTIONS) expect(text).toContain(`--${flagName(o.path)}`);
    expect(buildConfig(text)).toEqual(defaultConfig());
  });

  it('keeps deploy/fibkeeper.example.yaml up to date (fibkeeper config example > it)', () => {
    const file = readFileSync(
      new URL('../../deploy/fibkeeper.example.yaml', import.meta.url),
      'utf8',
    );
    expect(file).toBe(exampleConfigYaml());
  });

  it('keeps the README option table up to date', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const m = /<!-- options:begin -->\n([\s\S]*?)\n?<!-- options:end -->/.exec(readme);
    expect(m?.[1]).toBe(optionsMarkdown());
  });

  it('derives kebab-case flag names from paths', () => {
    expect(flagName('xdp.missTracker.ttl')).toBe('xdp-miss-tracker-ttl');
    expect(flagName('extip.nodeIP')).toBe('extip-node-ip');
    expect(flagName('api.socketMode')).toBe('api-socket-mode');
  });
  it('starts with external IPs off: they need an interface or the node IP, and a shared config must not list them', () => {
    expect(defaultConfig().extip.enabled).toBe(false);
    expect(buildConfig(exampleConfigYaml()).extip.enabled).toBe(false);
  });

  it('takes the metrics address as host:port, [IPv6]:port, or a bare IP for port 9470', () => {
    const addr = (v: string) => buildConfig(`metrics:\n  address: "${v}"\n`).metrics.address;
    expect(addr('10.0.0.5:9000')).toBe('10.0.0.5:9000');
    expect(addr('[fd00::5]:9000')).toBe('[fd00::5]:9000');
    // The downward API's status.hostIP is a bare address, IPv4 or IPv6.
    expect(addr('10.0.0.5')).toBe('10.0.0.5:9470');
    expect(addr('fd00::5')).toBe('[fd00::5]:9470');
    expect(buildConfig(undefined, { 'metrics-address': 'FD00::0:5' }).metrics.address).toBe(
      '[fd00::5]:9470',
    );
    expect(addr('')).toBe('');
    expect(() => addr('fd00::5]:9470')).toThrow(/^metrics\.address: /);
    expect(() => buildConfig('api:\n  tcp: "fd00::5"\n')).toThrow(/api\.tcp: .*\[fd00::5\]:PORT/);
    expect(buildConfig('api:\n  tcp: "[::1]:7000"\n').api.tcp).toBe('[::1]:7000');
  });
});

describe('cluster options', () => {
  it('are off by default, parsed with the rest, and cluster.enabled is refused until wired', () => {
    const c = buildConfig(
      'cluster:\n  nodeName: node-a\n  labels: [zone=a]\n  etcd:\n    endpoints: ["127.0.0.1:2379"]\n  leaseTTL: 2s\n',
    );
    expect(c.cluster).toMatchObject({
      enabled: false,
      nodeName: 'node-a',
      labels: ['zone=a'],
      leaseTTL: 2000,
      renewInterval: 150,
      fenceMargin: 250,
      handoverOnStop: true,
      etcd: { endpoints: ['127.0.0.1:2379'], requestTimeout: 500 },
    });
    expect(() => buildConfig('cluster:\n  enabled: true\n')).toThrow(
      /cluster\.enabled: .*not yet wired/,
    );
    expect(() => buildConfig('cluster:\n  leaseTTL: 500ms\n')).toThrow(/cluster\.leaseTTL/);
  });
});
