import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../config/index.js';
import { clusterSettings } from './config.js';

const base = () => {
  const c = defaultConfig().cluster;
  c.etcd.endpoints = ['127.0.0.1:2379'];
  return c;
};

describe('clusterSettings (config file → member and store options)', () => {
  it('maps the options and fills in the host name and extip.nodeIP', () => {
    const c = base();
    c.labels = ['zone=a'];
    const s = clusterSettings(c, { hostname: 'host-1', nodeIP: '10.0.0.1' });
    expect(s.options).toMatchObject({
      nodeName: 'host-1',
      labels: { zone: 'a' },
      nodeIps: ['10.0.0.1'],
      leaseTtlSeconds: 1,
      renewIntervalMs: 150,
      fenceMarginMs: 250,
      prefix: '/fibkeeper/',
    });
    expect(s.store).toEqual({ endpoints: ['127.0.0.1:2379'], requestTimeoutMs: 500 });
  });

  it('names the option at fault', () => {
    const cases: [(c: ReturnType<typeof base>) => void, RegExp][] = [
      [(c) => (c.etcd.endpoints = []), /cluster\.etcd\.endpoints/],
      [(c) => (c.leaseTTL = 1500), /cluster\.leaseTTL: 1500 ms/],
      [(c) => (c.nodeName = 'bad name'), /cluster\.nodeName/],
      [(c) => (c.labels = ['novalue']), /cluster\.labels/],
      [(c) => (c.nodeIPs = ['10.0.0.300']), /cluster\.nodeIPs/],
      [(c) => (c.prefix = 'noslash'), /cluster\.prefix/],
      [(c) => (c.fenceMargin = 900), /cluster\.fenceMargin/],
      [(c) => (c.renewInterval = 400), /cluster\.renewInterval/],
      [(c) => (c.etcd.certFile = '/x.pem'), /cluster\.etcd\.certFile/],
    ];
    for (const [edit, msg] of cases) {
      const c = base();
      edit(c);
      expect(() => clusterSettings(c, { hostname: 'h' })).toThrow(msg);
    }
  });
});
