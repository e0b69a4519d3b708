// Agent events: what the agent did or saw (an entry repaired, an IP defended, a node taking
// over), each one JSON line with a time and a type, kept in a bounded ring for
// `fibkeeper events --since` and streamed to followers (GET /v1/events). Subsystems report
// into an EventSink; bursts (a bulk load, a flood of claims) are summarized (Burst). This
// file is the package's whole public surface.
//
//   const log = new EventLog({ capacity: 1000 });
//   log.emit('extip.assigned', '203.0.113.5 assigned and announced', { ip: '203.0.113.5' });
//   const stop = log.follow((e) => res.write(JSON.stringify(e) + '\n'));
export {
  EVENT_TYPES,
  noEvents,
  type AgentEvent,
  type EventFields,
  type EventSink,
  type EventType,
} from './types.js';
export { EventLog, typeMatches, type EventListener, type EventQuery } from './log.js';
export { Burst, SAMPLE_SIZE, type BurstParams } from './burst.js';
export { formatEventLine } from './format.js';
