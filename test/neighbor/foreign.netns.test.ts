// Other people's entries: an entry for a desired next hop that is PERMANENT or NOARP, that
// another writer wrote over fibkeeper's, or that carries another protocol, is foreign. It is
// never changed or deleted (not by a write, a reconcile delete or a prune), it is shown as
// foreign in the JSON and the text status, it is counted in
// fibkeeper_neighbor_foreign_entries, and fibkeeper writes its own only once it is gone.
import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/status-format.js';
import { ip, ipJson, privileged, waitFor } from '../helpers/netns.js';
import {
  afterPrunes,
  buildLab,
  entry,
  hasMarks,
  PROTO,
  startAgent,
  waitEntry,
  type IpNeigh,
} from './lab.js';
import type { NeighborSubsystem } from '../../src/neighbor/index.js';

const { skip } = privileged();

async function foreignGauge(n: NeighborSubsystem): Promise<number> {
  const text = await n.metrics.registry.metrics();
  const m = /^fibkeeper_neighbor_foreign_entries (\d+)$/m.exec(text);
  if (m === null) throw new Error('no fibkeeper_neighbor_foreign_entries in the metrics');
  return Number(m[1]);
}

/** The text status line of a next hop (`fibkeeper status`). */
function textRow(n: NeighborSubsystem, nexthop: string): string {
  const text = formatStatus({ neighbor: n.status() });
  const line = text.split('\n').find((l) => l.includes(` ${nexthop} `) || l.endsWith(nexthop));
  if (line === undefined) throw new Error(`no row for ${nexthop} in:\n${text}`);
  return line;
}

/** The entry as `ip neigh` shows it, NOARP ones included (lab.ts's entry() leaves them out). */
function anyEntry(ns: string, dst: string, dev: string): IpNeigh | undefined {
  return ipJson<IpNeigh[]>(ns, 'neigh', 'show', 'nud', 'all').find(
    (n) => n.dst === dst && n.dev === dev,
  );
}

const unchanged = (e: IpNeigh | undefined, lladdr: string, state: string) =>
  e !== undefined && e.lladdr === lladdr && e.state.includes(state) && e.protocol !== PROTO;

describe.skipIf(skip)('neighbor: entries that belong to someone else', () => {
  it("an operator's nud noarp entry on a desired next hop is left alone and never deleted", async () => {
    const lab = buildLab('nb-fg1');
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.3',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:03',
      'nud',
      'noarp',
    );
    const n = await startAgent(lab.r, { config: { resyncInterval: 1000 } });
    n.upsert('test', ['10.1.0.3', '10.1.0.20']);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.20', 'ra0', hasMarks);
    await n.settled(); // the writes
    await afterPrunes(n, 2); // and two periodic prunes
    expect(unchanged(anyEntry(lab.r, '10.1.0.3', 'ra0'), '02:00:00:00:00:03', 'NOARP')).toBe(true);
    expect(n.status({ ip: '10.1.0.3' }).desired[0]?.kernel?.owner).toBe('foreign');
    expect(n.status().summary.foreignEntries).toBe(1);
    expect(textRow(n, '10.1.0.3')).toMatch(/foreign/);
    expect(textRow(n, '10.1.0.20')).not.toMatch(/foreign/);
    expect(await foreignGauge(n)).toBe(1);
    // Not wanted any more: still not ours to delete.
    n.delete('test', ['10.1.0.3']);
    await n.settled();
    await afterPrunes(n, 1); // and another prune
    expect(unchanged(anyEntry(lab.r, '10.1.0.3', 'ra0'), '02:00:00:00:00:03', 'NOARP')).toBe(true);
    expect(await foreignGauge(n)).toBe(0); // no desired next hop is held by a foreign entry
    expect(n.status().counters.deletes).toEqual({ reconcile: 0, prune: 0 });
  });

  it("an operator who writes a permanent entry over fibkeeper's keeps it until they delete it", async () => {
    const lab = buildLab('nb-fg2');
    const n = await startAgent(lab.r, { config: { resyncInterval: 1000 } });
    n.upsert('test', ['10.1.0.3']);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.3', 'ra0', (e) => hasMarks(e) && e.state.includes('REACHABLE'));
    // Pinned by hand, without a protocol: the kernel keeps proto 241 on a replace.
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.3',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:33',
      'nud',
      'permanent',
    );
    // The agent sees the event, then two prunes run.
    await waitFor(() => n.status({ ip: '10.1.0.3' }).desired[0]?.kernel?.owner === 'foreign', {
      what: 'the pinned entry seen as foreign',
    });
    await afterPrunes(n, 2);
    const pinned = entry(lab.r, '10.1.0.3', 'ra0');
    expect(pinned).toMatchObject({ lladdr: '02:00:00:00:00:33', state: ['PERMANENT'] });
    expect(pinned?.extern_learn).toBeUndefined();
    expect(n.status({ ip: '10.1.0.3' }).desired[0]?.kernel?.owner).toBe('foreign');
    expect(textRow(n, '10.1.0.3')).toMatch(/foreign/);
    expect(await foreignGauge(n)).toBe(1);
    // The operator deletes it: fibkeeper's own takes its place. (What is asserted is that it
    // does, not how fast: the default 5 s ran out once in a full-suite run on Node 22, with
    // the machine loaded; the latency is measured in bench/neighbor.)
    ip(lab.r, 'neigh', 'del', '10.1.0.3', 'dev', 'ra0');
    await waitEntry(
      lab.r,
      '10.1.0.3',
      'ra0',
      (e) => hasMarks(e) && e.state.includes('REACHABLE'),
      15_000,
    );
    // The agent learns it from the kernel's event, which can follow what `ip` shows.
    await waitFor(() => n.status({ ip: '10.1.0.3' }).desired[0]?.kernel?.owner === 'fibkeeper', {
      what: 'status to show fibkeeper as the owner again',
    });
    expect(await foreignGauge(n)).toBe(0);
    // Pinned again, then the IP is no longer wanted: the pinned entry stays.
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.3',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:34',
      'nud',
      'permanent',
    );
    await waitFor(() => n.status({ ip: '10.1.0.3' }).desired[0]?.kernel?.owner === 'foreign', {
      what: 'the pinned entry seen as foreign again',
    });
    n.delete('test', ['10.1.0.3']);
    await n.settled();
    await afterPrunes(n, 1);
    expect(entry(lab.r, '10.1.0.3', 'ra0')).toMatchObject({
      lladdr: '02:00:00:00:00:34',
      state: ['PERMANENT'],
    });
    expect(n.status().counters.deletes).toEqual({ reconcile: 0, prune: 0 });
  });

  it('another writer that replaces the entry with a dynamic one of its own is left alone', async () => {
    const lab = buildLab('nb-fg3');
    const n = await startAgent(lab.r, { config: { refresh: 'legacy', resyncInterval: 1000 } });
    n.upsert('test', ['10.1.0.20']);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.20', 'ra0', (e) => e.state.includes('REACHABLE'));
    ip(
      lab.r,
      'neigh',
      'replace',
      '10.1.0.20',
      'dev',
      'ra0',
      'lladdr',
      '02:00:00:00:00:20',
      'nud',
      'stale',
    );
    await waitFor(() => n.status({ ip: '10.1.0.20' }).desired[0]?.kernel?.owner === 'foreign', {
      what: "the other writer's entry seen as foreign",
    });
    await n.settled();
    await afterPrunes(n, 2);
    const theirs = entry(lab.r, '10.1.0.20', 'ra0');
    expect(theirs).toMatchObject({ lladdr: '02:00:00:00:00:20', state: ['STALE'] });
    expect(theirs?.extern_learn).toBeUndefined();
    expect(n.status({ ip: '10.1.0.20' }).desired[0]?.kernel?.owner).toBe('foreign');
    expect(n.status().counters.refreshes).toBe(0);
  });
});
