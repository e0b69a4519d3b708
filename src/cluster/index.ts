// Cluster mode: external IPs owned by one node at a time, coordinated through etcd v3.
// This file is the subsystem's whole public surface.
//
//   const store = new EtcdStore({ endpoints: ['10.0.0.5:2379'], requestTimeoutMs: 500 });
//   const member = new ClusterMember({
//     store,
//     options: { nodeName: 'node-a', labels: { zone: 'a' }, nodeIPs: ['10.0.0.11'] },
//     metrics: registerClusterMetrics(registry),
//     log,
//     onHold: async (set) => { await extip.setClusterIps(set.ips); },   // remove first, then add
//     onPeers: (ips) => neighbor.setOwner('cluster', ips),
//   });
//   await member.start();       // hold set [] published and applied before anything else
//   await member.ready();       // registered, cluster keys read; claims follow placement
//   member.mayHold('192.0.2.10');   // synchronous fencing check for responder/announcer
//   member.status();            // members, lease, every IP with owner/placement/last move
//   await member.stop();        // hold set [] applied, then the lease revoked (handover)
//
//   const admin = new ClusterAdmin(store, '/fibkeeper/');   // the desired set (CLI, API)
//   await admin.add('192.0.2.10', { labels: { zone: 'a' } }); await admin.list();
//
// The seam: a HoldSet { ips, deadline, reason, at } says which IPs this node may hold now
// and by when (clock ms) it must have dropped them unless a newer set extends the
// deadline. Listeners are called in order; a release waits for the listeners' promises
// before the ownership key is deleted, so a listener must resolve only once the addresses
// are gone and the announcer/responder no longer speak for them. `mayHold(ip)` is the
// check to make right before answering or announcing, as timers can fire late.
export { ClusterMember, type ClusterMemberParams } from './member.js';
export {
  PeerMonitor,
  type PeerAddress,
  type PeerTransport,
  type PeerTransportHandlers,
} from './peers.js';
export { UdpPeerTransport, type UdpPeerTransportOptions } from './peer-udp.js';
export { ClusterAdmin } from './admin.js';
export type { HoldSet, HoldListener, HoldReason } from './hold.js';
export type { ClusterStatus } from './status.js';
export { defaultOptions, resolveOptions, type ClusterOptions } from './options.js';
export {
  place,
  weight,
  isEligible,
  type Eligibility,
  type PlacementIp,
  type PlacementMember,
} from './placement.js';
export { KeyLayout, validateClusterIp, type DesiredIp, type MemberInfo } from './keys.js';
export { EtcdStore, type EtcdStoreOptions } from './etcd-store.js';
export {
  CompactedError,
  type ClusterStore,
  type StoredKv,
  type WatchEvent,
  type WatchHandle,
  type WatchHandlers,
} from './store.js';
export {
  LocalEtcd,
  LocalEtcdCluster,
  findEtcd,
  freePort,
  type LocalEtcdOptions,
} from './local-etcd.js';
export {
  findOverlaps,
  holdIntervals,
  type HoldRecord,
  type HoldInterval,
  type Overlap,
} from './history.js';
export { noopClusterMetrics, registerClusterMetrics, type ClusterMetrics } from './metrics.js';
