// Links through NetlinkHandle, compared field by field with `ip -j -d link show` in a
// fresh namespace.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  ARPHRD_ETHER,
  ARPHRD_LOOPBACK,
  IFF_UP,
  linkFlagNames,
  NetlinkError,
  NetlinkHandle,
  operstateName,
  XDP_ATTACHED_NONE,
  XDP_ATTACHED_SKB,
  type Link,
} from '../../src/netlink/index.js';
import { ip, ipJson, makeNetns, privileged } from '../helpers/netns.js';

const { skip } = privileged();

interface IpLink {
  ifindex: number;
  ifname: string;
  flags: string[];
  mtu: number;
  operstate: string;
  link_type: string;
  address?: string;
  master?: string;
  link?: string;
  txqlen?: number;
  linkinfo?: { info_kind?: string };
}

function open(netns: string): NetlinkHandle {
  const h = NetlinkHandle.open({ netns });
  onTestFinished(() => h.close());
  return h;
}

const LINK_TYPES: Record<string, number> = { ether: ARPHRD_ETHER, loopback: ARPHRD_LOOPBACK };

/** Compares our view of every link with ip's, field by field. */
function expectSameLinks(ours: Link[], theirs: IpLink[]): void {
  expect(ours.map((l) => l.index).sort()).toEqual(theirs.map((l) => l.ifindex).sort());
  const byIndex = new Map(ours.map((l) => [l.index, l]));
  const nameOf = (i: number | undefined) => (i === undefined ? undefined : byIndex.get(i)?.name);
  for (const t of theirs) {
    const l = byIndex.get(t.ifindex)!;
    const what = `link ${t.ifname}`;
    expect(l.name, what).toBe(t.ifname);
    expect(l.mtu, what).toBe(t.mtu);
    expect(l.address, what).toBe(t.address);
    expect(l.txqlen, what).toBe(t.txqlen);
    expect(l.type, what).toBe(LINK_TYPES[t.link_type]);
    expect(operstateName(l.operstate ?? -1), what).toBe(t.operstate);
    const flags = t.flags.filter((f) => f !== 'M-DOWN');
    expect(linkFlagNames(l.flags).sort(), what).toEqual(flags.sort());
    expect(nameOf(l.master), what).toBe(t.master);
    expect(l.info?.kind, what).toBe(t.linkinfo?.info_kind);
    if (t.link !== undefined) expect(nameOf(l.link), what).toBe(t.link);
  }
}

/**
 * Compares our view with `ip -d link show` until two reads of ip in a row agree around ours
 * (a link whose state moved in between is read again), then asserts on that read.
 */
async function sameLinksOnceSettled(ns: string, list: () => Promise<Link[]>): Promise<void> {
  // What expectSameLinks compares (bridge timers in -d move all the time and are not it).
  const key = (links: IpLink[]) =>
    JSON.stringify(links.map((l) => [l.ifindex, l.operstate, l.flags, l.mtu, l.master]));
  for (let i = 0; ; i++) {
    const before = ipJson<IpLink[]>(ns, '-d', 'link', 'show');
    const ours = await list();
    const after = ipJson<IpLink[]>(ns, '-d', 'link', 'show');
    if (key(before) === key(after) || i >= 50) {
      expectSameLinks(ours, after);
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(skip)('links', () => {
  it('linkAdd creates veth, bridge and ifb links that ip sees as we do', async () => {
    const ns = makeNetns('nl-link');
    const h = open(ns);
    await h.linkAdd({ name: 'br0', kind: 'bridge', up: true });
    const br = await h.ifindex('br0');
    await h.linkAdd({
      name: 'va',
      kind: 'veth',
      mtu: 9000,
      address: '02:aa:00:00:00:01',
      master: br,
      peer: { name: 'vb', address: '02:bb:00:00:00:01', mtu: 9000 },
      up: true,
    });
    await h.linkAdd({ name: 'ifb0', kind: 'ifb', txqlen: 77 });
    // A new bridge and its port settle (carrier, operstate) on the kernel's link watch a
    // moment later: compare once both views were read after it, the same state on both sides.
    await sameLinksOnceSettled(ns, () => h.linkList());
    const va = await h.linkGet('va');
    expect(va).toMatchObject({ mtu: 9000, address: '02:aa:00:00:00:01', master: br });
    expect(va.info?.kind).toBe('veth');
    expect((await h.linkGet(va.index)).name).toBe('va');
  });

  it('the dummy kind works where the kernel has it, and fails with a typed error where not', async () => {
    const ns = makeNetns('nl-dummy');
    const h = open(ns);
    const r = await h.linkAdd({ name: 'd0', kind: 'dummy' }).then(
      () => 'ok',
      (e: unknown) => e,
    );
    if (r === 'ok') {
      expect(ipJson<IpLink[]>(ns, '-d', 'link', 'show', 'dev', 'd0')[0]?.linkinfo?.info_kind).toBe(
        'dummy',
      );
    } else {
      // This kernel has no dummy driver: ip says "Unknown device type" too.
      expect(r).toBeInstanceOf(NetlinkError);
      expect((r as NetlinkError).errnoName).toBe('EOPNOTSUPP');
      expect(() => ip(ns, 'link', 'add', 'd0', 'type', 'dummy')).toThrow(/Unknown device type/);
    }
  });

  it('linkSet changes up/down, mtu, address, master and name; linkDel removes', async () => {
    const ns = makeNetns('nl-lset');
    const h = open(ns);
    ip(ns, 'link', 'add', 'br0', 'type', 'bridge');
    ip(ns, 'link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1');
    const br = await h.ifindex('br0');
    await h.linkSetUp('v0');
    expect(ipJson<IpLink[]>(ns, 'link', 'show', 'dev', 'v0')[0]!.flags).toContain('UP');
    await h.linkSet('v0', { mtu: 1400, address: '02:00:00:00:00:42', master: br });
    let t = ipJson<IpLink[]>(ns, 'link', 'show', 'dev', 'v0')[0]!;
    expect(t).toMatchObject({ mtu: 1400, address: '02:00:00:00:00:42', master: 'br0' });
    await h.linkSet('v0', { master: 0 });
    await h.linkSetDown('v0');
    t = ipJson<IpLink[]>(ns, 'link', 'show', 'dev', 'v0')[0]!;
    expect(t.master).toBeUndefined();
    expect(t.flags).not.toContain('UP');
    expect((await h.linkGet('v0')).flags & IFF_UP).toBe(0);
    const idx = await h.ifindex('v0');
    await h.linkSet(idx, { name: 'renamed' });
    expect(ipJson<IpLink[]>(ns, 'link', 'show', 'dev', 'renamed')[0]!.ifindex).toBe(idx);
    await h.linkDel('renamed');
    await h.linkDel('br0');
    expect(ipJson<IpLink[]>(ns, 'link', 'show').map((l) => l.ifname)).toEqual(['lo']);
  });

  it('a veth peer can be put into another namespace; each handle sees only its own', async () => {
    const a = makeNetns('nl-pa');
    const b = makeNetns('nl-pb');
    const ha = open(a);
    const hb = open(b);
    await ha.linkAdd({ name: 'to-b', kind: 'veth', peer: { name: 'to-a', netns: b } });
    expect((await ha.linkList()).map((l) => l.name).sort()).toEqual(['lo', 'to-b']);
    expect((await hb.linkList()).map((l) => l.name).sort()).toEqual(['lo', 'to-a']);
    expect(ipJson<IpLink[]>(b, 'link', 'show', 'dev', 'to-a')).toHaveLength(1);
    const err = await ha.linkGet('to-a').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as NetlinkError).errnoName).toBe('ENODEV');
  });

  it.skipIf(spawnSync('clang', ['--version']).status !== 0)(
    'reports the XDP attachment as ip does',
    async () => {
      const ns = makeNetns('nl-xdp');
      const dir = mkdtempSync(join(tmpdir(), 'fkt-xdp-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      // A two-line XDP_PASS program, attached in generic mode inside the test namespace only.
      writeFileSync(
        join(dir, 'x.c'),
        '__attribute__((section("xdp"), used)) int pass(void *ctx) { return 2; }\n' +
          'char _license[] __attribute__((section("license"), used)) = "GPL";\n',
      );
      execFileSync('clang', [
        '-O2',
        '-target',
        'bpf',
        '-c',
        join(dir, 'x.c'),
        '-o',
        join(dir, 'x.o'),
      ]);
      const h = open(ns);
      await h.linkAdd({ name: 'v0', kind: 'veth', peer: { name: 'v1' } });
      expect((await h.linkGet('v0')).xdp).toEqual({ attached: XDP_ATTACHED_NONE });
      ip(ns, 'link', 'set', 'dev', 'v0', 'xdpgeneric', 'obj', join(dir, 'x.o'), 'sec', 'xdp');
      const t = ipJson<{ xdp: { mode: number; prog: { id: number } } }[]>(
        ns,
        '-d',
        'link',
        'show',
        'dev',
        'v0',
      )[0]!;
      const x = (await h.linkGet('v0')).xdp;
      expect(x).toMatchObject({ attached: XDP_ATTACHED_SKB, progId: t.xdp.prog.id });
      expect(x?.attached).toBe(t.xdp.mode);
      ip(ns, 'link', 'set', 'dev', 'v0', 'xdpgeneric', 'off');
    },
  );

  it('errors carry errno, its name and the operation', async () => {
    const ns = makeNetns('nl-lerr');
    const h = open(ns);
    await h.linkAdd({ name: 'v0', kind: 'veth', peer: { name: 'v1' } });
    const err = await h
      .linkAdd({ name: 'v0', kind: 'veth', peer: { name: 'v2' } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ errno: 17, errnoName: 'EEXIST', code: 'FIBKEEPER_ERR_NETLINK' });
    expect((err as Error).message).toMatch(/^linkAdd v0 type veth: EEXIST/);
    await expect(h.linkDel('nope0')).rejects.toMatchObject({ errnoName: 'ENODEV' });
  });
});
