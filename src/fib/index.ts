// The XDP loader: fk_xdp_fwd (bpf/xdp_fwd.c) loaded once per selected device (each instance
// with its own counter slot, all sharing the maps), attached with pinned bpf_links so that
// forwarding survives an agent restart, adopted on start, replaced atomically on upgrade,
// never put over a program fibkeeper did not attach (unless forced). This file is the
// package's whole public surface.
//
//   const x = new XdpForwarder({ netns, netlink, config, registry, log });
//   await x.start();            // mount bpffs if needed, adopt or load, attach, watch links
//   x.status(); x.counters();   // fibkeeper status
//   x.takeMisses();             // the miss tracker: NO_NEIGH destinations, consumed
//   await x.stop();             // keepOnStop: stays attached; else detached and unpinned
//   detachPinned({ netns, pinDir, log });   // fibkeeper xdp detach, without an agent
export { XdpForwarder, type XdpForwarderParams } from './forwarder.js';
export {
  OTHER_DEVICE,
  type XdpConfigMode,
  type XdpDeviceCounters,
  type XdpDeviceStatus,
  type XdpForwarderConfig,
  type XdpHealth,
} from './types.js';
export { detachPinned, type DetachPinnedParams } from './detach.js';
export { selectDevice, type DeviceVerdict, type SelectionConfig } from './select.js';
export { pinPaths, type PinPaths } from './pins.js';
export type { ForeignProgram } from './owner.js';
export type { DatapathOps, HookMode, HookQuery, RecordInfo } from './ops.js';
export { defaultObjectPath, loadInstance, type Instance, type SharedMaps } from './instance.js';
export {
  ACTION_NAMES,
  REASON_NAMES,
  RESULT_NAMES,
  FK_MAX_SLOTS,
  FK_SLOT_OTHER,
  BPF_FIB_LOOKUP_DIRECT,
  BPF_FIB_LOOKUP_OUTPUT,
  BPF_FIB_LOOKUP_SRC,
  BPF_FIB_LOOKUP_TBID,
  FK_FIB_LOOKUP_MARK,
  decodeConfig,
  decodeStats,
  defaultConfig,
  encodeConfig,
  type ActionName,
  type FkConfig,
  type MissEntry,
  type MissKey,
  type PacketBytes,
  type ReasonName,
  type ResultName,
  type SlotCounters,
} from './layout.js';
