import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../config/index.js';
import { clusterSettings } from './cluster-settings.js';

const base = () => {
  const c = defaultConfig().cluster;
  c.etcd.endpoints = ['127.0.0.1:2379'];
  return c;
};

describe('clusterSettings (config file → member and store options)', () => {
  it('passes the options under their names and fills in the host name and extip.nodeIP', () => {
    const c = base();
    c.labels = ['zone=a'];
    const s = clusterSettings(c, { hostname: 'host-1', nodeIP: '10.0.0.1' });
    expect(s.options).toMatchObject({
      nodeName: 'host-1',
      labels: { zone: 'a' },
      nodeIPs: ['10.0.0.1'],
      leaseTTL: 1000,
      renewInterval: 150,
      fenceMargin: 250,
      prefix: '/fibkeeper/',
    });
    expect(s.store).toEqual({
      endpoints: ['127.0.0.1:2379'],
      requestTimeoutMs: 500,
      keepAliveTimeoutMs: 300,
    });
  });
});
