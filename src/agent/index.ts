// The fibkeeper agent: the subsystems wired together, the control API's handlers, the
// status document and the XDP miss tracker.
export { Agent, RESERVED_OWNERS, type AgentParams, type AgentPhase } from './agent.js';
export {
  ControlPlane,
  type Change,
  type ControlPlaneParams,
  type ExtipTarget,
  type ForwardableTarget,
} from './control.js';
export { acquireAgentLock, lockHolder, netnsPath, type AgentLock } from './lock.js';
export { checkCapabilities, neededCapabilities } from './preflight.js';
export {
  StateStore,
  StateFileError,
  emptyState,
  formatState,
  parseState,
  usableOf,
  writeDurably,
  type ControlState,
  type SkippedEntry,
  type StaticSets,
} from './state.js';
export type { ReloadResult } from './reload.js';
export { staticSets } from './restore.js';
export {
  STATUS_SCHEMA_VERSION,
  buildStatus,
  type ClusterSection,
  type ExtipSection,
  type KernelSection,
  type MissTrackerSection,
  type NeighborSection,
  type QuerySection,
  type StateFileSection,
  type StatusDocument,
  type StatusOptions,
  type XdpSection,
} from './status.js';
export type { AgentView } from './view.js';
export { metricCatalog, metricsMarkdown, type MetricInfo } from './catalog.js';
export {
  registerAgentMetrics,
  registerMissTrackerMetrics,
  type AgentMetrics,
  type MissTrackerMetrics,
} from './metrics.js';
export { MissTracker, MISS_OWNER, type MissTrackerParams } from './miss-tracker.js';
export { checkStaticsOnNode } from './node-check.js';
export { AgentEvents, EVENT_LOG_CAPACITY } from './events.js';
export { RecentMisses, type MissRow } from './misses.js';
export { explainIp, type IpExplanation, type RouteExplanation } from './explain.js';
