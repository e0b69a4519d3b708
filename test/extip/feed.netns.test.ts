// The external-IP subsystem reads links and addresses from the one device feed the agent
// creates: its own handle is spied on, and across start-up, the repairs and a periodic check
// it issues no link or address dump; what it repairs is what `ip` shows.
import { Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ExternalIpSubsystem, removeHolderAddresses } from '../../src/extip/index.js';
import { silentLogger } from '../../src/log/index.js';
import { DeviceFeed, NetlinkHandle } from '../../src/netlink/index.js';
import { ip, ipJson, privileged, waitFor } from '../helpers/netns.js';
import { NODE_V4, holderAddrs, makeLab, metric, testConfig } from './lab.js';

const { skip } = privileged();
const DUMPS = new Set(['linkList', 'addrList']);

/** `nl` with every link/address dump recorded in `dumps`. */
function spied(nl: NetlinkHandle, dumps: string[]): NetlinkHandle {
  return new Proxy(nl, {
    get(target, key) {
      const v: unknown = Reflect.get(target, key, target);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (typeof key === 'string' && DUMPS.has(key)) dumps.push(key);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function feedIn(ns: string): Promise<{ nl: NetlinkHandle; feed: DeviceFeed }> {
  const nl = NetlinkHandle.open({ netns: ns });
  const feed = new DeviceFeed({ nl, log: silentLogger() });
  onTestFinished(() => {
    feed.stop();
    nl.close();
  });
  await feed.start();
  return { nl, feed };
}

describe.skipIf(skip)('extip reads the device feed', () => {
  it('no link or address dump of its own through start, repairs and a check', async () => {
    const lab = await makeLab('xfd');
    const { nl, feed } = await feedIn(lab.node);
    const dumps: string[] = [];
    const registry = new Registry();
    const extip = new ExternalIpSubsystem({
      netns: lab.node,
      netlink: spied(nl, dumps),
      devices: feed,
      // found by its address, on a bridge holder (whose ports are checked)
      config: testConfig({ interface: '', nodeIP: NODE_V4 }),
      registry,
      log: silentLogger(),
    });
    onTestFinished(() => extip.stop());
    await extip.start();
    expect(extip.externalInterface?.name).toBe('ext0');
    await extip.assign(['10.20.0.130']);
    ip(lab.node, 'addr', 'del', '10.20.0.130/32', 'dev', 'fkx0');
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'address' })) === 1,
    );
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.130/32']);
    ip(lab.node, 'link', 'set', 'fkx0', 'down');
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'holder-up' })) === 1,
    );
    const up = ipJson<{ flags: string[] }[]>(lab.node, 'link', 'show', 'dev', 'fkx0')[0]!;
    expect(up.flags).toContain('UP');
    ip(lab.node, 'link', 'del', 'fkx0');
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'holder' })) === 1,
    );
    await waitFor(() => holderAddrs(lab.node).length === 1, { what: 'the holder refilled' });
    await extip.check();
    expect(await metric(registry, 'fibkeeper_extip_resyncs_total', { reason: 'periodic' })).toBe(1);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.130/32']);
    expect(dumps).toEqual([]);
  });

  it('the cluster leftovers are found in the feed and removed, keeping the node-local ones', async () => {
    const lab = await makeLab('xfl');
    ip(lab.node, 'link', 'add', 'fkx0', 'type', 'bridge');
    ip(lab.node, 'addr', 'add', '10.20.0.140/32', 'dev', 'fkx0');
    ip(lab.node, 'addr', 'add', '10.20.0.141/32', 'dev', 'fkx0');
    const { nl, feed } = await feedIn(lab.node);
    const dumps: string[] = [];
    const keep = new Set(['10.20.0.141']);
    const removed = await removeHolderAddresses(spied(nl, dumps), feed, 'fkx0', keep);
    expect(removed).toEqual(['10.20.0.140']);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.141/32']);
    expect(dumps).toEqual([]);
    expect(await removeHolderAddresses(nl, feed, 'nosuch0', keep)).toEqual([]);
  });
});
