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
//
// Behaviour worth documenting for users:
//  - Selection: a device gets the program when its name matches `devices` (globs with * and
//    ?), it is an Ethernet device with a non-zero MAC, up, not loopback, not the port of a
//    bridge/bond/team/VRF and not the external-IP holder. A device that goes down is
//    detached (its record, slot and counters kept). Selected devices that can take
//    redirected frames (xdp_features: ndo_xdp_xmit) are the only redirect targets (the
//    devmap): a route through any other device goes to the kernel stack.
//  - Kernel equivalence: the program forwards only what the kernel would forward, with the
//    same bytes and multipath leg, and passes everything else (bpf/xdp_fwd.c); the agent
//    mirrors what it needs (addresses, local and multipath routes, rp_filter, disable_ipv6,
//    hash policies) into its maps from events and a sysctl poll (kstate.ts, kwatch.ts).
//  - The node's policy: a frame that netfilter (nftables, iptables legacy or nft, connection
//    tracking), tc (filters, tcx, a configured qdisc) or xfrm would act on in the kernel goes
//    to the kernel, counted under netfilter/tc/xfrm (ingress side) or egress_netfilter/
//    egress_tc; nftables, tc and xfrm are followed by their events, legacy iptables and tcx by
//    a poll (policy-watch.ts, POLICY_BOUNDS); xdp.nodePolicy bypass forwards past them.
//  - Stacked devices: an upper device (macvlan, ipvlan, vlan...) of a selected device is
//    skipped, the lower one gets the program (select.ts skipStackedUppers).
//  - Mode: auto lets the kernel pick (native when the driver has XDP support, else generic)
//    and tries native again once on each start; status and the log say which. An explicit
//    native/generic that differs from what a restart finds attached re-attaches (a short gap
//    in which the stack forwards). A start that fails detaches and unpins everything.
//  - Redirect errors (frames lost after a redirect) are counted by a tracepoint program
//    (tracer.ts, bpf/xdp_trace.c) while the agent runs.
//  - Pins: <pinDir>/ns<inode of the network namespace>/{maps/*, dev/<name>/{prog,cfg,link}}.
//    A bpffs is mounted on /sys/fs/bpf (or on pinDir) when there is none.
//  - Stop: with keepOnStop (default) the programs stay attached and pinned, and forwarding
//    goes on without the agent (in XDP for WATCH_MS, then by the kernel: watch.ts); the next
//    start adopts them without a gap (same program, same link) or swaps in a new
//    build/config with bpf_link_update (no gap either). Without
//    keepOnStop, stop detaches and unpins. `fibkeeper xdp detach` does that any time.
//  - Foreign programs: a device with an XDP program fibkeeper did not attach is left alone
//    and reported (status, health, fibkeeper_xdp_foreign_program) with the program id, name,
//    link and the processes holding it; xdp.force removes it and attaches fibkeeper's.
//  - Counters: slot per device name, kept across restarts (in the pinned rodata) and while a
//    device is gone; a renamed device counts under its new name from then on. Beyond 63
//    devices, the rest share the ":other" slot.
//  - veth: a frame that a local process sent through a veth reaches the peer's native-mode
//    XDP with its TCP/UDP checksum still to be computed (checksum offload); XDP_REDIRECT
//    forwards it as is and the receiver drops it (bad checksum). Traffic from real NICs, or
//    from other hosts, is not affected. On such hosts use mode generic for those devices, or
//    turn tx checksum offload off on the sending side (ethtool -K DEV tx off).
export { XdpForwarder, type XdpForwarderParams } from './forwarder.js';
export { POLICY_BOUNDS } from './policy-watch.js';
export { WATCH_MS, WATCH_RENEW_MS } from './watch.js';
export { inspectNodePolicy, type PolicyInspection } from './policy-apply.js';
export {
  devicePolicy,
  nodePolicy,
  type DevicePolicy,
  type NodePolicy,
  type PolicyHit,
  type PolicyReason,
  type PolicySources,
} from './policy.js';
export {
  OTHER_DEVICE,
  type XdpConfigMode,
  type XdpDevicePolicy,
  type XdpNodePolicyMode,
  type XdpDeviceCounters,
  type XdpDeviceStatus,
  type XdpForwarderConfig,
  type XdpHealth,
} from './types.js';
export { detachPinned, type DetachPinnedParams } from './detach.js';
export { selectDevice, type DeviceVerdict, type SelectionConfig } from './select.js';
export { pinPaths, type PinPaths } from './pins.js';
export { registerXdpMetrics, type XdpMetricsSource } from './metrics.js';
export type { ForeignProgram } from './owner.js';
export type { DatapathOps, HookMode, HookQuery, RecordInfo } from './ops.js';
export {
  SHARED_MAP_NAMES,
  defaultObjectPath,
  loadInstance,
  type Instance,
  type SharedMaps,
} from './instance.js';
export {
  NOT_READY,
  buildLocal4,
  decodeState,
  encodeState,
  lpm4Key,
  lpm6Key,
  zeroRedirectErrors,
  REDIRECT_ERROR_NAMES,
  type RedirectErrorName,
  type DevState,
  type KernelState,
} from './layout-state.js';
export { mirrorKernel, type KernelMirror, type NetSysctls, type SlotDevice } from './kstate.js';
export {
  ACTION_NAMES,
  REASON_NAMES,
  RESULT_NAMES,
  FK_REASON_POST_LOOKUP,
  POST_LOOKUP_REASONS,
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
