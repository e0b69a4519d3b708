// The checks the subsystems used to make again on their own options (neighbor, extip, xdp,
// cluster) are made once, here, when a configuration is read: each case names the option
// at fault, and the subsystems take the validated sections as they are.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { buildConfig, checkRunnable } from './index.js';

/** The option a configuration (JSON) is refused for, or undefined when it is accepted. */
function refused(doc: unknown, runnable = false): { option: string; message: string } | undefined {
  try {
    const cfg = buildConfig(JSON.stringify(doc));
    if (runnable) checkRunnable(cfg);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return { option: (err as ConfigError).option, message: (err as Error).message };
  }
}

describe('one validation of every section', () => {
  it('neighbor: names the option at fault (was neighbor/config.ts validateConfig)', () => {
    expect(refused({ devices: ['eth*', 'bond0'] })).toBeUndefined();
    const cases: [unknown, string][] = [
      [{ devices: ['eth 0'] }, 'devices'],
      [{ neighbor: { refresh: 'sometimes' } }, 'neighbor.refresh'],
      [{ neighbor: { resyncInterval: 10 } }, 'neighbor.resyncInterval'],
      [{ neighbor: { retryMin: 0 } }, 'neighbor.retryMin'],
      [{ neighbor: { retryMin: 100, retryMax: 50 } }, 'neighbor.retryMin'],
      [{ neighbor: { rateLimit: 0.5 } }, 'neighbor.rateLimit'],
      [{ extip: { holderName: 'a-very-long-device-name' } }, 'extip.holderName'],
    ];
    for (const [doc, option] of cases) expect(refused(doc)?.option, option).toBe(option);
  });

  it('extip: names the option at fault (was extip/options.ts resolveOptions)', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ extip: { holderName: 'bad name' } }, 'extip.holderName', /not a device name/],
      [{ extip: { holderKind: 'veth' } }, 'extip.holderKind', /one of dummy, bridge, ifb/],
      [{ extip: { interface: 'a/b' } }, 'extip.interface', /not a device name/],
      [
        { extip: { holderName: 'ext0', interface: 'ext0' } },
        'extip.interface',
        /the external interface cannot be the holder device ext0/,
      ],
      [{ extip: { announceCount: 101 } }, 'extip.announceCount', /above the maximum 100/],
      [{ extip: { announceInterval: 5 } }, 'extip.announceInterval', /below the minimum/],
      [{ extip: { refreshInterval: 500 } }, 'extip.refreshInterval', /0 \(off\) or at least 1s/],
      [{ extip: { checkInterval: '25h' } }, 'extip.checkInterval', /above the maximum 24h/],
      [{ extip: { defendInterval: '2h' } }, 'extip.defendInterval', /above the maximum 1h/],
      [{ extip: { defendRate: 0 } }, 'extip.defendRate', /below the minimum 1/],
      [{ extip: { dad: 'maybe' } }, 'extip.dad', /true or false/],
      [{ extip: { dadProbes: 11 } }, 'extip.dadProbes', /above the maximum 10/],
      [{ extip: { dadInterval: '11s' } }, 'extip.dadInterval', /above the maximum 10s/],
      [{ extip: { dadWait: 5 } }, 'extip.dadWait', /below the minimum/],
      [{ extip: { arpResponder: 'sometimes' } }, 'extip.arpResponder', /auto, always, never/],
    ];
    for (const [doc, option, message] of cases) {
      const r = refused(doc);
      expect(r?.option, option).toBe(option);
      expect(r?.message, option).toMatch(message);
    }
    expect(refused({ extip: { refreshInterval: 0 } })).toBeUndefined();
    expect(refused({ extip: { refreshInterval: '1s' } })).toBeUndefined();
  });

  it('xdp: names the option at fault (was fib/forwarder.ts validate)', () => {
    expect(refused({ xdp: { mode: 'turbo' } })?.option).toBe('xdp.mode');
    expect(refused({ xdp: { pinDir: '' } })).toMatchObject({
      option: 'xdp.pinDir',
      message: expect.stringMatching(/must be a directory path/) as unknown,
    });
  });
});

describe('cluster options (was cluster/config.ts clusterSettings and cluster/options.ts)', () => {
  it('names the option at fault before the agent may run', () => {
    const on = { extip: { enabled: true, interface: 'eth0' } };
    const cluster = (c: Record<string, unknown>) => ({
      ...on,
      cluster: { enabled: true, ...c, etcd: { endpoints: ['127.0.0.1:2379'], ...(c.etcd ?? {}) } },
    });
    expect(refused(cluster({ nodeName: 'n1' }), true)).toBeUndefined();
    const cases: [unknown, RegExp][] = [
      [{ ...on, cluster: { enabled: true } }, /cluster\.etcd\.endpoints/],
      [cluster({ leaseTTL: 1500 }), /cluster\.leaseTTL: 1500 ms/],
      [cluster({ nodeName: 'bad name' }), /cluster\.nodeName/],
      [cluster({ labels: ['novalue'] }), /cluster\.labels/],
      [cluster({ nodeIPs: ['10.0.0.300'] }), /cluster\.nodeIPs/],
      [cluster({ prefix: 'noslash' }), /cluster\.prefix/],
      [cluster({ fenceMargin: 900 }), /cluster\.fenceMargin: 900 ms: give 50 ms to half/],
      [cluster({ renewInterval: 400 }), /cluster\.renewInterval: 400 ms: at least two keep-alives/],
      [cluster({ etcd: { certFile: '/x.pem' } }), /cluster\.etcd\.certFile: give .* together/],
      [
        cluster({ etcd: { certFile: '/x.pem', keyFile: '/x.key' } }),
        /cluster\.etcd\.caFile: a client certificate needs TLS/,
      ],
    ];
    for (const [doc, message] of cases) expect(refused(doc, true)?.message).toMatch(message);
  });
});
