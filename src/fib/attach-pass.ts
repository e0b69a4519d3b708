// One reconciliation pass: the namespace's links against the pinned records. Selected
// devices get their record (slot, current program) and a link; records of devices that
// are no longer selected go; links of vanished devices are dropped (their records and
// slots stay for the device's return); the devmap follows the selection. Idempotent and
// level-triggered: running it twice in a row changes nothing the second time.
import { ConflictError, describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { Link } from '../netlink/index.js';
import type { XdpMode } from '../native/index.js';
import { FK_SLOT_OTHER, defaultConfig, type FkConfig } from './layout.js';
import type { DatapathOps, RecordInfo } from './ops.js';
import type { ForeignProgram } from './owner.js';
import {
  decideAttach,
  lowerOf,
  pickSlot,
  selectDevice,
  skipStackedUppers,
  type DeviceVerdict,
} from './select.js';
import type { XdpDeviceStatus, XdpForwarderConfig } from './types.js';
import { NETDEV_XDP_ACT_NDO_XMIT } from './xdp-features.js';

export class AttachPass {
  readonly #ops: DatapathOps;
  readonly #cfg: XdpForwarderConfig;
  readonly #log: Logger;
  readonly #logged = new Map<string, string>();
  /** Foreign programs described before ("ifindex:progId"): /proc is scanned once per program. */
  #foreign = new Map<string, ForeignProgram>();
  #foreignSeen = new Map<string, ForeignProgram>();
  /** Devices whose generic-mode attachment this pass object (this start) tried to make native. */
  readonly #nativeRetried = new Set<string>();
  /** The links of the pass under way. */
  #links: readonly Link[] = [];

  constructor(ops: DatapathOps, cfg: XdpForwarderConfig, log: Logger) {
    this.#ops = ops;
    this.#cfg = cfg;
    this.#log = log;
  }

  /**
   * One pass over the links; returns the status of every device it knows. `xdpFeatures`
   * (ifindex -> the kernel's xdp_features), when known, keeps devices that cannot take
   * redirected frames out of the devmap: the kernel forwards what is routed through them.
   * So does `egressPolicy` (the devices whose egress has a policy of the node's own).
   */
  run(
    links: readonly Link[],
    xdpFeatures?: ReadonlyMap<number, bigint>,
    egressPolicy: ReadonlySet<number> = new Set(),
  ): Map<string, XdpDeviceStatus> {
    const sel = { devices: this.#cfg.devices, holderName: this.#cfg.holderName };
    const verdicts = skipStackedUppers(
      links.map((l) => selectDevice(l, sel)),
      links,
    );
    this.#links = links;
    const byIfindex = new Map(verdicts.map((v) => [v.ifindex, v]));
    const byName = new Map(verdicts.map((v) => [v.name, v]));
    // Links that no longer hold a selected device: defunct (device gone) or deselected.
    for (const r of this.#ops.records()) {
      if (r.linkId === undefined) continue;
      const v = byIfindex.get(r.linkIfindex);
      if (r.linkIfindex === 0 || v === undefined || !v.selected) this.#ops.unlink(r.name);
    }
    // Records of devices that exist but are no longer selected (a device that is only down
    // keeps its record, slot and counters).
    for (const r of this.#ops.records()) {
      const v = byName.get(r.name);
      if (v !== undefined && !v.selected && !v.keepRecord) {
        this.#ops.remove(r.name);
        this.#log.info({ device: r.name, reason: v.reason }, 'xdp: device no longer selected');
      }
    }
    const next = new Map<string, XdpDeviceStatus>();
    this.#foreignSeen = new Map();
    const selected = verdicts.filter((v) => v.selected).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const v of selected) next.set(v.name, this.#ensureDevice(v, byName));
    for (const r of this.#ops.records()) {
      if (!next.has(r.name)) next.set(r.name, this.#goneStatus(r));
    }
    // upper devices left out on purpose are reported, with why
    for (const v of verdicts) {
      if (v.skipped !== undefined && !next.has(v.name)) {
        next.set(v.name, { ...this.#emptyStatus(v.name, v.ifindex), skipped: v.skipped });
      }
    }
    const target = (ifindex: number) => {
      const f = xdpFeatures?.get(ifindex);
      return xdpFeatures === undefined || (f !== undefined && (f & NETDEV_XDP_ACT_NDO_XMIT) !== 0n);
    };
    const ports = selected.filter((v) => target(v.ifindex) && !egressPolicy.has(v.ifindex));
    for (const v of selected) {
      const st = next.get(v.name);
      if (st !== undefined) st.redirectTarget = target(v.ifindex) && !egressPolicy.has(v.ifindex);
      if (!target(v.ifindex) && this.#logOnce(`${v.name}:target`, 'no ndo_xdp_xmit')) {
        this.#log.warn(
          { device: v.name },
          'xdp: the device takes no redirected frames now (for a veth: its peer runs no XDP program and has GRO off); what is routed through it goes to the kernel',
        );
      } else if (target(v.ifindex)) {
        this.#logOnce(`${v.name}:target`, '');
      }
    }
    for (const f of this.#ops.setTxPorts(ports.map((v) => v.ifindex))) {
      this.#log.warn(f, 'xdp: devmap update failed');
    }
    this.#foreign = this.#foreignSeen;
    return next;
  }

  #emptyStatus(name: string, ifindex: number): XdpDeviceStatus {
    return {
      name,
      ifindex,
      attached: 'none',
      mode: undefined,
      progId: undefined,
      linkId: undefined,
      slot: undefined,
      foreign: undefined,
      error: undefined,
      redirectTarget: false,
    };
  }

  #goneStatus(r: RecordInfo): XdpDeviceStatus {
    return { ...this.#emptyStatus(r.name, 0), progId: r.progId, slot: r.slot };
  }

  /** The rodata of `v`'s instance: its slot, its MAC (frames for another host are passed). */
  #configFor(slot: number, v: DeviceVerdict): FkConfig {
    return {
      ...defaultConfig(),
      slot,
      ipv6: this.#cfg.ipv6,
      missTrack: this.#cfg.missTrack ?? true,
      ip4Options: this.#cfg.ipv4Options ?? false,
      dmacCheck: true,
      devMac: v.mac,
    };
  }

  /** The record of `v`, created (with a slot) or upgraded so that it is current. */
  #ensureRecord(v: DeviceVerdict, byName: ReadonlyMap<string, DeviceVerdict>): RecordInfo {
    const recs = this.#ops.records();
    const have = recs.find((r) => r.name === v.name);
    if (have !== undefined) {
      const cfg = this.#configFor(have.slot, v);
      if (this.#ops.isCurrent(v.name, cfg)) return have;
      const r = this.#ops.upgrade(v.name, cfg);
      this.#log.info(
        { device: v.name, progId: r.progId, linkId: r.linkId },
        r.linkId === undefined ? 'xdp: program reloaded' : 'xdp: program replaced atomically',
      );
      return r;
    }
    const used = recs.map((r) => ({
      name: r.name,
      slot: r.slot,
      present: byName.get(r.name)?.selected === true,
    }));
    const { slot, evict } = pickSlot(used);
    if (evict !== undefined) {
      this.#ops.remove(evict);
      this.#log.info({ device: evict, slot }, 'xdp: slot of a vanished device reused');
    }
    if (slot !== FK_SLOT_OTHER) this.#ops.zeroSlot(slot);
    else this.#log.warn({ device: v.name }, 'xdp: no counter slot left; counting under :other');
    return this.#ops.create(v.name, this.#configFor(slot, v));
  }

  #ensureDevice(v: DeviceVerdict, byName: ReadonlyMap<string, DeviceVerdict>): XdpDeviceStatus {
    const st = this.#emptyStatus(v.name, v.ifindex);
    try {
      this.#attachDevice(v, byName, st);
      this.#logOnce(v.name, '');
    } catch (err) {
      st.error = describeError(err);
      if (this.#logOnce(v.name, st.error)) {
        this.#log.error({ device: v.name, err: st.error }, 'xdp: device not attached');
      }
    }
    return st;
  }

  /** Remembers the last message per device; true when it changed (log it). */
  #logOnce(name: string, msg: string): boolean {
    if (this.#logged.get(name) === msg) return false;
    this.#logged.set(name, msg);
    return msg !== '';
  }

  #attachDevice(
    v: DeviceVerdict,
    byName: ReadonlyMap<string, DeviceVerdict>,
    st: XdpDeviceStatus,
  ): void {
    const hook = this.#ops.query(v.ifindex);
    const owner = this.#ops
      .records()
      .find(
        (r) =>
          r.linkId !== undefined && r.linkIfindex === v.ifindex && hook.progIds.includes(r.progId),
      );
    const d = decideAttach(
      v.name,
      { progIds: hook.progIds, ownerRecord: owner?.name },
      this.#cfg.force,
    );
    const mode: XdpMode = this.#cfg.mode;
    if (d.kind === 'foreign') {
      const foreign = this.#describeForeign(d.progIds[0] ?? 0, v.ifindex);
      if (!d.force) {
        st.attached = 'foreign';
        st.mode = hook.mode;
        st.progId = foreign.progId;
        st.linkId = foreign.linkId;
        st.foreign = foreign;
        throw new ConflictError(
          `${v.name} has an XDP program fibkeeper did not attach: ${foreign.owner}; left alone (xdp.force replaces it)`,
        );
      }
      this.#log.warn(
        { device: v.name, foreign: foreign.owner },
        'xdp: force: removing a foreign XDP program',
      );
      this.#ops.removeForeign(v.ifindex);
    }
    let rec = this.#ensureRecord(v, byName);
    if (d.kind === 'move') {
      this.#ops.moveLink(d.from, v.name);
      this.#log.info({ device: v.name, from: d.from }, 'xdp: renamed device keeps its attachment');
    } else if (d.kind === 'keep' && mode !== 'auto' && hook.mode !== mode) {
      this.#log.warn(
        { device: v.name, was: hook.mode, mode },
        'xdp: re-attaching in the configured mode',
      );
      this.#ops.unlink(v.name);
      this.#attachLogged(v, mode);
    } else if (d.kind === 'keep' && mode === 'auto' && hook.mode === 'generic') {
      // auto prefers native: a start that finds generic (a run in generic mode, a driver
      // that had no XDP then) tries again, once; the stack forwards in the gap
      if (!this.#nativeRetried.has(v.name)) {
        this.#nativeRetried.add(v.name);
        this.#log.info({ device: v.name }, 'xdp: auto mode: trying native instead of generic');
        this.#ops.unlink(v.name);
        this.#attachLogged(v, mode);
      }
    } else if (d.kind !== 'keep') {
      this.#attachLogged(v, mode);
    }
    rec = this.#ops.records().find((r) => r.name === v.name) ?? rec;
    st.attached = 'ours';
    st.mode = this.#ops.query(v.ifindex).mode;
    st.progId = rec.progId;
    st.linkId = rec.linkId;
    st.slot = rec.slot;
  }

  /**
   * The kernel refused a program on a device that has none (EEXIST): an upper device of it
   * (a macvlan, ipvlan, vlan...) has one. Names it when it is in this namespace.
   */
  #explainRefusal(v: DeviceVerdict, err: unknown): unknown {
    if (!(err instanceof ConflictError) || this.#ops.query(v.ifindex).progIds.length > 0) {
      return err;
    }
    for (const l of this.#links) {
      if (lowerOf(l) !== v.ifindex) continue;
      const ids = this.#ops.query(l.index).progIds;
      if (ids.length === 0) continue;
      const upper = l.name ?? `if${l.index}`;
      const owner = this.#describeForeign(ids[0] ?? 0, l.index).owner;
      return new ConflictError(
        `${v.name}: upper device ${upper} (${l.info?.kind}) has XDP program ${ids[0]} (${owner}); the kernel refuses a program on ${v.name} while it does (remove it, or select ${upper} instead of ${v.name})`,
        { cause: err },
      );
    }
    return new ConflictError(
      `${v.name}: the kernel refuses an XDP program here while an upper device of it (a macvlan, ipvlan or vlan on it, perhaps in another namespace) has one`,
      { cause: err },
    );
  }

  #describeForeign(progId: number, ifindex: number): ForeignProgram {
    const key = `${ifindex}:${progId}`;
    const f = this.#foreign.get(key) ?? this.#ops.describeForeign(progId, ifindex);
    this.#foreignSeen.set(key, f);
    return f;
  }

  #attachLogged(v: DeviceVerdict, mode: XdpMode): void {
    let r: { linkId: number; mode: string };
    try {
      r = this.#ops.attach(v.name, v.ifindex, mode);
    } catch (err) {
      throw this.#explainRefusal(v, err);
    }
    this.#log.info(
      { device: v.name, ifindex: v.ifindex, mode: r.mode, requested: mode, linkId: r.linkId },
      `xdp: attached to ${v.name} in ${r.mode} mode`,
    );
  }
}
