// The neighbor subsystem: for every forwardable IP, a fresh kernel neighbor entry for its
// next hop on every selected L2 device, so that XDP's bpf_fib_lookup never answers NO_NEIGH.
// Desired state in tables (ForwardableIP, Device, Route → DesiredNeighbor), the kernel's
// state in an observed Neighbor table, and a reconciler that makes the kernel match. This
// file is the package's whole public surface; docs/neighbor.md explains the design.
//
//   const n = new NeighborSubsystem({ config, managedSupported, registry, log });
//   const configLoaded = n.registerInitializer('config');    // before start()
//   await n.start();
//   n.setOwner('config', cfg.forwardable.static); configLoaded();
//   await n.waitReady();                                      // first round, prune included
//   n.upsert('xdp-miss', ['192.0.2.7']);                      // the XDP miss tracker
//   ...
//   await n.stop();                                            // entries stay in the kernel
export { NeighborSubsystem } from './subsystem.js';
export type { NeighborSubsystemParams, NeighborHealth } from './subsystem.js';
export { NeighborMetrics, type NeighborCounters } from './metrics.js';
export { defaultTuning, matchGlob, resolveMode } from './config.js';
export type { NeighborConfig, NeighborTuning } from './config.js';
export { validateOwner } from './forwardable.js';
export type { OwnerChange } from './forwardable.js';
export { FIBKEEPER_NEIGH_PROTOCOL } from './types.js';
export type {
  Device,
  DesiredNeighbor,
  ForwardableIP,
  ObservedNeighbor,
  RefreshMode,
  RouteRow,
  UnusableEntry,
} from './types.js';
export type {
  DesiredStatus,
  DeviceStatus,
  ForwardableStatus,
  KernelEntryStatus,
  NeighborStatus,
  NexthopStatus,
  StatusQuery,
} from './status.js';
