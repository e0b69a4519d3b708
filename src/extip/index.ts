// External IPs: probe for each on the external interface (duplicate address detection), put
// it on a holder device that fibkeeper owns, keep it there (repair), and announce it from the
// external interface (gratuitous ARP, unsolicited NA), answer neighbor solicitations for
// them, and defend them against conflicting claims. This file is the subsystem's whole
// public surface.
//
//   const extip = new ExternalIpSubsystem({ netns, config: cfg.extip, registry, log });
//   await extip.start();                      // holder created/adopted, addresses adopted
//   await extip.setDesired(cfg.extip.static); // the full set: now others are removed
//   await extip.assign(['192.0.2.10']);       // probed, on the holder, first announcement sent
//   extip.list();                             // [{ ip, state, announcedAt, lastError, ... }]
//   await extip.stop();                       // addresses stay
//
// Cluster mode (`cluster: { mayHold }`): `setClusterIps(holdSet.ips)` follows the cluster
// component's hold set (removals first, awaited; no duplicate address detection); every
// announcement of and answer for a cluster IP asks `mayHold(ip)` first; the external
// interface's arp_ignore/arp_announce are set so that the kernel never answers for the
// holder's addresses (sysctl.ts).
export { ExternalIpSubsystem, type ExternalIpParams, type ExtipHealth } from './subsystem.js';
export {
  defaultOptions,
  resolveOptions,
  HOLDER_KINDS,
  type ExternalIpConfig,
  type HolderKind,
} from './options.js';
export {
  ExternalIpBatchError,
  type DadConflict,
  type ExternalIpState,
  type ExternalIpStatus,
} from './types.js';
export { DuplicateAddressError } from './dad.js';
// Cluster mode: the gate, the sysctls that keep the kernel quiet, the clean-up at start.
export type { ClusterGate } from './cluster.js';
export {
  CLUSTER_SYSCTLS,
  enforceClusterSysctls,
  readClusterSysctls,
  type SysctlState,
} from './sysctl.js';
export { removeHolderAddresses } from './holder.js';
export { noopExtipMetrics, registerExtipMetrics, type ExtipMetrics } from './metrics.js';
export { findExternal, type ExternalLink } from './external.js';
export { checkStaticExternalIps, nodeAddressMap } from './static-check.js';
export type { Conflict } from './linkio.js';
// The wire format, for tests and tools (capture decoding, conflicting hosts).
export {
  buildArp,
  buildArpProbe,
  buildArpReply,
  buildGratuitousArp,
  buildNeighborAdvert,
  buildUnsolicitedNa,
  decodeFrame,
  icmpv6Checksum,
  type ArpFrame,
  type DecodedFrame,
  type NeighborAdvertFrame,
} from './frames.js';
export {
  buildDadSolicit,
  decodeNeighborSolicit,
  solicitedNode,
  solicitedNodeMac,
  type NeighborSolicit,
} from './ndp.js';
