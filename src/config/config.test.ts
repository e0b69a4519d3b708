import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  OPTIONS,
  buildConfig,
  checkRunnable,
  isLoopbackHostPort,
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

  it('bounds every duration and count, with the bound in the error', () => {
    for (const o of OPTIONS.filter((x) => x.type === 'duration' || x.type === 'int')) {
      expect(o.min, o.path).toBeDefined();
      expect(o.max, o.path).toBeDefined();
      // Node's timers take at most 2^31-1 ms; past that they fire after 1 ms.
      if (o.type === 'duration') expect(o.max, o.path).toBeLessThanOrEqual(2 ** 31 - 1);
    }
    expect(() => buildConfig('neighbor:\n  resyncInterval: 1000h\n')).toThrow(
      'neighbor.resyncInterval: 1000h is above the maximum 24h',
    );
    expect(() => buildConfig(undefined, { 'neighbor-rate-limit': '5000000' })).toThrow(
      /--neighbor-rate-limit: 5000000 is above the maximum 1000000/,
    );
    expect(() => buildConfig('api:\n  requestTimeout: 1h\n')).toThrow(/above the maximum 10m/);
  });

  it('holds the static lists to the rules the API and the state file use', () => {
    expect(() => buildConfig('forwardable:\n  static: ["10.0.0.1", "300.1.1.1"]\n')).toThrow(
      /forwardable\.static: "300\.1\.1\.1": .*greater than 255/,
    );
    expect(() => buildConfig('extip:\n  static: ["127.0.0.1"]\n')).toThrow(
      /extip\.static: "127\.0\.0\.1": .*loopback/,
    );
    expect(() =>
      buildConfig('forwardable:\n  static: ["fd00::1"]\nextip:\n  static: ["FD00:0::1"]\n'),
    ).toThrow(/fd00::1 is in forwardable\.static, so it cannot also be an external IP/);
    expect(() => buildConfig('extip:\n  nodeIP: "fe80::1"\n')).toThrow(
      /extip\.nodeIP: .*link-local/,
    );
    expect(() => buildConfig(`api:\n  socket: /${'x'.repeat(120)}\n`)).toThrow(
      /api\.socket: the path is 121 bytes; a unix socket path has at most 107/,
    );
  });

  it('refuses api.tcp on a non-loopback address without a token file', () => {
    expect(() => buildConfig('api:\n  tcp: "0.0.0.0:9471"\n')).toThrow(
      /api\.tcp: "0\.0\.0\.0:9471" is not a loopback address.*api\.tokenFile/,
    );
    expect(() => buildConfig('api:\n  tcp: "[::]:9471"\n')).toThrow(/api\.tokenFile/);
    expect(buildConfig('api:\n  tcp: "127.0.0.2:9471"\n').api.tcp).toBe('127.0.0.2:9471');
    expect(isLoopbackHostPort('[::1]:1')).toBe(true);
    expect(isLoopbackHostPort('localhost:1')).toBe(true);
    expect(isLoopbackHostPort('10.0.0.1:1')).toBe(false);
    const dir = mkdtempSync(join(tmpdir(), 'fk-token-'));
    try {
      const token = join(dir, 'token');
      writeFileSync(token, 'short\n', { mode: 0o600 });
      const cfg = buildConfig(
        `api:\n  tcp: "0.0.0.0:9471"\n  tokenFile: ${token}\nextip:\n  enabled: false\n`,
      );
      expect(() => checkRunnable(cfg)).toThrow(/holds 5 characters; a token has at least 16/);
      writeFileSync(token, 'a-long-enough-secret-token\n');
      chmodSync(token, 0o644);
      expect(() => checkRunnable(cfg)).toThrow(/readable by others/);
      chmodSync(token, 0o640);
      expect(checkRunnable(cfg).token?.toString()).toBe('a-long-enough-secret-token');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('needs an external interface for external IPs before the agent may run', () => {
    const on = { 'extip-enabled': 'true' };
    expect(() => checkRunnable(buildConfig(undefined, on))).toThrow(
      /extip\.enabled: .*set extip\.interface .* or extip\.nodeIP .* or set extip\.enabled: false/,
    );
    expect(() =>
      checkRunnable(buildConfig(undefined, { ...on, 'extip-node-ip': '192.0.2.1' })),
    ).not.toThrow();
    // Off by default: the defaults (and `config example`) start.
    expect(() => checkRunnable(buildConfig(undefined))).not.toThrow();
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
  it('are off by default and parsed with the rest', () => {
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
    expect(() => buildConfig('cluster:\n  leaseTTL: 500ms\n')).toThrow(/cluster\.leaseTTL/);
  });

  const on = (more = '', extip = 'extip:\n  enabled: true\n  interface: eth0\n') =>
    `${extip}cluster:\n  enabled: true\n  nodeName: node-a\n  etcd:\n    endpoints: ["127.0.0.1:2379"]\n${more}`;

  it('cluster.enabled needs external IPs, an ARP responder and etcd endpoints', () => {
    expect(buildConfig(on()).cluster.enabled).toBe(true);
    expect(() => buildConfig(on('', ''))).toThrow(/^cluster\.enabled: .*extip\.enabled: true/);
    expect(() =>
      buildConfig(on('', 'extip:\n  enabled: true\n  interface: eth0\n  arpResponder: never\n')),
    ).toThrow(/^extip\.arpResponder: .*auto or always/);
    expect(() =>
      buildConfig('extip:\n  enabled: true\n  interface: eth0\ncluster:\n  enabled: true\n'),
    ).toThrow(/^cluster\.etcd\.endpoints: /);
  });

  it('cluster.static holds valid IPs that are neither node-local external nor forwardable', () => {
    const c = buildConfig(on('  static: ["192.0.2.10", "2001:DB8::0:1"]\n'));
    expect(c.cluster.static).toEqual(['192.0.2.10', '2001:DB8::0:1']);
    expect(() => buildConfig(on('  static: ["10.0.0.300"]\n'))).toThrow(/^cluster\.static: /);
    expect(() =>
      buildConfig(
        on(
          '  static: ["192.0.2.10"]\n',
          'extip:\n  enabled: true\n  interface: eth0\n  static: ["192.0.2.10"]\n',
        ),
      ),
    ).toThrow(/^cluster\.static: 192\.0\.2\.10 is in extip\.static .*remove it from one/);
    expect(() =>
      buildConfig(`forwardable:\n  static: ["2001:db8::1"]\n${on('  static: ["2001:db8::1"]\n')}`),
    ).toThrow(/^cluster\.static: 2001:db8::1 is in forwardable\.static/);
  });

  it('checkRunnable refuses what the agent would: a bad node name, a missing PEM file', () => {
    expect(() => checkRunnable(buildConfig(on()))).not.toThrow();
    expect(() =>
      checkRunnable(buildConfig(on().replace('nodeName: node-a', 'nodeName: "-bad-"'))),
    ).toThrow(/^cluster\.nodeName: /);
    const withCa = on().replace(
      'endpoints: ["127.0.0.1:2379"]',
      'endpoints: ["127.0.0.1:2379"]\n    caFile: /nonexistent/ca.pem',
    );
    expect(() => checkRunnable(buildConfig(withCa))).toThrow(
      /^cluster\.etcd\.caFile: \/nonexistent\/ca\.pem: /,
    );
  });
});
