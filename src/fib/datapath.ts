// DatapathOps over libbpf (the native addon) and a bpffs: program instances per device,
// pinned links and maps, the XDP hook, the devmap. Every call that names an ifindex runs in
// the forwarder's namespace.
import { existsSync, mkdirSync } from 'node:fs';
import { ConflictError, FibkeeperError, describeError, errnoCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import {
  BpfLink,
  BpfMap,
  BpfProgram,
  runInNetns,
  xdpDetachLegacy,
  xdpLinksOn,
  xdpQuery,
  type XdpMode,
} from '../native/index.js';
import * as shared from './datapath-maps.js';
import { u32 } from './datapath-maps.js';
import {
  decodeConfig,
  defaultConfig,
  encodeConfig,
  type FkConfig,
  type MissEntry,
  type MissKey,
  type SlotCounters,
} from './layout.js';
import {
  SHARED_MAP_NAMES,
  closeMaps,
  loadInstance,
  mapMismatch,
  type SharedMaps,
} from './instance.js';
import type { KernelMirror } from './kstate.js';
import { FK_MAP_RERR, type KernelState, type RedirectErrorName } from './layout-state.js';
import { Watch, defaultWatchPath } from './watch.js';
import { Tracer, defaultTracerPath } from './tracer.js';
import type { DatapathOps, HookQuery, MirrorSame, RecordInfo } from './ops.js';
import { describeForeign, type ForeignProgram } from './owner.js';
import {
  devPaths,
  ensureBpffs,
  netnsInode,
  pinPaths,
  pinnedDevices,
  unpin,
  type PinPaths,
} from './pins.js';

export interface DatapathParams {
  objectPath: string;
  /** The redirect-error tracer; default build/bpf/xdp_trace.o. */
  tracerPath?: string;
  /** The watch timer; default build/bpf/xdp_watch.o. */
  watchPath?: string;
  netns: string | undefined;
  pinDir: string;
  log: Logger;
}

interface Rec {
  name: string;
  slot: number;
  prog: BpfProgram;
  cfgMap: BpfMap;
  cfg: Buffer;
  link: BpfLink | undefined;
  /** Bound to maps that are no longer the pinned ones. */
  staleMaps: boolean;
}

function keyForAll(netns: string | undefined): { netns?: string } {
  return netns === undefined ? {} : { netns };
}

export class Datapath implements DatapathOps {
  readonly #p: DatapathParams;
  #paths: PinPaths | undefined;
  #maps: SharedMaps | undefined;
  readonly #recs = new Map<string, Rec>();
  #tag: string | undefined;
  #tracer: Tracer | undefined;
  #watch: Watch | undefined;

  constructor(p: DatapathParams) {
    this.#p = p;
  }

  get paths(): PinPaths {
    if (this.#paths === undefined) throw new FibkeeperError('datapath not open');
    return this.#paths;
  }

  #inNs<T>(fn: () => T): T {
    return this.#p.netns === undefined ? fn() : runInNetns(this.#p.netns, fn);
  }

  #sharedMaps(): SharedMaps {
    if (this.#maps === undefined) throw new FibkeeperError('datapath not open');
    return this.#maps;
  }

  open(): { records: RecordInfo[]; mapsReplaced: boolean } {
    ensureBpffs(this.#p.pinDir, this.#p.log);
    const paths = pinPaths(this.#p.pinDir, this.#p.netns);
    this.#paths = paths;
    mkdirSync(paths.dev, { recursive: true, mode: 0o700 });
    mkdirSync(paths.maps, { recursive: true, mode: 0o700 });
    const pinned = this.#openPinnedMaps();
    if (pinned !== undefined) {
      this.#maps = pinned;
    } else {
      const first = loadInstance(this.#p.objectPath, defaultConfig());
      first.prog.close();
      first.cfgMap.close();
      this.#maps = first.maps;
      for (const k of Object.keys(SHARED_MAP_NAMES) as (keyof SharedMaps)[]) {
        const path = `${paths.maps}/${SHARED_MAP_NAMES[k]}`;
        unpin(path);
        first.maps[k].pin(path);
      }
    }
    for (const name of pinnedDevices(paths)) this.#adoptRecord(name, pinned === undefined);
    this.#watch = Watch.start({
      objectPath: this.#p.watchPath ?? defaultWatchPath(),
      state: this.#sharedMaps().state,
      mapsDir: paths.maps,
      log: this.#p.log,
    });
    this.#tracer = Tracer.start({
      objectPath: this.#p.tracerPath ?? defaultTracerPath(),
      netnsIno: netnsInode(this.#p.netns),
      mapPin: `${paths.maps}/${FK_MAP_RERR}`,
      log: this.#p.log,
    });
    return { records: this.records(), mapsReplaced: pinned === undefined };
  }

  #openPinnedMaps(): SharedMaps | undefined {
    const opened: Partial<SharedMaps> = {};
    try {
      for (const k of Object.keys(SHARED_MAP_NAMES) as (keyof SharedMaps)[]) {
        const path = `${this.paths.maps}/${SHARED_MAP_NAMES[k]}`;
        if (!existsSync(path)) throw new Error(`${path} is not pinned`);
        const m = BpfMap.fromPinned(path);
        opened[k] = m;
        const why = mapMismatch(k, m);
        if (why !== undefined) throw new Error(why);
      }
      return opened as SharedMaps;
    } catch (err) {
      for (const m of Object.values(opened)) m.close();
      if (existsSync(`${this.paths.maps}/${SHARED_MAP_NAMES.stats}`)) {
        this.#p.log.warn(
          { err: describeError(err) },
          'xdp: pinned maps unusable, creating new ones',
        );
      }
      return undefined;
    }
  }

  /** Opens a pinned record; an incomplete one is detached and unpinned. */
  #adoptRecord(name: string, staleMaps: boolean): void {
    const d = devPaths(this.paths, name);
    let prog: BpfProgram | undefined;
    let cfgMap: BpfMap | undefined;
    let link: BpfLink | undefined;
    try {
      if (existsSync(d.link)) link = BpfLink.fromPinned(d.link);
      prog = BpfProgram.fromPinned(d.prog);
      cfgMap = BpfMap.fromPinned(d.cfg);
      let cfg = cfgMap.lookup(u32(0));
      if (cfg === undefined) throw new Error('empty rodata');
      const slot = decodeConfig(cfg).slot;
      const running = link?.info().progId ?? prog.id;
      if (running !== prog.id) {
        // interrupted upgrade: the link still runs the previous instance; adopt that one,
        // marked stale (empty config) so that the next sync swaps the right one in
        this.#p.log.warn(
          { device: name, pinned: prog.id, running },
          'xdp: pinned program is not the one attached',
        );
        prog.close();
        prog = BpfProgram.fromId(running);
        cfg = Buffer.alloc(0);
      }
      this.#recs.set(name, { name, slot, prog, cfgMap, cfg, link, staleMaps });
    } catch (err) {
      this.#p.log.warn(
        { device: name, err: describeError(err) },
        'xdp: dropping an incomplete pinned record',
      );
      try {
        link?.detach();
      } catch {
        /* defunct already */
      }
      for (const x of [link, prog, cfgMap]) x?.close();
      unpin(d.dir);
    }
  }

  records(): RecordInfo[] {
    return [...this.#recs.values()].map((r) => this.#info(r));
  }

  #info(r: Rec): RecordInfo {
    let linkIfindex = 0;
    if (r.link !== undefined) {
      try {
        linkIfindex = r.link.info().ifindex ?? 0;
      } catch {
        linkIfindex = 0;
      }
    }
    return { name: r.name, slot: r.slot, progId: r.prog.id, linkId: r.link?.id, linkIfindex };
  }

  #rec(name: string): Rec {
    const r = this.#recs.get(name);
    if (r === undefined) throw new FibkeeperError(`xdp: no record for ${name}`);
    return r;
  }

  query(ifindex: number): HookQuery {
    const q = xdpQuery(ifindex, keyForAll(this.#p.netns));
    const ids = [q.nativeProgId, q.genericProgId, q.offloadProgId].filter((id) => id !== 0);
    return { progIds: [...new Set(ids)], mode: q.attachMode };
  }

  describeForeign(progId: number, ifindex: number): ForeignProgram {
    return describeForeign(progId, ifindex, this.#p.netns);
  }

  #currentTag(): string {
    if (this.#tag === undefined) {
      const probe = loadInstance(this.#p.objectPath, defaultConfig(), this.#sharedMaps());
      this.#tag = probe.prog.tag;
      probe.prog.close();
      probe.cfgMap.close();
    }
    return this.#tag;
  }

  #pinInstance(name: string, cfg: FkConfig): Rec {
    const inst = loadInstance(this.#p.objectPath, cfg, this.#sharedMaps());
    this.#tag ??= inst.prog.tag;
    const d = devPaths(this.paths, name);
    mkdirSync(d.dir, { recursive: true, mode: 0o700 });
    try {
      unpin(d.prog);
      unpin(d.cfg);
      inst.prog.pin(d.prog);
      inst.cfgMap.pin(d.cfg);
    } catch (err) {
      inst.prog.close();
      inst.cfgMap.close();
      throw err;
    }
    const bytes = encodeConfig(cfg);
    return {
      name,
      slot: cfg.slot,
      prog: inst.prog,
      cfgMap: inst.cfgMap,
      cfg: bytes,
      link: undefined,
      staleMaps: false,
    };
  }

  create(name: string, cfg: FkConfig): RecordInfo {
    this.remove(name);
    const r = this.#pinInstance(name, cfg);
    this.#recs.set(name, r);
    return this.#info(r);
  }

  isCurrent(name: string, cfg: FkConfig): boolean {
    const r = this.#rec(name);
    return !r.staleMaps && r.cfg.equals(encodeConfig(cfg)) && r.prog.tag === this.#currentTag();
  }

  upgrade(name: string, cfg: FkConfig): RecordInfo {
    const old = this.#rec(name);
    const next = this.#pinInstance(name, cfg);
    next.link = old.link;
    if (old.link !== undefined) {
      try {
        old.link.update(next.prog, { oldProg: old.prog });
      } catch (err) {
        next.prog.close();
        next.cfgMap.close();
        // put the old instance's pins back: the link still runs it
        unpin(devPaths(this.paths, name).prog);
        unpin(devPaths(this.paths, name).cfg);
        old.prog.pin(devPaths(this.paths, name).prog);
        old.cfgMap.pin(devPaths(this.paths, name).cfg);
        throw new FibkeeperError(`xdp: replace the program on ${name}: ${describeError(err)}`, {
          cause: err,
          code: 'FIBKEEPER_ERR_BPF',
        });
      }
    }
    old.prog.close();
    old.cfgMap.close();
    this.#recs.set(name, next);
    return this.#info(next);
  }

  attach(
    name: string,
    ifindex: number,
    mode: XdpMode,
  ): { linkId: number; mode: HookQuery['mode'] } {
    const r = this.#rec(name);
    if (r.link !== undefined) this.unlink(name);
    let link: BpfLink;
    try {
      link = BpfLink.attachXdp(r.prog, ifindex, { mode, ...keyForAll(this.#p.netns) });
    } catch (err) {
      const code = errnoCode(err);
      const what = `xdp: attach to ${name} (ifindex ${ifindex}) in ${mode} mode`;
      if (code === 'EBUSY' || code === 'EEXIST') {
        throw new ConflictError(`${what}: another XDP program is attached`, { cause: err });
      }
      if (code === 'EOPNOTSUPP' && mode === 'native') {
        throw new FibkeeperError(
          `${what}: the driver has no native XDP (use mode auto or generic)`,
          {
            cause: err,
            code: 'FIBKEEPER_ERR_NOT_SUPPORTED',
          },
        );
      }
      throw new FibkeeperError(`${what}: ${describeError(err)}`, {
        cause: err,
        code: 'FIBKEEPER_ERR_BPF',
      });
    }
    const path = devPaths(this.paths, name).link;
    try {
      unpin(path);
      link.pin(path);
    } catch (err) {
      link.close(); // unpinned: closing detaches it again
      throw err;
    }
    r.link = link;
    return { linkId: link.id, mode: this.query(ifindex).mode };
  }

  moveLink(from: string, to: string): void {
    const src = this.#rec(from);
    const dst = this.#rec(to);
    const link = src.link;
    if (link === undefined) throw new FibkeeperError(`xdp: ${from} has no link to move`);
    if (dst.link !== undefined) this.unlink(to);
    link.update(dst.prog, { oldProg: src.prog });
    const path = devPaths(this.paths, to).link;
    unpin(path);
    link.pin(path);
    unpin(devPaths(this.paths, from).link);
    dst.link = link;
    src.link = undefined;
  }

  unlink(name: string): void {
    const r = this.#recs.get(name);
    if (r?.link === undefined) return;
    try {
      r.link.detach();
    } catch (err) {
      // a defunct link (device gone) cannot be detached again
      if (errnoCode(err) !== 'ENOLINK' && errnoCode(err) !== 'EINVAL') throw err;
    }
    r.link.close();
    r.link = undefined;
    unpin(devPaths(this.paths, name).link);
  }

  remove(name: string): void {
    const r = this.#recs.get(name);
    if (r !== undefined) {
      this.unlink(name);
      r.prog.close();
      r.cfgMap.close();
      this.#recs.delete(name);
    }
    if (this.#paths !== undefined) unpin(devPaths(this.paths, name).dir);
  }

  removeForeign(ifindex: number): void {
    const ns = keyForAll(this.#p.netns);
    for (const l of xdpLinksOn(ifindex, ns)) {
      const link = BpfLink.fromId(l.id);
      try {
        link.detach();
      } finally {
        link.close();
      }
    }
    const q = xdpQuery(ifindex, ns);
    const modes: [number, XdpMode][] = [
      [q.nativeProgId, 'native'],
      [q.genericProgId, 'generic'],
      [q.offloadProgId, 'offload'],
    ];
    for (const [id, mode] of modes) if (id !== 0) xdpDetachLegacy(ifindex, mode, ns);
  }

  setTxPorts(ifindexes: readonly number[]): { ifindex: number; error: string }[] {
    return shared.setTxPorts(this.#sharedMaps().txPorts, ifindexes, (fn) => this.#inNs(fn));
  }

  readSlot(slot: number): SlotCounters {
    return shared.readSlot(this.#sharedMaps(), slot);
  }

  zeroSlot(slot: number): void {
    shared.zeroSlot(this.#sharedMaps(), slot);
  }

  readMisses(): MissEntry[] {
    return shared.readMisses(this.#sharedMaps());
  }

  deleteMiss(key: MissKey): boolean {
    return shared.deleteMiss(this.#sharedMaps(), key);
  }

  writeMirror(m: KernelMirror, same: MirrorSame = {}): void {
    shared.writeMirror(this.#sharedMaps(), m, same);
  }

  writeState(s: KernelState): void {
    shared.writeState(this.#sharedMaps(), s);
  }

  renewWatch(untilNs: bigint): boolean {
    if (this.#watch === undefined) return false;
    this.#watch.renew(untilNs);
    return shared.unwatched(this.#sharedMaps());
  }

  readRedirectErrors(): Map<number, Record<RedirectErrorName, number>> | undefined {
    return this.#tracer?.read();
  }

  close(): void {
    this.#tracer?.close();
    this.#tracer = undefined;
    this.#watch?.close(); // pinned: the timer ticks on (detach unpins it, which ends it)
    this.#watch = undefined;
    for (const r of this.#recs.values()) {
      r.link?.close();
      r.prog.close();
      r.cfgMap.close();
    }
    this.#recs.clear();
    closeMaps(this.#maps);
    this.#maps = undefined;
  }

  destroy(): string[] {
    const names = [...this.#recs.keys()];
    for (const name of names) this.unlink(name);
    this.close();
    if (this.#paths !== undefined) unpin(this.#paths.root);
    return names;
  }
}
