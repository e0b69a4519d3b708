// The agent's event log: the last `capacity` events in a ring (for `events --since`), and the
// clients that follow it. Emitting costs an object and a slot in the ring; a follower is
// called synchronously and must not block (the API writes to its socket's buffer).
import { InvalidArgumentError } from '../errors/index.js';
import type { AgentEvent, EventFields, EventSink, EventType } from './types.js';

export interface EventLogParams {
  /** Events kept (the oldest is dropped first). */
  capacity: number;
  /** Wall-clock time in ms (the events' `time`); default Date.now. */
  now?: () => number;
}

/** What `read` returns: events after a sequence number or a time, optionally of some types. */
export interface EventQuery {
  /** Only events with a larger seq. */
  afterSeq?: number;
  /** Only events at or after this wall-clock time (ms). */
  sinceMs?: number;
  /** Only events whose type is one of these or starts with one of these followed by a dot. */
  types?: readonly string[];
}

export type EventListener = (e: AgentEvent) => void;

/** Whether `type` is selected by `types` ("extip" selects "extip.assigned"). */
export function typeMatches(type: string, types: readonly string[] | undefined): boolean {
  if (types === undefined || types.length === 0) return true;
  return types.some((t) => type === t || type.startsWith(`${t}.`));
}

export class EventLog implements EventSink {
  readonly #ring: (AgentEvent | undefined)[];
  #next = 0;
  #seq = 0;
  readonly #now: () => number;
  readonly #listeners = new Set<EventListener>();

  constructor(p: EventLogParams) {
    if (!Number.isInteger(p.capacity) || p.capacity < 1) {
      throw new InvalidArgumentError(`event log capacity must be a positive integer`);
    }
    this.#ring = new Array<AgentEvent | undefined>(p.capacity);
    this.#now = p.now ?? Date.now;
  }

  /** The sequence number of the newest event (0: none yet). */
  get lastSeq(): number {
    return this.#seq;
  }

  get capacity(): number {
    return this.#ring.length;
  }

  emit(type: EventType, summary: string, fields: EventFields = {}): void {
    const e: AgentEvent = {
      ...fields,
      seq: ++this.#seq,
      time: new Date(this.#now()).toISOString(),
      type,
      summary,
    };
    this.#ring[this.#next] = e;
    this.#next = (this.#next + 1) % this.#ring.length;
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch {
        this.#listeners.delete(l); // a broken follower stops following; the others go on
      }
    }
  }

  /** The kept events that match `q`, oldest first. */
  read(q: EventQuery = {}): AgentEvent[] {
    const out: AgentEvent[] = [];
    const n = this.#ring.length;
    for (let i = 0; i < n; i++) {
      const e = this.#ring[(this.#next + i) % n];
      if (e === undefined) continue;
      if (q.afterSeq !== undefined && e.seq <= q.afterSeq) continue;
      if (q.sinceMs !== undefined && Date.parse(e.time) < q.sinceMs) continue;
      if (!typeMatches(e.type, q.types)) continue;
      out.push(e);
    }
    return out;
  }

  /** Calls `fn` with every event from now on; returns the function that stops it. */
  follow(fn: EventListener): () => void {
    this.#listeners.add(fn);
    return () => void this.#listeners.delete(fn);
  }

  /** Clients following now. */
  get followers(): number {
    return this.#listeners.size;
  }
}
