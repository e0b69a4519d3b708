// The device feed against the kernel: after every change made with `ip` (links created,
// renamed, enslaved, set down, deleted; addresses added and removed), and after a flood that
// overflows its socket, the feed's links and addresses are what `ip -j link` and `ip -j addr`
// show.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { silentLogger } from '../../src/log/index.js';
import { DeviceFeed, IFF_UP, NetlinkHandle } from '../../src/netlink/index.js';
import { ip, ipJson, makeNetns, privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();

interface IpLink {
  ifindex: number;
  ifname: string;
  mtu: number;
  address?: string;
  flags: string[];
  master?: string;
  linkinfo?: { info_kind?: string };
}

interface IpAddr {
  ifindex: number;
  addr_info: { local: string; prefixlen: number }[];
}

/** The kernel's view, as `ip` shows it: one line per link and per address, sorted. */
function kernelView(ns: string): { links: string[]; addrs: string[] } {
  const links = ipJson<IpLink[]>(ns, '-d', 'link', 'show');
  const index = new Map(links.map((l) => [l.ifname, l.ifindex]));
  return {
    links: links
      .map((l) =>
        [
          l.ifindex,
          l.ifname,
          l.mtu,
          l.address ?? '',
          l.flags.includes('UP'),
          l.master === undefined ? 0 : index.get(l.master),
          l.linkinfo?.info_kind ?? '',
        ].join(' '),
      )
      .sort(),
    addrs: ipJson<IpAddr[]>(ns, 'addr', 'show')
      .flatMap((a) => a.addr_info.map((i) => `${a.ifindex} ${i.local}/${i.prefixlen}`))
      .sort(),
  };
}

/** The same lines from the feed's snapshot. */
function feedView(feed: DeviceFeed): { links: string[]; addrs: string[] } {
  return {
    links: feed
      .links()
      .map((l) =>
        [
          l.index,
          l.name,
          l.mtu,
          l.address ?? '',
          (l.flags & IFF_UP) !== 0,
          l.master ?? 0,
          l.info?.kind ?? '',
        ].join(' '),
      )
      .sort(),
    addrs: feed
      .addresses()
      .map((a) => `${a.index} ${a.local ?? a.address}/${a.prefixlen}`)
      .sort(),
  };
}

function openFeed(ns: string, rcvbuf?: number): DeviceFeed {
  const nl = NetlinkHandle.open({ netns: ns });
  const feed = new DeviceFeed({ nl, log: silentLogger(), ...(rcvbuf ? { rcvbuf } : {}) });
  onTestFinished(() => {
    feed.stop();
    nl.close();
  });
  return feed;
}

async function matches(ns: string, feed: DeviceFeed, what: string): Promise<void> {
  let last = '';
  try {
    await waitFor(
      () => {
        const k = JSON.stringify(kernelView(ns));
        last = `kernel ${k}\nfeed   ${JSON.stringify(feedView(feed))}`;
        return k === JSON.stringify(feedView(feed));
      },
      { what, timeoutMs: 5000, intervalMs: 20 },
    );
  } catch (err) {
    throw new Error(`${String(err)}\n${last}`, { cause: err });
  }
}

describe.skipIf(skip)('device feed (netns)', () => {
  it('matches ip -j link/addr after links and addresses are created, changed, renamed and deleted', async () => {
    const ns = makeNetns('devfeed');
    ip(ns, 'link', 'add', 'va', 'type', 'veth', 'peer', 'name', 'vb');
    ip(ns, 'addr', 'add', '10.1.0.1/24', 'dev', 'va');
    const feed = openFeed(ns);
    await feed.start();
    expect(feedView(feed)).toEqual(kernelView(ns)); // the dump alone
    const steps: [string, string[]][] = [
      ['set up', ['link', 'set', 'va', 'up']],
      ['peer up', ['link', 'set', 'vb', 'up']],
      ['address added', ['addr', 'add', '10.1.0.2/16', 'dev', 'vb']],
      ['same address, other prefix', ['addr', 'add', '10.1.0.1/16', 'dev', 'va']],
      ['IPv6 address', ['addr', 'add', 'fd00::1/64', 'dev', 'va', 'nodad']],
      ['mtu', ['link', 'set', 'va', 'mtu', '1400']],
      ['mac', ['link', 'set', 'vb', 'address', '02:00:00:00:00:0b']],
      ['bridge created', ['link', 'add', 'br0', 'type', 'bridge']],
      ['enslaved', ['link', 'set', 'vb', 'master', 'br0']],
      ['renamed (down first)', ['link', 'set', 'va', 'down']],
      ['renamed', ['link', 'set', 'va', 'name', 'wan0']],
      ['address removed', ['addr', 'del', '10.1.0.1/24', 'dev', 'wan0']],
      ['released', ['link', 'set', 'vb', 'nomaster']],
      ['bridge deleted', ['link', 'del', 'br0']],
      ['veth deleted (both ends, their addresses with them)', ['link', 'del', 'wan0']],
    ];
    for (const [what, args] of steps) {
      ip(ns, ...args);
      await matches(ns, feed, what);
    }
    expect(feed.links().map((l) => l.name)).toEqual(['lo']);
  });

  it('a dump that finds what the events said reports no change, bridges with ports included', async () => {
    // a bridge reports timers (hello, gc, a port's hold timer) that move without an event:
    // they are no change of the device, or every periodic dump would make every route be
    // dumped again
    const ns = makeNetns('devsame');
    ip(ns, 'link', 'add', 'br0', 'type', 'bridge', 'stp_state', '1');
    ip(ns, 'link', 'add', 'pa', 'type', 'veth', 'peer', 'name', 'pb');
    ip(ns, 'link', 'set', 'pa', 'master', 'br0');
    for (const d of ['br0', 'pa', 'pb']) ip(ns, 'link', 'set', d, 'up');
    ip(ns, 'addr', 'add', '10.3.0.1/24', 'dev', 'br0');
    const feed = openFeed(ns);
    await feed.start();
    const changed: boolean[] = [];
    feed.listen({ loaded: (_reason, c) => changed.push(c) });
    changed.length = 0; // the snapshot handed over at once
    const timers = () =>
      JSON.stringify(
        ipJson<{ linkinfo: { info_data: Record<string, unknown> } }[]>(
          ns,
          '-d',
          'link',
          'show',
          'br0',
        )[0]?.linkinfo.info_data,
        ['hello_timer', 'gc_timer'],
      );
    for (let i = 0; i < 3; i++) {
      const before = timers();
      await waitFor(() => timers() !== before, { what: 'the bridge timers to move' });
      await feed.refresh();
    }
    expect(changed).toEqual([false, false, false]);
    ip(ns, 'link', 'set', 'pb', 'mtu', '1400'); // an event, then a dump: still no change
    await matches(ns, feed, 'mtu');
    await feed.refresh();
    expect(changed.at(-1)).toBe(false);
  });

  it('a flood that overflows a small socket is answered by a resync: nothing is lost', async () => {
    const ns = makeNetns('devflood');
    ip(ns, 'link', 'add', 'fa', 'type', 'veth', 'peer', 'name', 'fb');
    const feed = openFeed(ns, 4096);
    await feed.start();
    const heard: string[] = [];
    feed.listen({ loaded: (reason) => heard.push(reason) });
    heard.length = 0;
    // 600 addresses in one batch, then half of them gone again: far more events than 4 KiB hold
    const add = Array.from(
      { length: 600 },
      (_, i) => `addr add 10.2.${i >> 8}.${i & 255}/32 dev fa`,
    );
    const del = add.slice(0, 300).map((l) => l.replace(/^addr add/, 'addr del'));
    const dir = mkdtempSync(join(tmpdir(), 'fk-devflood-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const batch = join(dir, 'batch');
    writeFileSync(batch, [...add, ...del].join('\n') + '\n');
    ip(ns, '-batch', batch);
    await waitFor(() => feed.overflows > 0, { what: 'an overflow' });
    await matches(ns, feed, 'the state after the flood');
    expect(heard).toContain('overflow');
    expect(feed.addresses().filter((a) => a.local?.startsWith('10.2.'))).toHaveLength(300);
    expect(feed.lastError).toBeUndefined();
  });
});
