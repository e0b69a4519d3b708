// XdpForwarder in a router namespace: attach, pins, adoption, upgrade, foreign programs,
// devices that come and go, detach — checked against what the kernel reports (ip -d link,
// bpf_xdp_query, the pinned maps).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  XdpForwarder,
  decodeConfig,
  defaultConfig,
  defaultObjectPath,
  detachPinned,
  loadInstance,
  pinPaths,
  type XdpDeviceStatus,
  type XdpForwarderConfig,
  SHARED_MAP_NAMES,
  type SharedMaps,
} from '../../src/fib/index.js';
import { silentLogger } from '../../src/log/index.js';
import {
  BpfLink,
  BpfMap,
  BpfProgram,
  isBpffs,
  unmount,
  xdpAttachLegacy,
  xdpQuery,
} from '../../src/native/index.js';
import { ifindexOf, ip, ipJson, privileged, vethPair, waitFor } from '../helpers/netns.js';
import { MAC, V4, cleanupLater, makeLab, peerPass, ping, privateBpffs, type Lab } from './lab.js';

const { skip } = privileged();

function config(pinDir: string, over: Partial<XdpForwarderConfig> = {}): XdpForwarderConfig {
  return {
    devices: ['r*'],
    holderName: 'fk-holder',
    mode: 'auto',
    pinDir,
    keepOnStop: true,
    force: false,
    ipv6: true,
    ...over,
  };
}

function forwarder(
  lab: Lab,
  pinDir: string,
  over: Partial<XdpForwarderConfig> = {},
  registry?: Registry,
): XdpForwarder {
  const x = new XdpForwarder({
    netns: lab.router,
    config: config(pinDir, over),
    log: silentLogger(),
    resyncIntervalMs: 0,
    ...(registry ? { registry } : {}),
  });
  cleanupLater(() => void x.stop());
  return x;
}

function dev(x: XdpForwarder, name: string): XdpDeviceStatus {
  const d = x.status().find((s) => s.name === name);
  if (d === undefined) throw new Error(`no status for ${name}: ${JSON.stringify(x.status())}`);
  return d;
}

/** The XDP part of `ip -d -j link show dev`. */
function ipXdp(ns: string, name: string): { mode?: number; prog?: { id: number } } | undefined {
  const [l] = ipJson<{ xdp?: { mode?: number; prog?: { id: number } } }[]>(
    ns,
    '-d',
    'link',
    'show',
    'dev',
    name,
  );
  return l?.xdp;
}

/** The ifindexes in the pinned devmap. */
function devmap(pinDir: string, ns: string): number[] {
  const m = BpfMap.fromPinned(join(pinPaths(pinDir, ns).maps, 'fk_tx_ports'));
  try {
    return m
      .keys()
      .map((k) => k.readUInt32LE(0))
      .sort((a, b) => a - b);
  } finally {
    m.close();
  }
}

// the shared maps, the tracer's and the watch's (its timer and the agent's deadline)
const MAP_PINS = [
  ...Object.values(SHARED_MAP_NAMES),
  'fk_rerr',
  'fk_watch',
  'fk_watch_until',
].sort();

describe.skipIf(skip)('XdpForwarder: attach and pins', () => {
  it('attaches to every selected device (auto: native on veth), pins links/programs/maps, fills the devmap', async () => {
    const lab = makeLab('fa', { peerXdp: false });
    const pinDir = privateBpffs();
    // a device that matches but is the holder, and one that does not match
    vethPair(lab.router, 'fk-holder', lab.router, 'x0');
    const x = forwarder(lab, pinDir, { devices: ['r*', 'fk-*', 'lo'] });
    await x.start();
    expect(x.ready()).toEqual({ ok: true, reasons: [] });
    expect(x.health()).toEqual({ ok: true, reasons: [] });
    const r1 = dev(x, 'r1');
    const r2 = dev(x, 'r2');
    for (const [d, ifindex] of [
      [r1, lab.r1],
      [r2, lab.r2],
    ] as const) {
      expect(d).toMatchObject({ ifindex, attached: 'ours', mode: 'native', error: undefined });
      expect(ipXdp(lab.router, d.name)).toMatchObject({ mode: 1, prog: { id: d.progId } });
      expect(xdpQuery(ifindex, { netns: lab.router }).nativeProgId).toBe(d.progId);
    }
    expect(new Set([r1.slot, r2.slot]).size).toBe(2);
    expect(r1.slot).toBeGreaterThan(0);
    expect(
      x
        .status()
        .map((s) => s.name)
        .sort(),
    ).toEqual(['r1', 'r2']);
    expect(ipXdp(lab.router, 'fk-holder')).toBeUndefined();
    expect(ipXdp(lab.router, 'lo')).toBeUndefined();
    const p = pinPaths(pinDir, lab.router);
    expect(readdirSync(p.maps).sort()).toEqual(MAP_PINS);
    expect(readdirSync(join(p.dev, 'r1')).sort()).toEqual(['cfg', 'link', 'prog']);
    const link = BpfLink.fromPinned(join(p.dev, 'r1', 'link'));
    expect(link.info()).toMatchObject({ id: r1.linkId, progId: r1.progId, ifindex: lab.r1 });
    link.close();
    const cfg = BpfMap.fromPinned(join(p.dev, 'r2', 'cfg'));
    expect(decodeConfig(cfg.lookup(Buffer.alloc(4))!)).toMatchObject({ slot: r2.slot, ipv6: true });
    cfg.close();
    // neither peer runs XDP: no device can take redirected frames yet (the kernel forwards)
    expect(devmap(pinDir, lab.router)).toEqual([]);
    expect(x.status().map((d) => d.redirectTarget)).toEqual([false, false]);
    peerPass(lab.client, 'c0');
    peerPass(lab.server, 's0');
    await x.resync();
    expect(devmap(pinDir, lab.router)).toEqual([lab.r1, lab.r2].sort((a, b) => a - b));
  });

  it('mode generic attaches in generic mode', async () => {
    const lab = makeLab('fg', { peerXdp: false });
    const x = forwarder(lab, privateBpffs(), { mode: 'generic' });
    await x.start();
    expect(dev(x, 'r1')).toMatchObject({ attached: 'ours', mode: 'generic' });
    expect(ipXdp(lab.router, 'r1')).toMatchObject({ mode: 2 });
  });

  it('mounts a bpffs when pinDir is not on one', async () => {
    const lab = makeLab('fm', { peerXdp: false });
    const pinDir = mkdtempSync(join(tmpdir(), 'fkt-xdpmnt-'));
    cleanupLater(() => {
      try {
        unmount(join(pinDir, 'fibkeeper'), { lazy: true });
      } finally {
        rmSync(pinDir, { recursive: true, force: true });
      }
    });
    expect(isBpffs(pinDir)).toBe(false);
    const x = forwarder(lab, join(pinDir, 'fibkeeper'), { keepOnStop: false });
    await x.start();
    expect(isBpffs(join(pinDir, 'fibkeeper'))).toBe(true);
    expect(dev(x, 'r1').attached).toBe('ours');
    await x.stop();
  });
});

describe.skipIf(skip)('XdpForwarder: restart, upgrade, stop, detach', () => {
  it('a restart adopts the pinned programs: same program and link ids, same slots', async () => {
    const lab = makeLab('fr', { peerXdp: false });
    const pinDir = privateBpffs();
    const a = forwarder(lab, pinDir);
    await a.start();
    const before = a.status();
    await a.stop();
    // still attached while no agent runs
    const r1 = before.find((d) => d.name === 'r1');
    expect(xdpQuery(lab.r1, { netns: lab.router }).progId).toBe(r1?.progId);
    const b = forwarder(lab, pinDir);
    await b.start();
    expect(b.status()).toEqual(before);
  });

  it('a changed configuration replaces the program atomically on the same link', async () => {
    const lab = makeLab('fu', { peerXdp: false });
    const pinDir = privateBpffs();
    const a = forwarder(lab, pinDir);
    await a.start();
    const old = dev(a, 'r1');
    await a.stop();
    const b = forwarder(lab, pinDir, { ipv6: false });
    await b.start();
    const now = dev(b, 'r1');
    expect(now.linkId).toBe(old.linkId);
    expect(now.slot).toBe(old.slot);
    expect(now.progId).not.toBe(old.progId);
    expect(xdpQuery(lab.r1, { netns: lab.router }).progId).toBe(now.progId);
    const cfg = BpfMap.fromPinned(join(pinPaths(pinDir, lab.router).dev, 'r1', 'cfg'));
    expect(decodeConfig(cfg.lookup(Buffer.alloc(4))!)).toMatchObject({
      ipv6: false,
      slot: old.slot,
    });
    cfg.close();
  });

  it('stop without keepOnStop detaches and unpins', async () => {
    const lab = makeLab('fs', { peerXdp: false });
    const pinDir = privateBpffs();
    const x = forwarder(lab, pinDir, { keepOnStop: false });
    await x.start();
    await x.stop();
    await x.stop(); // idempotent
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('none');
    expect(xdpQuery(lab.r2, { netns: lab.router }).attachMode).toBe('none');
    expect(existsSync(pinPaths(pinDir, lab.router).root)).toBe(false);
  });

  it('detach() on a running forwarder, and detachPinned() without one', async () => {
    const lab = makeLab('fd', { peerXdp: false });
    const pinDir = privateBpffs();
    const a = forwarder(lab, pinDir);
    await a.start();
    expect((await a.detach()).sort()).toEqual(['r1', 'r2']);
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('none');
    const b = forwarder(lab, pinDir);
    await b.start();
    await b.stop(); // keepOnStop: still attached
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('native');
    const log = silentLogger();
    expect(detachPinned({ netns: lab.router, pinDir, log }).sort()).toEqual(['r1', 'r2']);
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('none');
    expect(xdpQuery(lab.r2, { netns: lab.router }).attachMode).toBe('none');
    expect(existsSync(pinPaths(pinDir, lab.router).root)).toBe(false);
    expect(detachPinned({ netns: lab.router, pinDir, log })).toEqual([]);
    // detach() on a forwarder that was stopped (programs kept): from the pins
    const c = forwarder(lab, pinDir);
    await c.start();
    await c.stop();
    expect((await c.detach()).sort()).toEqual(['r1', 'r2']);
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('none');
  });
});

describe.skipIf(skip)('XdpForwarder: programs it did not attach', () => {
  it('leaves a foreign program alone, names it in status and health; force replaces it', async () => {
    const lab = makeLab('ff', { peerXdp: false });
    const pinDir = privateBpffs();
    const viaLink = BpfProgram.loadXdpPass();
    const link = BpfLink.attachXdp(viaLink, lab.r1, { netns: lab.router });
    const legacy = BpfProgram.loadXdpPass();
    xdpAttachLegacy(lab.r2, legacy, { netns: lab.router, mode: 'generic' });
    cleanupLater(() => {
      link.close();
      viaLink.close();
      legacy.close();
    });
    const registry = new Registry();
    const x = forwarder(lab, pinDir, {}, registry);
    await x.start();
    const r1 = dev(x, 'r1');
    expect(r1).toMatchObject({ attached: 'foreign', progId: viaLink.id, linkId: link.id });
    expect(r1.foreign?.owner).toContain(`program ${viaLink.id} (fk_xdp_pass)`);
    expect(r1.foreign?.owner).toContain(`link ${link.id}`);
    expect(r1.foreign?.holders).toContain(`node[${process.pid}]`);
    expect(r1.error).toMatch(new RegExp(`program ${viaLink.id}.*left alone`));
    const r2 = dev(x, 'r2');
    expect(r2).toMatchObject({ attached: 'foreign', progId: legacy.id, mode: 'generic' });
    expect(r2.foreign?.owner).toContain('attached without a link');
    // untouched
    expect(xdpQuery(lab.r1, { netns: lab.router }).progId).toBe(viaLink.id);
    expect(xdpQuery(lab.r2, { netns: lab.router }).progId).toBe(legacy.id);
    const h = x.health();
    expect(h.ok).toBe(false);
    expect(h.reasons.join('\n')).toContain(`program ${viaLink.id}`);
    expect(x.ready().ok).toBe(true);
    const text = await registry.metrics();
    expect(text).toContain('fibkeeper_xdp_foreign_program{device="r1"} 1');
    expect(text).not.toContain('fibkeeper_xdp_attached{');
    // stopping without keepOnStop must not detach them either
    await x.detach();
    expect(xdpQuery(lab.r1, { netns: lab.router }).progId).toBe(viaLink.id);
    expect(xdpQuery(lab.r2, { netns: lab.router }).progId).toBe(legacy.id);

    const f = forwarder(lab, pinDir, { force: true });
    await f.start();
    expect(dev(f, 'r1')).toMatchObject({ attached: 'ours', mode: 'native' });
    expect(dev(f, 'r2')).toMatchObject({ attached: 'ours', mode: 'native' });
    expect(xdpQuery(lab.r1, { netns: lab.router }).progId).toBe(dev(f, 'r1').progId);
    expect(f.health()).toEqual({ ok: true, reasons: [] });
  });
});

describe.skipIf(skip)('XdpForwarder: devices that come and go', () => {
  it('a recreated device (new ifindex) gets the program again, its slot back, and the devmap follows', async () => {
    const lab = makeLab('fc');
    const pinDir = privateBpffs();
    const x = forwarder(lab, pinDir);
    await x.start();
    const old = dev(x, 'r2');
    ip(lab.router, 'link', 'del', 'r2');
    await waitFor(() => dev(x, 'r2').ifindex === 0, { what: 'r2 gone' });
    expect(dev(x, 'r2')).toMatchObject({ attached: 'none', slot: old.slot });
    expect(devmap(pinDir, lab.router)).toEqual([lab.r1]);
    // the same MAC (as a NIC that comes back): the same program; a new MAC would swap it
    vethPair(lab.server, 's0', lab.router, 'r2', { macA: MAC.server, macB: MAC.r2 });
    ip(lab.server, 'addr', 'add', `${V4.server}/24`, 'dev', 's0');
    ip(lab.server, 'route', 'add', 'default', 'via', V4.r2);
    ip(lab.router, 'addr', 'add', `${V4.r2}/24`, 'dev', 'r2');
    peerPass(lab.server, 's0');
    const r2 = ifindexOf(lab.router, 'r2');
    expect(r2).not.toBe(old.ifindex);
    await waitFor(() => dev(x, 'r2').attached === 'ours', { what: 'r2 attached again' });
    expect(dev(x, 'r2')).toMatchObject({ ifindex: r2, slot: old.slot, progId: old.progId });
    expect(dev(x, 'r2').linkId).not.toBe(old.linkId);
    expect(xdpQuery(r2, { netns: lab.router }).progId).toBe(old.progId);
    expect(devmap(pinDir, lab.router)).toEqual([lab.r1, r2].sort((a, b) => a - b));
    expect(ping(lab.client, V4.server, 3)).toBe(3);
  });

  it('a renamed device (down, renamed, up) gets a program with a slot of its own; the old name keeps its slot', async () => {
    const lab = makeLab('fn', { peerXdp: false });
    const pinDir = privateBpffs();
    const x = forwarder(lab, pinDir);
    await x.start();
    const old = dev(x, 'r2');
    ip(lab.router, 'link', 'set', 'r2', 'down');
    ip(lab.router, 'link', 'set', 'r2', 'name', 'r9');
    ip(lab.router, 'link', 'set', 'r9', 'up');
    await waitFor(() => x.status().some((s) => s.name === 'r9' && s.attached === 'ours'), {
      what: 'r9 attached',
    });
    const r9 = dev(x, 'r9');
    // its link moves over, or (when a sync saw it down) it was detached and attached again
    expect(r9).toMatchObject({ ifindex: lab.r2, attached: 'ours' });
    expect(r9.slot).not.toBe(old.slot);
    expect(xdpQuery(lab.r2, { netns: lab.router }).progId).toBe(r9.progId);
    expect(dev(x, 'r2')).toMatchObject({ ifindex: 0, attached: 'none', slot: old.slot });
    // renamed to a name not selected: detached
    ip(lab.router, 'link', 'set', 'r9', 'down');
    ip(lab.router, 'link', 'set', 'r9', 'name', 'x9');
    await waitFor(() => xdpQuery(lab.r2, { netns: lab.router }).attachMode === 'none', {
      what: 'x9 detached',
    });
    expect(x.status().some((s) => s.name === 'x9')).toBe(false);
  });

  it('reconfigure: a new devices list detaches and attaches, a new ipv6 setting swaps programs in place', async () => {
    const lab = makeLab('fy');
    const pinDir = privateBpffs();
    const x = forwarder(lab, pinDir);
    await x.start();
    const r2 = dev(x, 'r2');
    await x.reconfigure(config(pinDir, { devices: ['r2'], ipv6: false }));
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('none');
    expect(x.status().map((s) => s.name)).toEqual(['r2']);
    expect(dev(x, 'r2')).toMatchObject({ attached: 'ours', linkId: r2.linkId, slot: r2.slot });
    expect(dev(x, 'r2').progId).not.toBe(r2.progId);
    expect(devmap(pinDir, lab.router)).toEqual([lab.r2]);
    await expect(x.reconfigure(config('/elsewhere'))).rejects.toThrow(/pinDir/);
  });

  it('a device that stops matching `devices` is detached; one that starts matching is attached', async () => {
    const lab = makeLab('fx', { peerXdp: false });
    const x = forwarder(lab, privateBpffs(), { devices: ['r1', 'n*'] });
    await x.start();
    expect(x.status().map((s) => s.name)).toEqual(['r1']);
    vethPair(lab.router, 'n0', lab.router, 'y0');
    await waitFor(() => x.status().some((s) => s.name === 'n0' && s.attached === 'ours'), {
      what: 'n0 attached',
    });
    ip(lab.router, 'link', 'set', 'r1', 'down');
    ip(lab.router, 'link', 'set', 'r1', 'name', 'z1');
    await waitFor(() => xdpQuery(lab.r1, { netns: lab.router }).attachMode === 'none', {
      what: 'z1 detached',
    });
  });
});

/** bpf/xdp_fwd.c compiled for an older BPF ISA (-mcpu=v2): same program, other code. */
function otherBuild(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-xdpobj-'));
  cleanupLater(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'xdp_fwd.o');
  const arch = execFileSync('uname', ['-m']).toString().trim();
  const src = fileURLToPath(new URL('../../bpf/', import.meta.url));
  execFileSync('clang', [
    ...['-O2', '-g', '-Wall', '-Wextra', '-Werror', '-target', 'bpf', '-mcpu=v2'],
    ...['-D__TARGET_ARCH_x86', `-I/usr/include/${arch}-linux-gnu`, `-I${src}`],
    ...['-c', join(src, 'xdp_fwd.c'), '-o', out],
  ]);
  return out;
}

describe.skipIf(skip)('XdpForwarder: upgrades', () => {
  it('a new build of the object replaces every program atomically; counters carry on', async () => {
    const lab = makeLab('fo');
    const pinDir = privateBpffs();
    const a = forwarder(lab, pinDir);
    await a.start();
    expect(ping(lab.client, V4.server, 2)).toBe(2);
    const old = a.status();
    const before = a.counters().find((c) => c.device === 'r1')!.results.success.packets;
    await a.stop();
    const b = new XdpForwarder({
      netns: lab.router,
      objectPath: otherBuild(),
      config: config(pinDir),
      log: silentLogger(),
      resyncIntervalMs: 0,
    });
    cleanupLater(() => void b.stop());
    await b.start();
    for (const d of b.status()) {
      const o = old.find((x) => x.name === d.name)!;
      expect(d).toMatchObject({ attached: 'ours', linkId: o.linkId, slot: o.slot });
      expect(d.progId).not.toBe(o.progId);
    }
    expect(ping(lab.client, V4.server, 2)).toBe(2);
    const now = b.counters().find((c) => c.device === 'r1')!.results.success.packets;
    expect(before).toBeGreaterThanOrEqual(1);
    expect(now - before).toBe(2); // same maps: the counters went on
  });

  it('pinned maps that are gone: new maps, every program replaced onto them, links kept', async () => {
    const lab = makeLab('fp');
    const pinDir = privateBpffs();
    const a = forwarder(lab, pinDir);
    await a.start();
    const old = a.status();
    await a.stop();
    rmSync(pinPaths(pinDir, lab.router).maps, { recursive: true });
    const b = forwarder(lab, pinDir);
    await b.start();
    for (const d of b.status()) {
      const o = old.find((x) => x.name === d.name)!;
      expect(d).toMatchObject({ attached: 'ours', linkId: o.linkId, slot: o.slot });
      expect(d.progId).not.toBe(o.progId);
    }
    expect(readdirSync(pinPaths(pinDir, lab.router).maps).sort()).toEqual(MAP_PINS);
    expect(ping(lab.client, V4.server, 3)).toBe(3);
    // fresh maps: counting starts again (the first echo request found no neighbor yet)
    const c = b.counters().find((x) => x.device === 'r1')!;
    expect(c.results.success.packets + c.results.no_neigh.packets).toBe(3);
  });
  it('an interrupted upgrade (pinned program not the attached one) is finished on restart, not taken for foreign', async () => {
    const lab = makeLab('fi', { peerXdp: false });
    const pinDir = privateBpffs();
    const a = forwarder(lab, pinDir);
    await a.start();
    const old = dev(a, 'r1');
    await a.stop();
    // what a crash between pinning the new instance and bpf_link_update leaves behind
    const p = pinPaths(pinDir, lab.router);
    const maps = Object.fromEntries(
      Object.entries(SHARED_MAP_NAMES).map(([k, name]) => [
        k,
        BpfMap.fromPinned(join(p.maps, name)),
      ]),
    ) as unknown as SharedMaps;
    const next = loadInstance(defaultObjectPath(), { ...defaultConfig(), slot: old.slot! }, maps);
    rmSync(join(p.dev, 'r1', 'prog'));
    next.prog.pin(join(p.dev, 'r1', 'prog'));
    for (const x of [next.prog, next.cfgMap, ...Object.values(maps)]) x.close();
    expect(xdpQuery(lab.r1, { netns: lab.router }).progId).toBe(old.progId);
    const b = forwarder(lab, pinDir);
    await b.start();
    const now = dev(b, 'r1');
    expect(now).toMatchObject({ attached: 'ours', linkId: old.linkId, slot: old.slot });
    expect(now.progId).not.toBe(old.progId);
    expect(xdpQuery(lab.r1, { netns: lab.router }).progId).toBe(now.progId);
    expect(b.health()).toEqual({ ok: true, reasons: [] });
  });
});
