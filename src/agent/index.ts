// The fibkeeper agent: the subsystems wired together, the control API's handlers, the
// status document and the XDP miss tracker.
export { Agent, RESERVED_OWNERS, type AgentParams } from './agent.js';
export { buildStatus, type StatusOptions } from './status.js';
export { MissTracker, MISS_OWNER, type MissTrackerParams } from './miss-tracker.js';
