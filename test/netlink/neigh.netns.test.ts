// Neighbors through NetlinkHandle, compared with `ip -j neigh show nud all`: state,
// extern_learn, the managed flag, protocol; bulk set/delete with per-entry failures.
// Large counts use extern_learn entries only (they do not count against gc_thresh3).
import { spawnSync } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidArgumentError } from '../../src/errors/index.js';
import {
  isManaged,
  neighFlagNames,
  NetlinkError,
  NetlinkHandle,
  NTF_EXT_LEARNED,
  NUD_NOARP,
  NUD_PERMANENT,
  NUD_REACHABLE,
  NUD_STALE,
  nudStateNames,
  protocolName,
  RTPROT_ZEBRA,
  type Neigh,
} from '../../src/netlink/index.js';
import { ipJson, makeNetns, privileged } from '../helpers/netns.js';

const { skip } = privileged();

interface IpNeigh {
  dst: string;
  dev: string;
  lladdr?: string;
  state: string[];
  protocol?: string;
  extern_learn?: null;
  managed?: null;
  router?: null;
}

const PROTO = 0x99; // fibkeeper's own NDA_PROTOCOL value in these tests

async function lab(tag: string): Promise<{ ns: string; h: NetlinkHandle; v0: number }> {
  const ns = makeNetns(tag);
  const h = NetlinkHandle.open({ netns: ns });
  onTestFinished(() => h.close());
  await h.linkAdd({ name: 'v0', kind: 'veth', up: true, peer: { name: 'v1' } });
  await h.linkSetUp('v1');
  return { ns, h, v0: await h.ifindex('v0') };
}

/** Entries with our protocol on v0, as `ip -j neigh show` counts them. */
function countProto(ns: string): number {
  const r = spawnSync('ip', ['-n', ns, '-j', 'neigh', 'show', 'dev', 'v0'], {
    encoding: 'utf8',
    maxBuffer: 256 << 20, // 20,000 entries exceed spawnSync's 1 MiB default
  });
  if (r.status !== 0) throw new Error(`ip -j neigh show: ${r.stderr}`);
  return (JSON.parse(r.stdout) as IpNeigh[]).filter((n) => n.protocol === String(PROTO)).length;
}

/** Our entry in ip -j's shape. */
function asIp(n: Neigh, names: Map<number, string>): IpNeigh {
  const o: IpNeigh = { dst: n.dst!, dev: names.get(n.ifindex)!, state: nudStateNames(n.state) };
  if (n.lladdr !== undefined) o.lladdr = n.lladdr;
  if (n.protocol !== undefined) o.protocol = protocolName(n.protocol);
  for (const f of neighFlagNames(n.flags, n.flagsExt))
    (o as unknown as Record<string, null>)[f] = null;
  return o;
}

describe.skipIf(skip)('neighbors', () => {
  it('neighSet writes state, extern_learn, managed and protocol exactly as ip shows them', async () => {
    const { ns, h, v0 } = await lab('nl-neigh');
    await h.neighSet({
      ifindex: v0,
      dst: '10.1.0.5',
      lladdr: '02:00:00:00:00:05',
      state: NUD_REACHABLE,
      externLearned: true,
      protocol: PROTO,
    });
    await h.neighSet({
      ifindex: v0,
      dst: '10.1.0.6',
      managed: true,
      externLearned: true,
      protocol: RTPROT_ZEBRA,
      state: 0,
    });
    await h.neighSet({
      ifindex: v0,
      dst: '2001:db8::7',
      lladdr: '02:00:00:00:00:07',
      state: NUD_STALE,
      router: true,
    });
    await h.neighSet({ ifindex: v0, dst: '10.1.0.8', lladdr: '02:00:00:00:00:08' }); // permanent
    const names = new Map((await h.linkList()).map((l) => [l.index, l.name!]));
    const ours = (await h.neighList())
      .filter((n) => !(n.state & NUD_NOARP))
      .map((n) => asIp(n, names));
    const theirs = ipJson<IpNeigh[]>(ns, 'neigh', 'show', 'nud', 'all').filter(
      (n) => !n.state.includes('NOARP'),
    );
    const byDst = (a: IpNeigh, b: IpNeigh) => a.dst.localeCompare(b.dst);
    expect(ours.sort(byDst)).toEqual(theirs.sort(byDst));
    const managed = (await h.neighGet({ ifindex: v0, dst: '10.1.0.6' }))!;
    expect(isManaged(managed)).toBe(true);
    expect(managed.protocol).toBe(RTPROT_ZEBRA);
    expect(theirs.find((n) => n.dst === '10.1.0.6')).toHaveProperty('managed', null);
    const el = await h.neighGet({ ifindex: v0, dst: '10.1.0.5' });
    expect(el).toMatchObject({
      state: NUD_REACHABLE,
      protocol: PROTO,
      lladdr: '02:00:00:00:00:05',
    });
    expect(el.flags & NTF_EXT_LEARNED).toBe(NTF_EXT_LEARNED);
    expect((await h.neighGet({ ifindex: v0, dst: '10.1.0.8' })).state).toBe(NUD_PERMANENT);
  });

  it('neighSet replaces in place; neighDel removes; both name the entry in errors', async () => {
    const { ns, h, v0 } = await lab('nl-ndel');
    const e = { ifindex: v0, dst: '10.1.0.9', lladdr: '02:00:00:00:00:09', externLearned: true };
    await h.neighSet(e);
    await h.neighSet({ ...e, lladdr: '02:00:00:00:00:10', protocol: PROTO });
    const t = ipJson<IpNeigh[]>(ns, 'neigh', 'show', '10.1.0.9', 'dev', 'v0');
    expect(t).toEqual([
      expect.objectContaining({ lladdr: '02:00:00:00:00:10', protocol: String(PROTO) }),
    ]);
    await h.neighDel(e);
    expect(ipJson<IpNeigh[]>(ns, 'neigh', 'show', '10.1.0.9', 'dev', 'v0')).toEqual([]);
    const err = await h.neighDel(e).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as Error).message).toMatch(/^neighDel 10\.1\.0\.9 dev \d+: ENOENT/);
    await expect(h.neighSet({ ...e, ifindex: 9999 })).rejects.toMatchObject({
      errnoName: 'ENODEV',
    });
  });

  it('neighSetMany writes 20,000 extern_learn entries in few sendmsg calls; a dump reads them back', async () => {
    const { ns, h, v0 } = await lab('nl-nbulk');
    const n = 20_000;
    const entries = Array.from({ length: n }, (_, i) => ({
      ifindex: v0,
      dst: `10.200.${i >> 8}.${i & 255}`,
      lladdr: `02:00:00:00:${((i >> 8) & 255).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
      state: NUD_REACHABLE,
      externLearned: true,
      protocol: PROTO,
    }));
    const before = h.stats.sendCalls;
    const res = await h.neighSetMany(entries);
    expect(res).toEqual({ ok: n, failures: [] });
    expect(h.stats.sendCalls - before).toBeLessThanOrEqual(Math.ceil(n / 1000));
    const dumped = await h.neighList({ ifindex: v0 });
    const mine = dumped.filter((d) => d.protocol === PROTO);
    expect(mine).toHaveLength(n);
    expect(new Set(mine.map((d) => d.dst))).toEqual(new Set(entries.map((e) => e.dst)));
    expect(mine.every((d) => d.flags & NTF_EXT_LEARNED && d.state === NUD_REACHABLE)).toBe(true);
    expect(countProto(ns)).toBe(n);
    // The same dump read entry by entry (neighEach, no list): the same entries and fields.
    const each: string[] = [];
    const count = await h.neighEach(
      (f) => {
        if (f.protocol === PROTO) each.push(`${f.dst} ${f.lladdr} ${f.state} ${f.flags}`);
      },
      { ifindex: v0 },
    );
    // Every entry of the device is handed over; the kernel's own (an IPv6 router or
    // multicast neighbor of the link) may come or go between the two dumps.
    expect(count).toBeGreaterThanOrEqual(n);
    expect(Math.abs(count - dumped.length)).toBeLessThanOrEqual(2);
    expect(each.sort()).toEqual(
      mine.map((d) => `${d.dst} ${d.lladdr} ${d.state} ${d.flags}`).sort(),
    );
    const del = await h.neighDelMany(entries);
    expect(del).toEqual({ ok: n, failures: [] });
    expect(countProto(ns)).toBe(0);
  });

  it('reports each failed entry of a bulk set with its reason and writes the others', async () => {
    const { ns, h, v0 } = await lab('nl-nfail');
    const entries = Array.from({ length: 3000 }, (_, i) => ({
      ifindex: i % 1000 === 500 ? 9999 : v0,
      dst: i === 1234 ? 'not-an-ip' : `10.201.${i >> 8}.${i & 255}`,
      lladdr: '02:00:00:00:00:01',
      externLearned: true,
      protocol: PROTO,
    }));
    const res = await h.neighSetMany(entries);
    expect(res.failures.map((f) => f.index)).toEqual([500, 1234, 1500, 2500]);
    expect(res.ok).toBe(2996);
    for (const f of res.failures) {
      if (f.index === 1234) expect(f.error).toBeInstanceOf(InvalidArgumentError);
      else expect(f.error).toMatchObject({ errnoName: 'ENODEV' });
      expect(f.entry).toBe(entries[f.index]);
    }
    expect(countProto(ns)).toBe(2996);
    const del = await h.neighDelMany(entries.filter((_, i) => i !== 1234));
    expect(del.failures.map((f) => f.index)).toEqual([500, 1499, 2499]); // 1234 was left out
  });
});
