import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { AF_UNSPEC, DumpInterruptedError, type Address, type Link } from './codec/index.js';
import { FakeClock } from '../sched/testing.js';
import { DeviceFeed, type DeviceFeedListener, type DeviceFeedParams } from './devices.js';
import type { Subscription, SubscriptionHandlers } from './subscription.js';

const AF_INET = 2;
const AF_BRIDGE = 7;

function link(index: number, name: string, flags = 1): Link {
  return { family: AF_UNSPEC, type: 1, index, flags, change: 0, name, mtu: 1500 };
}

function addr(index: number, ip: string, prefixlen = 24): Address {
  return { family: AF_INET, prefixlen, flags: 0, scope: 0, index, local: ip, address: ip };
}

/** A kernel as the feed sees it: dumps answered by hand, subscriptions recorded. */
class FakeKernel {
  links: Link[] = [];
  addrs: Address[] = [];
  subs: { h: SubscriptionHandlers; closed: boolean }[] = [];
  dumps = 0;
  /** When set, the next dumps wait for release() (or fail with `fail`). */
  hold = false;
  fail: Error | undefined = undefined;
  #waiting: (() => void)[] = [];

  readonly nl = {
    subscribe: (_groups: unknown, h: SubscriptionHandlers) => {
      const s = { h, closed: false };
      this.subs.push(s);
      return { close: () => (s.closed = true), unref: () => undefined } as unknown as Subscription;
    },
    linkList: async () => {
      this.dumps++;
      if (this.hold) await new Promise<void>((r) => this.#waiting.push(r));
      if (this.fail !== undefined) throw this.fail;
      return this.links.map((l) => ({ ...l }));
    },
    addrList: async () => this.addrs.map((a) => ({ ...a })),
  } as unknown as DeviceFeedParams['nl'];

  release(): void {
    this.hold = false;
    for (const r of this.#waiting.splice(0)) r();
  }

  /** An event on the newest subscription. */
  send(kind: 'new' | 'del', obj: Link | Address): void {
    const h = this.subs.at(-1)!.h;
    if ('prefixlen' in obj) h.onEvent({ kind, object: 'address', msg: obj });
    else h.onEvent({ kind, object: 'link', msg: obj });
  }
}

function recorder(feed: DeviceFeed): { calls: string[]; listener: DeviceFeedListener } {
  const calls: string[] = [];
  const listener: DeviceFeedListener = {
    resyncing: (r) => calls.push(`resyncing ${r}`),
    loaded: (r, changed) =>
      calls.push(`loaded ${r} ${changed} [${feed.links().map((l) => l.name)}]`),
    link: (k, l) => calls.push(`link ${k} ${l.name}`),
    address: (k, a) => calls.push(`address ${k} ${a.local}`),
  };
  return { calls, listener };
}

const tick = () => new Promise((r) => setImmediate(r));

function makeFeed(k: FakeKernel, clock?: FakeClock): DeviceFeed {
  return new DeviceFeed({ nl: k.nl, log: silentLogger(), retryMs: 1, clock });
}

describe('DeviceFeed', () => {
  it('subscribes before it dumps and applies the events held during the dump after it', async () => {
    const k = new FakeKernel();
    k.links = [link(1, 'lo')];
    k.hold = true;
    const feed = makeFeed(k);
    const { calls, listener } = recorder(feed);
    feed.listen(listener);
    const started = feed.start();
    await tick();
    expect(k.subs).toHaveLength(1); // subscribed, the dump under way
    // created while the dump runs: the dump misses it, the held event has it
    k.send('new', link(2, 'eth0'));
    k.send('new', addr(2, '10.0.0.1'));
    k.release();
    await started;
    expect(feed.links().map((l) => l.name)).toEqual(['lo', 'eth0']);
    expect(feed.addresses(2).map((a) => a.local)).toEqual(['10.0.0.1']);
    expect(calls).toEqual([
      'resyncing startup',
      'loaded startup true [lo]',
      'link new eth0',
      'address new 10.0.0.1',
    ]);
  });

  it('gives a listener added after the first dump that dump at once', async () => {
    const k = new FakeKernel();
    k.links = [link(1, 'lo'), link(3, 'eth1')];
    const feed = makeFeed(k);
    await feed.start();
    await feed.start(); // idempotent: no second subscription or dump
    expect([k.subs.length, k.dumps]).toEqual([1, 1]);
    const { calls, listener } = recorder(feed);
    const unlisten = feed.listen(listener);
    expect(calls).toEqual(['resyncing startup', 'loaded startup true [lo,eth1]']);
    unlisten();
    k.send('del', link(3, 'eth1'));
    expect(calls).toHaveLength(2);
    expect(feed.link(3)).toBeUndefined();
  });

  it('keeps links, addresses by their kernel identity, and drops the addresses of a deleted link', async () => {
    const k = new FakeKernel();
    k.links = [link(2, 'eth0')];
    k.addrs = [addr(2, '10.0.0.1', 24), addr(2, '10.0.0.1', 16)];
    const feed = makeFeed(k);
    await feed.start();
    expect(feed.addresses()).toHaveLength(2); // another prefix length: another address
    k.send('del', addr(2, '10.0.0.1', 16));
    expect(feed.addresses().map((a) => a.prefixlen)).toEqual([24]);
    // Three that share link and local address: another peer, another prefix length; a new
    // event for one of them replaces it, a deletion takes only it.
    k.send('new', { ...addr(2, '10.0.0.1', 32), address: '10.9.9.9' });
    k.send('new', addr(2, '10.0.0.1', 16));
    k.send('new', { ...addr(2, '10.0.0.1', 16), flags: 0x80 });
    k.send('new', addr(3, '10.0.0.1', 24)); // another link
    const ids = (ifindex?: number) =>
      feed
        .addresses(ifindex)
        .map((a) => `${a.index} ${a.address}/${a.prefixlen} ${a.flags}`)
        .sort();
    expect(ids(2)).toEqual(['2 10.0.0.1/16 128', '2 10.0.0.1/24 0', '2 10.9.9.9/32 0']);
    k.send('del', addr(2, '10.0.0.1', 24));
    expect(ids()).toEqual(['2 10.0.0.1/16 128', '2 10.9.9.9/32 0', '3 10.0.0.1/24 0']);
    k.send('del', addr(2, '10.0.0.1', 16));
    expect(ids(2)).toEqual(['2 10.9.9.9/32 0']);
    k.send('del', addr(3, '10.0.0.1', 24));
    k.send('new', { ...link(2, 'eth0'), family: AF_BRIDGE, name: 'port' }); // not a link
    k.send('new', { ...link(2, 'wan0', 3), mtu: 9000 }); // renamed, changed
    expect(feed.linkByName('wan0')?.mtu).toBe(9000);
    expect(feed.linkByName('eth0')).toBeUndefined();
    k.send('del', link(2, 'wan0'));
    expect([feed.links(), feed.addresses()]).toEqual([[], []]);
  });

  it('answers an overflow with a fresh subscription and a dump, and says whether it changed anything', async () => {
    const k = new FakeKernel();
    k.links = [link(1, 'lo')];
    const feed = makeFeed(k);
    await feed.start();
    const { calls, listener } = recorder(feed);
    feed.listen(listener);
    calls.length = 0;
    // lost in the overflow: eth0 appeared
    k.links.push(link(2, 'eth0'));
    k.subs[0]!.h.onEvent({ kind: 'overflow', count: 1, cause: 'ENOBUFS', reopened: false });
    await tick();
    await tick();
    expect(k.subs.map((s) => s.closed)).toEqual([true, false]);
    expect(calls).toEqual(['resyncing overflow', 'loaded overflow true [lo,eth0]']);
    expect(feed.overflows).toBe(1);
    // a stale event of the closed socket is dropped
    k.subs[0]!.h.onEvent({ kind: 'new', object: 'link', msg: link(9, 'stale') });
    expect(feed.link(9)).toBeUndefined();
    calls.length = 0;
    await feed.refresh();
    expect(calls).toEqual(['resyncing refresh', 'loaded refresh false [lo,eth0]']);
  });

  it('refresh() rejects with a failed dump; the feed tries again and recovers', async () => {
    const k = new FakeKernel();
    k.links = [link(1, 'lo')];
    const clock = new FakeClock();
    const feed = makeFeed(k, clock);
    await feed.start();
    k.fail = new DumpInterruptedError('link dump', 3);
    await expect(feed.refresh()).rejects.toBeInstanceOf(DumpInterruptedError);
    expect(feed.lastError).toMatch(/interrupted/);
    k.fail = undefined;
    k.links.push(link(4, 'eth2'));
    await tick();
    expect(feed.link(4)).toBeUndefined(); // nothing before the retry is due
    await clock.advanceAsync(1); // the retry after retryMs
    expect(feed.lastError).toBeUndefined();
    expect(feed.link(4)?.name).toBe('eth2');
  });

  it('a start whose dump fails for another reason than interruption rejects', async () => {
    const k = new FakeKernel();
    k.fail = Object.assign(new Error('operation not permitted'), { code: 'EPERM' });
    await expect(makeFeed(k).start()).rejects.toThrow(/not permitted/);
  });

  it('a listener that throws does not keep the others from hearing; stop() closes, idempotent', async () => {
    const k = new FakeKernel();
    const feed = makeFeed(k);
    await feed.start();
    const heard: string[] = [];
    feed.listen({
      link: () => {
        throw new Error('boom');
      },
    });
    feed.listen({ link: (_k, l) => heard.push(l.name!) });
    k.send('new', link(5, 'eth5'));
    expect(heard).toEqual(['eth5']);
    feed.stop();
    feed.stop();
    expect(k.subs[0]!.closed).toBe(true);
    k.send('new', link(6, 'eth6'));
    expect(heard).toEqual(['eth5']);
  });
});
