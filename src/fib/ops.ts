// The kernel side of the loader as an interface: everything the forwarder does to BPF
// objects, XDP hooks and pins goes through DatapathOps, so the forwarder's decisions can be
// tested with a fake (forwarder.test.ts) and the real thing (datapath.ts) stays small.
import type { XdpMode } from '../native/index.js';
import type { FkConfig, MissEntry, MissKey, SlotCounters } from './layout.js';
import type { KernelMirror } from './kstate.js';
import type { KernelState, RedirectErrorName } from './layout-state.js';
import type { ForeignProgram } from './owner.js';

/** How programs sit on a device's XDP hook (bpf_xdp_query). */
export type HookMode = 'none' | 'native' | 'generic' | 'offload' | 'multi';

export interface HookQuery {
  /** Every attached program id, empty when none. */
  progIds: number[];
  mode: HookMode;
}

/** One device record: a program instance with its slot, pinned under dev/<name>. */
export interface RecordInfo {
  name: string;
  slot: number;
  progId: number;
  /** The pinned link, if any. */
  linkId: number | undefined;
  /** The device the link is attached to; 0 when there is no link or it is defunct. */
  linkIfindex: number;
}

export interface DatapathOps {
  /**
   * Makes sure the bpffs is there, opens the pinned maps (or creates and pins them) and reads
   * the pinned records. `mapsReplaced`: the pinned maps were missing or incompatible, so every
   * pinned program must be upgraded onto the new ones.
   */
  open(): { records: RecordInfo[]; mapsReplaced: boolean };
  /** The records, with their links' current state. */
  records(): RecordInfo[];
  /** What is attached to `ifindex`. */
  query(ifindex: number): HookQuery;
  /** Name and holders of a program that is not ours. */
  describeForeign(progId: number, ifindex: number): ForeignProgram;
  /** Loads a program instance for `cfg` and pins it as record `name` (replacing any). */
  create(name: string, cfg: FkConfig): RecordInfo;
  /** The record's program is the object's current code, on the current maps, with `cfg`. */
  isCurrent(name: string, cfg: FkConfig): boolean;
  /** Loads a new instance for `cfg`; a linked record swaps it in with bpf_link_update. */
  upgrade(name: string, cfg: FkConfig): RecordInfo;
  /** Attaches record `name` to `ifindex` with a pinned bpf_link; returns the mode used. */
  attach(name: string, ifindex: number, mode: XdpMode): { linkId: number; mode: HookMode };
  /** Moves the link of `from` to `to` (a renamed device), swapping in `to`'s program. */
  moveLink(from: string, to: string): void;
  /** Detaches and unpins the record's link; keeps the record. No link: nothing to do. */
  unlink(name: string): void;
  /** unlink, then unpins the record itself. No such record: nothing to do. */
  remove(name: string): void;
  /** Removes every foreign program from the hook (the force option). */
  removeForeign(ifindex: number): void;
  /** Makes the devmap hold exactly `ifindexes`; returns the ones that failed. */
  setTxPorts(ifindexes: readonly number[]): { ifindex: number; error: string }[];
  readSlot(slot: number): SlotCounters;
  zeroSlot(slot: number): void;
  readMisses(): MissEntry[];
  /** Deletes one miss entry; false when it was not there. */
  deleteMiss(key: MissKey): boolean;
  /**
   * Writes the kernel's state into the shared maps: the LPM tries first (made to hold exactly
   * the mirror's keys), fk_state last. Writing what is already
   * there changes nothing. The maps `same` names hold what the mirror says already (written
   * before): not read again.
   */
  writeMirror(m: KernelMirror, same?: MirrorSame): void;
  /** Writes fk_state alone (the state written last, after the watch tripped). */
  writeState(s: KernelState): void;
  /**
   * Moves the watch's deadline on to `untilNs` (CLOCK_MONOTONIC); returns true when the watch
   * had tripped meanwhile (fk_state.unwatched set: the state must be written again). Without
   * a watch (an old kernel): nothing, false.
   */
  renewWatch(untilNs: bigint): boolean;
  /**
   * Frames lost after a redirect (the tracer's counts), per ingress ifindex and reason;
   * undefined when this kernel cannot count them.
   */
  readRedirectErrors(): Map<number, Record<RedirectErrorName, number>> | undefined;
  /** Closes every descriptor; pinned objects stay (and stay attached). Idempotent. */
  close(): void;
  /** Detaches every link and unpins everything of this namespace; returns the record names. */
  destroy(): string[];
}

/** LPM maps whose keys are those written last (writeMirror leaves them alone). */
export interface MirrorSame {
  local4w?: boolean;
  mpath4?: boolean;
  mpath6?: boolean;
}
