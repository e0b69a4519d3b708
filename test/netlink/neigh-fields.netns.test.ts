// Neighbor events read in place (onMessage + readNeighFields) against the kernel: the
// fields of the last event of every entry are what `ip -j neigh show` shows. (A managed
// entry is announced only once it resolves: events.netns.test.ts has that case.)
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  AF_INET,
  AF_INET6,
  NetlinkHandle,
  neighFields,
  neighFlagNames,
  nudStateNames,
  readNeighFields,
  RTM_DELNEIGH,
  RTM_NEWNEIGH,
} from '../../src/netlink/index.js';
import { ip, ipJson, makeNetns, privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();

interface IpNeigh {
  dst: string;
  dev: string;
  lladdr?: string;
  state: string[];
  protocol?: string;
  extern_learn?: null;
  managed?: null;
}

describe.skipIf(skip)('neighbor events read in place', () => {
  it('give the state, flags, protocol and lladdr ip -j neigh shows', async () => {
    const ns = makeNetns('nl-nf');
    const h = NetlinkHandle.open({ netns: ns });
    onTestFinished(() => h.close());
    ip(ns, 'link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1');
    ip(ns, 'link', 'set', 'v0', 'up');
    ip(ns, 'link', 'set', 'v1', 'up');
    ip(ns, 'addr', 'add', '10.1.0.1/24', 'dev', 'v0');
    ip(ns, '-6', 'addr', 'add', '2001:db8:1::1/64', 'dev', 'v0', 'nodad');
    const last = new Map<string, string>();
    let other = 0;
    const fields = neighFields();
    const sub = h.subscribe(['neigh'], {
      onMessage: (type, buf, off, len) => {
        if (type !== RTM_NEWNEIGH && type !== RTM_DELNEIGH) return false;
        const f = readNeighFields(buf, off, len, fields);
        if (f.family !== AF_INET && f.family !== AF_INET6) return true;
        const text =
          type === RTM_DELNEIGH
            ? 'gone'
            : JSON.stringify({
                state: nudStateNames(f.state),
                flags: neighFlagNames(f.flags, f.flagsExt).filter((x) => x !== 'router'),
                protocol: f.protocol,
                lladdr: f.lladdr,
              });
        last.set(`${f.dst} ${f.ifindex}`, text);
        return true;
      },
      onEvent: () => other++,
    });
    onTestFinished(() => sub.close());
    const v0 = await h.ifindex('v0');
    const lines = [
      [
        '10.1.0.5',
        'lladdr',
        '02:00:00:00:00:05',
        'nud',
        'reachable',
        'extern_learn',
        'protocol',
        '153',
      ],
      ['10.1.0.6', 'lladdr', '02:00:00:00:00:06', 'nud', 'permanent'],
      ['10.1.0.7', 'lladdr', '0a:bb:cc:dd:ee:ff', 'nud', 'stale', 'protocol', '241'],
      ['2001:db8:1::5', 'lladdr', '02:00:00:00:01:05', 'nud', 'reachable', 'extern_learn'],
    ];
    for (const l of lines) ip(ns, 'neigh', 'replace', l[0]!, 'dev', 'v0', ...l.slice(1));
    ip(ns, 'neigh', 'replace', '10.1.0.9', 'lladdr', '02:00:00:00:00:09', 'dev', 'v0');
    ip(ns, 'neigh', 'del', '10.1.0.9', 'dev', 'v0');
    await waitFor(() => last.get(`10.1.0.9 ${v0}`) === 'gone', { what: 'the delete event' });
    const theirs = ipJson<IpNeigh[]>(ns, 'neigh', 'show', 'dev', 'v0', 'nud', 'all');
    for (const n of theirs) {
      if (n.state.includes('NOARP')) continue;
      const flags: string[] = [];
      if (n.managed === null) flags.push('managed');
      if (n.extern_learn === null) flags.push('extern_learn');
      const want = JSON.stringify({
        state: n.state,
        flags,
        protocol: n.protocol === undefined ? undefined : Number(n.protocol),
        lladdr: n.lladdr,
      });
      await waitFor(() => last.get(`${n.dst} ${v0}`) === want, {
        what: `${n.dst}: ${last.get(`${n.dst} ${v0}`)} vs ${want}`,
      });
    }
    expect(theirs.filter((n) => !n.state.includes('NOARP')).length).toBeGreaterThanOrEqual(4);
    expect(other).toBe(0); // every neighbor message was taken in place
  });
});
