// Whose entries fibkeeper touches (only its own, marked proto 241), what a restart does
// (adopts what is in use, removes its stale entries only after initialization), owner
// counting on forwardable IPs, and the IPs it refuses.
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { NetlinkHandle, type Neigh } from '../../src/netlink/index.js';
import { ifindexOf, ip, privileged, waitFor } from '../helpers/netns.js';
import {
  afterPrunes,
  buildLab,
  entry,
  hasMarks,
  neighs,
  owned,
  PROTO,
  pruneRounds,
  startAgent,
  waitEntry,
  waitGone,
} from './lab.js';

const { skip } = privileged();

/** Records neighbor deletions in `ns` (as "dst ifindex"). */
function recordDeletes(ns: string): string[] {
  const h = NetlinkHandle.open({ netns: ns });
  const deleted: string[] = [];
  const sub = h.subscribe(['neigh'], {
    onEvent: (ev) => {
      if (ev.kind === 'del' && ev.object === 'neigh') {
        const n: Neigh = ev.msg;
        deleted.push(`${n.dst} ${n.ifindex}`);
      }
    },
  });
  onTestFinished(() => {
    sub.close();
    h.close();
  });
  return deleted;
}

describe.skipIf(skip)('neighbor ownership', () => {
  it("never prunes or overwrites an operator's entries, only its own stale ones", async () => {
    const lab = buildLab('nb-own');
    // Before the agent starts: an operator's extern_learn entries (no mark, or another
    // protocol's), and a stale entry of fibkeeper's own from an earlier run.
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.99',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:99',
      'extern_learn',
    );
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.98',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:98',
      'nud',
      'reachable',
      'extern_learn',
      'proto',
      'bgp',
    );
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.3',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:03',
      'extern_learn',
    );
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.77',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:77',
      'nud',
      'stale', // as fibkeeper's entries are: dynamic (a PERMANENT one would be an operator's)
      'extern_learn',
      'proto',
      PROTO,
    );
    const n = await startAgent(lab.r, { config: { resyncInterval: 1000 } });
    n.upsert('test', ['10.1.0.20', '10.1.0.3']);
    await n.waitReady();
    await waitGone(lab.r, '10.1.0.77', 'ra0'); // the initial prune took fibkeeper's stale entry
    await waitEntry(lab.r, '10.1.0.20', 'ra0', hasMarks);
    await afterPrunes(n, 2); // two periodic prunes (every resyncInterval = 1 s)
    expect(entry(lab.r, '10.1.0.99', 'ra0')).toMatchObject({
      lladdr: '02:00:00:00:00:99',
      state: ['PERMANENT'],
    });
    expect(entry(lab.r, '10.1.0.98', 'ra0')).toMatchObject({ protocol: 'bgp' });
    // The operator's entry for a next hop fibkeeper wants is left as it is...
    const theirs = entry(lab.r, '10.1.0.3', 'ra0');
    expect(theirs).toMatchObject({ lladdr: '02:00:00:00:00:03', state: ['PERMANENT'] });
    expect(theirs?.protocol).toBeUndefined();
    expect(n.status({ ip: '10.1.0.3' }).desired[0]?.kernel?.owner).toBe('foreign');
    // ...until the operator removes it: then fibkeeper's own takes its place.
    ip(lab.r, 'neigh', 'del', '10.1.0.3', 'dev', 'ra0');
    await waitEntry(lab.r, '10.1.0.3', 'ra0', hasMarks);
    expect(n.status().counters.deletes.prune).toBe(1);
  });

  it('restart: keeps entries in use during start-up, removes the stale one after initialization', async () => {
    const lab = buildLab('nb-rst');
    const first = await startAgent(lab.r);
    first.setOwner('config', ['10.9.0.5', '10.1.0.20']);
    await first.waitReady();
    await waitEntry(lab.r, '10.1.0.2', 'ra0', hasMarks);
    await waitEntry(lab.r, '10.1.0.20', 'ra0', hasMarks);
    await first.stop();
    expect(owned(lab.r)).toEqual(['10.1.0.2 ra0', '10.1.0.20 ra0']); // stop leaves them

    ip(lab.r, 'route', 'replace', '10.9.0.0/24', 'via', '10.1.0.3');
    const deleted = recordDeletes(lab.r);
    let configLoaded: () => void = () => undefined;
    const second = await startAgent(lab.r, {
      before: (n) => (configLoaded = n.registerInitializer('config')),
    });
    // Started with its tables dumped, but the config has not been loaded yet: no prune ran.
    await waitFor(
      () =>
        ['devices', 'routes', 'neighbors'].every(
          (t) => (second.status().counters.resyncs[`${t}/startup`] ?? 0) >= 1,
        ),
      { what: 'the startup dumps' },
    );
    await second.settled();
    expect(second.ready()).toBe(false);
    expect(await pruneRounds(second)).toBe(0);
    expect(owned(lab.r)).toEqual(['10.1.0.2 ra0', '10.1.0.20 ra0']);
    second.setOwner('config', ['10.9.0.5', '10.1.0.20']);
    configLoaded();
    await second.waitReady();
    await waitGone(lab.r, '10.1.0.2', 'ra0');
    await waitEntry(lab.r, '10.1.0.3', 'ra0', hasMarks);
    expect(owned(lab.r)).toEqual(['10.1.0.20 ra0', '10.1.0.3 ra0']);
    const ra0 = ifindexOf(lab.r, 'ra0');
    await waitFor(() => deleted.length > 0, { what: 'the delete event' });
    await second.settled();
    expect(second.status().counters.deletes).toEqual({ reconcile: 0, prune: 1 });
    expect(deleted).toEqual([`10.1.0.2 ${ra0}`]); // the entry in use was never deleted
  });

  it('counts owners: an IP held by two survives the removal of one; spellings are one row', async () => {
    const lab = buildLab('nb-cnt');
    const n = await startAgent(lab.r);
    await n.waitReady();
    n.upsert('a', ['fd00:99:0:0::5']);
    n.upsert('b', ['FD00:99::5', '10.1.0.20']);
    expect(n.list().find((f) => f.ip === 'fd00:99::5')).toEqual({
      ip: 'fd00:99::5',
      owners: ['a', 'b'],
    });
    expect(n.list()).toHaveLength(2);
    await waitEntry(lab.r, 'fd00:a::2', 'ra0', hasMarks);
    n.delete('a', ['fd00:0099::0:5']);
    await n.settled();
    expect(hasMarks(entry(lab.r, 'fd00:a::2', 'ra0'))).toBe(true);
    expect(n.list().find((f) => f.ip === 'fd00:99::5')?.owners).toEqual(['b']);
    // All or nothing: one bad IP and nothing of the call is applied.
    expect(() => n.setOwner('b', ['10.1.0.3', 'not-an-ip'])).toThrow(/not-an-ip/);
    expect(
      n
        .list()
        .map((f) => f.ip)
        .sort(),
    ).toEqual(['10.1.0.20', 'fd00:99::5']);
    n.setOwner('b', ['10.1.0.20']);
    await waitGone(lab.r, 'fd00:a::2', 'ra0');
    expect(owned(lab.r)).toEqual(['10.1.0.20 ra0']);
  });

  it("refuses the node's own addresses and reserved ranges, and stops forwarding to an IP that becomes the node's", async () => {
    const lab = buildLab('nb-bad');
    const n = await startAgent(lab.r);
    await n.waitReady();
    const refused: [string, RegExp][] = [
      ['10.1.0.1', /10\.1\.0\.1 is an address of this node \(on ra0\)/],
      ['fd00:a::1', /address of this node/],
      ['127.0.0.1', /loopback/],
      ['::1', /loopback/],
      ['224.0.0.5', /multicast/],
      ['ff02::1', /multicast/],
      ['255.255.255.255', /limited broadcast/],
      ['169.254.1.1', /link-local/],
      ['fe80::1', /link-local/],
      ['0.0.0.0', /unspecified/],
      ['::', /unspecified/],
      ['::ffff:10.1.0.20', /IPv4-mapped/],
      ['fd00:a::2%ra0', /zone/i],
      ['10.1.0.256', /10\.1\.0\.256/],
    ];
    for (const [bad, why] of refused) {
      let err: unknown;
      try {
        n.upsert('test', [bad]);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(InvalidArgumentError);
      expect((err as Error).message, bad).toMatch(why);
      expect((err as Error).message, bad).toContain(JSON.stringify(bad));
    }
    expect(n.list()).toEqual([]);

    n.upsert('test', ['10.1.0.20']);
    await waitEntry(lab.r, '10.1.0.20', 'ra0', hasMarks);
    ip(lab.r, 'addr', 'add', '10.1.0.20/32', 'dev', 'rb0');
    await waitGone(lab.r, '10.1.0.20', 'ra0');
    expect(n.status({ ip: '10.1.0.20' }).forwardable[0]?.nodeAddress).toBe('rb0');
    ip(lab.r, 'addr', 'del', '10.1.0.20/32', 'dev', 'rb0');
    await waitEntry(lab.r, '10.1.0.20', 'ra0', hasMarks);
    expect(neighs(lab.r).filter((x) => x.protocol === PROTO)).toHaveLength(1);
    await waitFor(() => n.health().level === 'ok', { what: 'healthy' });
  });
});
