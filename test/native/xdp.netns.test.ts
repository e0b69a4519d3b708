// Privileged tests of XDP attachment (links and legacy netlink) on veths in namespaces of
// their own, checked against `ip -d link` and bpf_xdp_query.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BpfLink,
  BpfObject,
  BpfProgram,
  PacketSocket,
  XdpAction,
  xdpAttachLegacy,
  xdpDetachLegacy,
  xdpLinks,
  xdpLinksOn,
  xdpQuery,
} from '../../src/native/index.js';
import {
  ifindexOf,
  ipJson,
  makeNetns,
  privileged,
  sysctl,
  vethPair,
  waitFor,
} from '../helpers/netns.js';
import { compileBpf, privateBpffs } from './fixtures.js';
import { track } from '../helpers/cleanup.js';

const { skip } = privileged();
const ADDON = fileURLToPath(new URL('../../native/build/Release/fibkeeper.node', import.meta.url));
const FLOOD = fileURLToPath(new URL('./fixtures/flood.mjs', import.meta.url));

let testObj = '';
beforeAll(() => {
  if (!skip) testObj = compileBpf('xdp_test');
});

/** Two namespaces joined by a veth pair: a/va <-> b/vb. No IPv6, so no background frames. */
function lab(tag: string) {
  const a = makeNetns(`${tag}a`);
  const b = makeNetns(`${tag}b`);
  for (const ns of [a, b]) {
    sysctl(ns, 'net.ipv6.conf.all.disable_ipv6', 1);
    sysctl(ns, 'net.ipv6.conf.default.disable_ipv6', 1);
  }
  vethPair(a, 'va', b, 'vb', { macA: '02:00:00:00:00:0a', macB: '02:00:00:00:00:0b' });
  return { a, b, va: ifindexOf(a, 'va'), vb: ifindexOf(b, 'vb') };
}

/** The XDP section of `ip -d -j link show dev`, as iproute2 reports it. */
function ipXdp(ns: string, dev: string): { mode?: number; prog?: { id: number } } | undefined {
  const [l] = ipJson<{ xdp?: { mode?: number; prog?: { id: number } } }[]>(
    ns,
    '-d',
    'link',
    'show',
    'dev',
    dev,
  );
  return l?.xdp;
}

/** xdp_test with `verdict` set, and its program and stats map. */
function counting(verdict: number) {
  const obj = track(BpfObject.open(testObj));
  const v = Buffer.alloc(4);
  v.writeUInt32LE(verdict);
  obj.setRodata('verdict', v);
  obj.load();
  const prog = track(obj.program('xdp_test'));
  const stats = track(obj.map('stats'));
  const packets = () =>
    (stats.lookupPerCpu(Buffer.alloc(4)) ?? []).reduce((sum, b) => sum + b.readUInt32LE(0), 0);
  return { prog, packets };
}

function frame(seq: number): Buffer {
  const f = Buffer.alloc(60);
  Buffer.from([0x02, 0, 0, 0, 0, 0x0a]).copy(f, 0); // dst: va
  Buffer.from([0x02, 0, 0, 0, 0, 0x0b]).copy(f, 6); // src: vb
  f.writeUInt16BE(0x88b5, 12);
  f.writeUInt32BE(seq, 14);
  return f;
}

describe.skipIf(skip)('XDP links', () => {
  it('attaches in native mode, shows in xdpQuery and ip, updates atomically, detaches', async () => {
    const { a, b, va, vb } = lab('xl');
    const one = counting(XdpAction.DROP);
    const two = counting(XdpAction.DROP);
    const link = track(BpfLink.attachXdp(one.prog, va, { mode: 'native', netns: a }));
    expect(xdpQuery(va, { netns: a })).toEqual({
      attachMode: 'native',
      progId: one.prog.id,
      nativeProgId: one.prog.id,
      genericProgId: 0,
      offloadProgId: 0,
    });
    expect(ipXdp(a, 'va')).toMatchObject({ mode: 1, prog: { id: one.prog.id } });
    expect(link.info()).toMatchObject({
      id: link.id,
      progId: one.prog.id,
      typeName: 'xdp',
      ifindex: va,
    });
    expect(xdpLinksOn(va, { netns: a }).map((l) => l.id)).toEqual([link.id]);
    expect(xdpLinks().some((l) => l.id === link.id)).toBe(true);
    // only one attachment per hook
    expect(() => BpfLink.attachXdp(two.prog, va, { mode: 'native', netns: a })).toThrow(
      expect.objectContaining({ code: 'EBUSY' }),
    );
    expect(() => xdpAttachLegacy(va, two.prog, { mode: 'native', netns: a })).toThrow(
      expect.objectContaining({ code: 'EBUSY' }),
    );

    // Another process floods va from vb (on another CPU) while this one swaps the programs,
    // both of which drop. No frame may reach the stack (a packet socket on va sees none):
    // there is no moment without a program. (Swapping by close + re-attach instead leaks
    // hundreds of frames in this setup.)
    const seen: number[] = [];
    const tap = track(PacketSocket.open({ ifindex: va, netns: a, protocol: 0x88b5 }));
    tap.receive({ onFrame: (f) => seen.push(f.readUInt32BE(14)), onError: () => undefined });
    const done = join(tmpdir(), `fkt-flood-${process.pid}-${Date.now()}`);
    const child = spawn(process.execPath, [FLOOD, ADDON, b, String(vb), '300000', done], {
      stdio: 'inherit',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    let swaps = 0;
    try {
      const deadline = Date.now() + 30_000;
      while (!existsSync(done) && Date.now() < deadline) {
        const [next, prev] = swaps % 2 === 0 ? [two, one] : [one, two];
        link.update(next.prog, { oldProg: prev.prog });
        swaps++;
      }
      await exited;
      expect(readFileSync(done, 'utf8')).toBe('300000');
    } finally {
      child.kill();
      rmSync(done, { force: true });
    }
    await waitFor(() => one.packets() + two.packets() > 0);
    await new Promise((r) => setTimeout(r, 100)); // let the tap catch up
    expect(swaps).toBeGreaterThanOrEqual(4);
    expect(one.packets()).toBeGreaterThan(0);
    expect(two.packets()).toBeGreaterThan(0);
    expect(seen).toEqual([]);
    const current = swaps % 2 === 0 ? one : two;
    const other = swaps % 2 === 0 ? two : one;
    expect(link.info().progId).toBe(current.prog.id);
    expect(xdpQuery(va, { netns: a }).progId).toBe(current.prog.id);
    // a stale oldProg is refused and changes nothing
    expect(() => link.update(current.prog, { oldProg: other.prog })).toThrow(
      expect.objectContaining({ code: 'EPERM' }),
    );
    expect(link.info().id).toBe(link.id);

    link.detach();
    expect(xdpQuery(va, { netns: a }).attachMode).toBe('none');
    expect(ipXdp(a, 'va')).toBeUndefined();
    expect(link.info().ifindex).toBe(0);
    // after detach the stack sees the frames again
    const tx = track(PacketSocket.open({ ifindex: vb, netns: b, protocol: 0x88b5 }));
    tx.send(frame(99999));
    await waitFor(() => seen.includes(99999), { what: 'frame after detach' });
  });

  it('generic mode; closing an unpinned link detaches, a pinned one stays', () => {
    const bpffs = privateBpffs();
    const { a, va } = lab('xg');
    const prog = track(BpfProgram.loadXdpPass());
    const link = BpfLink.attachXdp(prog, va, { mode: 'generic', netns: a });
    expect(xdpQuery(va, { netns: a })).toMatchObject({
      attachMode: 'generic',
      genericProgId: prog.id,
      nativeProgId: 0,
    });
    expect(ipXdp(a, 'va')).toMatchObject({ mode: 2, prog: { id: prog.id } });
    link.close();
    link.close();
    expect(xdpQuery(va, { netns: a }).attachMode).toBe('none');

    const pinned = BpfLink.attachXdp(prog, va, { mode: 'generic', netns: a });
    const path = join(bpffs, 'link');
    pinned.pin(path);
    const id = pinned.id;
    pinned.close();
    expect(xdpQuery(va, { netns: a }).genericProgId).toBe(prog.id);
    const again = track(BpfLink.fromPinned(path));
    expect(again.id).toBe(id);
    const byId = track(BpfLink.fromId(id));
    expect(byId.info().progId).toBe(prog.id);
    unlinkSync(path);
    again.close();
    byId.close();
    expect(xdpQuery(va, { netns: a }).attachMode).toBe('none');
  });

  it('resolves the ifindex in the given namespace only', () => {
    const { a, va } = lab('xn');
    const prog = track(BpfProgram.loadXdpPass());
    // Without netns the ifindex is looked up in this namespace, where it names another
    // device or none: never the namespaced veth.
    try {
      track(BpfLink.attachXdp(prog, va, { mode: 'generic' })).close();
    } catch {
      /* ENODEV or EBUSY: either way not attached to va */
    }
    expect(xdpQuery(va, { netns: a }).attachMode).toBe('none');
  });
});

describe.skipIf(skip)('legacy XDP attach', () => {
  it('attach, replace with the expected old program, detach with the expected program', () => {
    const { a, va } = lab('xy');
    const p1 = track(BpfProgram.loadXdpPass());
    const p2 = track(BpfProgram.loadXdpAction(XdpAction.PASS, 'fk_pass_two'));
    xdpAttachLegacy(va, p1, { mode: 'generic', netns: a });
    expect(xdpQuery(va, { netns: a })).toMatchObject({ attachMode: 'generic', progId: p1.id });
    expect(xdpLinksOn(va, { netns: a })).toEqual([]); // no link: attached the legacy way
    expect(() => xdpAttachLegacy(va, p2, { mode: 'generic', onlyIfNone: true, netns: a })).toThrow(
      expect.objectContaining({ code: 'EBUSY' }),
    );
    expect(() => xdpAttachLegacy(va, p2, { mode: 'generic', replaceOld: p2, netns: a })).toThrow(
      expect.objectContaining({ code: 'EEXIST' }),
    );
    xdpAttachLegacy(va, p2, { mode: 'generic', replaceOld: p1, netns: a });
    expect(xdpQuery(va, { netns: a }).progId).toBe(p2.id);
    expect(() => xdpDetachLegacy(va, 'generic', { expectedProg: p1, netns: a })).toThrow(
      expect.objectContaining({ code: 'EEXIST' }),
    );
    xdpDetachLegacy(va, 'generic', { expectedProg: p2, netns: a });
    expect(xdpQuery(va, { netns: a }).attachMode).toBe('none');

    xdpAttachLegacy(va, p1, { mode: 'native', netns: a });
    expect(xdpQuery(va, { netns: a })).toMatchObject({ attachMode: 'native', nativeProgId: p1.id });
    expect(ipXdp(a, 'va')).toMatchObject({ mode: 1, prog: { id: p1.id } });
    xdpDetachLegacy(va, 'native', { netns: a });
    expect(xdpQuery(va, { netns: a }).attachMode).toBe('none');
  });
});
