// The shape of an agent event: one thing the agent did or saw, as one JSON line.

/** Every event type, by subsystem (the text before the dot). docs/events.md describes each. */
export const EVENT_TYPES = [
  'agent.started',
  'agent.stopping',
  'neighbor.written',
  'neighbor.repaired',
  'neighbor.lost',
  'neighbor.deleted',
  'neighbor.unusable',
  'forwardable.added',
  'forwardable.removed',
  'forwardable.replaced',
  'extip.assigned',
  'extip.unassigned',
  'extip.repaired',
  'extip.failed',
  'extip.refused',
  'extip.conflict',
  'cluster.held',
  'cluster.released',
  'cluster.fenced',
  'cluster.moved',
  'cluster.members',
  'xdp.attached',
  'xdp.detached',
  'xdp.foreign',
  'xdp.error',
  'xdp.policy',
  'config.reloaded',
  'config.refused',
  'socket.reopened',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Field values an event carries besides its own four (flat, for `jq` and grep). */
export type EventFields = Record<string, string | number | boolean | null | readonly string[]>;

/**
 * One event. `seq` counts from 1 at the agent's start (a gap in what a client read means it
 * missed events); `time` is ISO 8601 UTC; `summary` the readable line of the text form.
 */
export interface AgentEvent {
  seq: number;
  time: string;
  type: EventType;
  summary: string;
  [field: string]: unknown;
}

/** Where a subsystem reports events (the agent's EventLog; nothing in tests). */
export interface EventSink {
  emit(type: EventType, summary: string, fields?: EventFields): void;
}

/** A sink that drops everything (a subsystem started without an agent). */
export const noEvents: EventSink = { emit: () => undefined };
