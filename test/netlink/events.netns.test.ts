// Subscriptions against the kernel: new/del events for links, addresses, routes and
// neighbors; subscribe-then-dump leaves nothing out; a flood that overflows a tiny
// receive buffer yields an `overflow` event and the process and the client live on.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  isManaged,
  NetlinkHandle,
  NTF_EXT_LEARNED,
  NUD_REACHABLE,
  type GroupName,
  type Neigh,
  type SubscriptionEvent,
} from '../../src/netlink/index.js';
import { ip, ipJson, makeNetns, privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();

function open(netns: string): NetlinkHandle {
  const h = NetlinkHandle.open({ netns });
  onTestFinished(() => h.close());
  return h;
}

function record(h: NetlinkHandle, groups: GroupName[], opts: { rcvbuf?: number } = {}) {
  const events: SubscriptionEvent[] = [];
  const errors: Error[] = [];
  const sub = h.subscribe(
    groups,
    { onEvent: (e) => events.push(e), onError: (e) => errors.push(e) },
    opts,
  );
  onTestFinished(() => sub.close());
  return { sub, events, errors };
}

function batchFile(lines: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-nl-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'cmds');
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

const neighLines = (n: number, verb = 'replace', base = 10) =>
  Array.from(
    { length: n },
    (_, i) =>
      `neigh ${verb} 10.${base}.${i >> 8}.${i & 255} lladdr 02:00:00:00:00:01 dev v0 nud reachable extern_learn`,
  );

describe.skipIf(skip)('subscriptions', () => {
  it('reports new and del for links, addresses, routes and neighbors', async () => {
    const ns = makeNetns('nl-ev');
    const h = open(ns);
    const { events, errors } = record(h, ['link', 'address', 'route', 'neigh']);
    ip(ns, 'link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1');
    ip(ns, 'link', 'set', 'v0', 'up');
    ip(ns, 'addr', 'add', '10.1.0.1/24', 'dev', 'v0');
    ip(ns, 'route', 'add', '10.2.0.0/16', 'via', '10.1.0.254');
    ip(
      ns,
      'neigh',
      'replace',
      '10.1.0.5',
      'lladdr',
      '02:00:00:00:00:05',
      'dev',
      'v0',
      'nud',
      'reachable',
      'extern_learn',
      'protocol',
      '153',
    );
    ip(ns, 'neigh', 'del', '10.1.0.5', 'dev', 'v0');
    ip(ns, 'route', 'del', '10.2.0.0/16');
    ip(ns, 'addr', 'del', '10.1.0.1/24', 'dev', 'v0');
    ip(ns, 'link', 'del', 'v0');
    const seen = (kind: string, object: string, pred: (e: SubscriptionEvent) => boolean) =>
      events.some((e) => e.kind === kind && 'object' in e && e.object === object && pred(e));
    const v0 = (e: SubscriptionEvent) =>
      'object' in e && e.object === 'link' && e.msg.name === 'v0';
    await waitFor(() => seen('del', 'link', v0), { what: 'link del event' });
    expect(seen('new', 'link', v0)).toBe(true);
    const addr = (e: SubscriptionEvent) =>
      'object' in e && e.object === 'address' && e.msg.local === '10.1.0.1';
    expect(seen('new', 'address', addr)).toBe(true);
    expect(seen('del', 'address', addr)).toBe(true);
    const route = (e: SubscriptionEvent) =>
      'object' in e &&
      e.object === 'route' &&
      e.msg.dst === '10.2.0.0' &&
      e.msg.gateway === '10.1.0.254';
    expect(seen('new', 'route', route)).toBe(true);
    expect(seen('del', 'route', route)).toBe(true);
    const neigh = events.filter(
      (e): e is SubscriptionEvent & { msg: Neigh } =>
        'object' in e && e.object === 'neigh' && e.msg.dst === '10.1.0.5',
    );
    expect(neigh[0]?.kind).toBe('new');
    expect(neigh.at(-1)?.kind).toBe('del');
    expect(neigh[0]!.msg).toMatchObject({
      protocol: 153,
      lladdr: '02:00:00:00:00:05',
      flags: NTF_EXT_LEARNED,
    });
    expect(errors).toEqual([]);
  });

  it('reports the managed flag in events (the kernel notifies a managed entry once it resolves)', async () => {
    const ns = makeNetns('nl-evm');
    const peer = makeNetns('nl-evmp');
    const h = open(ns);
    await h.linkAdd({ name: 'v0', kind: 'veth', up: true, peer: { name: 'v1', netns: peer } });
    const v0 = await h.ifindex('v0');
    await h.addrAdd({ ifindex: v0, address: '10.1.0.1', prefixlen: 24 });
    ip(peer, 'addr', 'add', '10.1.0.5/24', 'dev', 'v1');
    ip(peer, 'link', 'set', 'v1', 'up');
    const peerMac = ipJson<{ address: string }[]>(peer, 'link', 'show', 'dev', 'v1')[0]!.address;
    const { events } = record(h, ['neigh']);
    // A managed entry takes neither state nor lladdr: the kernel resolves it (ARP) itself.
    await h.neighSet({
      ifindex: v0,
      dst: '10.1.0.5',
      managed: true,
      externLearned: true,
      protocol: 153,
      state: 0,
    });
    const resolved = await waitFor(() =>
      events.find(
        (e): e is SubscriptionEvent & { msg: Neigh } =>
          'object' in e &&
          e.object === 'neigh' &&
          e.msg.dst === '10.1.0.5' &&
          e.msg.state === NUD_REACHABLE,
      ),
    );
    expect(resolved.kind).toBe('new');
    expect(isManaged(resolved.msg)).toBe(true);
    expect(resolved.msg).toMatchObject({ protocol: 153, lladdr: peerMac, flags: NTF_EXT_LEARNED });
  });

  it('subscribe, then dump: the dump plus the events equal the final table', async () => {
    const ns = makeNetns('nl-sync');
    const h = open(ns);
    await h.linkAdd({ name: 'v0', kind: 'veth', up: true, peer: { name: 'v1' } });
    const v0 = await h.ifindex('v0');
    // The kernel's neighbor dump walks the hash table bucket by bucket and has no
    // consistency check: if the table grows (rehashes) between two parts of a dump, entries
    // that existed all along can be skipped. The table (one for all namespaces) never
    // shrinks, so growing it beforehand keeps this test about our ordering, not about that.
    ip(ns, '-batch', batchFile(neighLines(8192, 'replace', 30)));
    ip(ns, '-batch', batchFile(neighLines(8192, 'del', 30)));
    ip(ns, '-batch', batchFile(neighLines(1000, 'replace', 20)));
    // A writer adds 3000 and deletes 500 entries while we subscribe and dump.
    const file = batchFile([...neighLines(3000, 'replace', 21), ...neighLines(500, 'del', 20)]);
    const child = spawn('ip', ['-n', ns, '-batch', file], { stdio: 'ignore' });
    const exited = new Promise((r) => child.on('exit', r));
    const { events } = record(h, ['neigh']);
    const table = new Map<string, Neigh>();
    for (const n of await h.neighList({ ifindex: v0 })) table.set(n.dst!, n);
    await exited;
    const final = () => ip(ns, 'neigh', 'show', 'dev', 'v0').trimEnd().split('\n').length;
    const want = final();
    await waitFor(
      () => {
        const t = new Map(table);
        for (const e of events) {
          if (!('object' in e) || e.object !== 'neigh' || e.msg.ifindex !== v0) continue;
          if (e.kind === 'new') t.set(e.msg.dst!, e.msg);
          else t.delete(e.msg.dst!);
        }
        return t.size === want;
      },
      { what: `dump + events to reach ${want} entries` },
    );
    expect(events.some((e) => e.kind === 'overflow')).toBe(false);
  });

  it('a flood that overflows the receive buffer yields an overflow event; everything keeps working', async () => {
    const ns = makeNetns('nl-flood');
    const h = open(ns);
    await h.linkAdd({ name: 'v0', kind: 'veth', up: true, peer: { name: 'v1' } });
    const v0 = await h.ifindex('v0');
    const { sub, events } = record(h, ['neigh'], { rcvbuf: 4096 });
    // spawnSync blocks the event loop: nothing is read while 5000 notifications arrive.
    const r = spawnSync('ip', ['-n', ns, '-batch', batchFile(neighLines(5000))]);
    expect(r.status).toBe(0);
    await waitFor(() => events.some((e) => e.kind === 'overflow'), { what: 'overflow event' });
    expect(sub.stats.overflows).toBeGreaterThanOrEqual(1);
    const overflow = events.find((e) => e.kind === 'overflow');
    expect(overflow).toEqual({ kind: 'overflow', count: 1, cause: 'ENOBUFS', reopened: false });
    // The subscription still delivers, and the request side still answers: resync works.
    ip(
      ns,
      'neigh',
      'replace',
      '10.99.0.1',
      'lladdr',
      '02:00:00:00:00:02',
      'dev',
      'v0',
      'extern_learn',
    );
    await waitFor(
      () => events.some((e) => 'object' in e && e.object === 'neigh' && e.msg.dst === '10.99.0.1'),
      {
        what: 'event after the overflow',
      },
    );
    expect(
      (await h.neighList({ ifindex: v0 })).filter((n) => n.dst !== undefined).length,
    ).toBeGreaterThanOrEqual(5001);
  });

  it('a paused subscription reads nothing; resumed, it reads every queued event in order', async () => {
    const ns = makeNetns('nl-pause');
    const h = open(ns);
    ip(ns, 'link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1');
    ip(ns, 'link', 'set', 'v0', 'up');
    const { sub, events } = record(h, ['neigh'], { rcvbuf: 4 << 20 });
    sub.reading(false);
    expect(sub.paused).toBe(true);
    ip(ns, '-batch', batchFile(neighLines(200)));
    // The kernel has them all; nothing is read while paused.
    expect((await h.neighList({ ifindex: await h.ifindex('v0') })).length).toBeGreaterThanOrEqual(
      200,
    );
    // What waits is what the pacer counts (pace.ts): at least an skb of ~768 B per event. Once
    // it is all in the socket, nothing of it was read.
    await waitFor(() => (sub.queuedBytes() ?? 0) >= 200 * 512 || undefined, {
      what: 'the events queued in the socket',
    });
    expect(events).toEqual([]);
    sub.reading(true);
    expect(sub.paused).toBe(false);
    await waitFor(() => events.length >= 200 || undefined, { what: 'the queued events' });
    expect(sub.queuedBytes()).toBe(0);
    sub.close();
    expect(sub.queuedBytes()).toBeUndefined();
    const dsts = events.map((e) =>
      e.kind !== 'overflow' && e.object === 'neigh' ? e.msg.dst : e.kind,
    );
    expect(dsts).toEqual(neighLines(200).map((l) => l.split(' ')[2]));
  });
});
