// The text form of an event: one readable line, as `ip monitor` prints its own.
import type { AgentEvent } from './types.js';

/** "2025-06-01T10:00:00.123Z extip.assigned 203.0.113.5 assigned to fibkeeper0 and announced" */
export function formatEventLine(e: Pick<AgentEvent, 'time' | 'type' | 'summary'>): string {
  return `${e.time} ${e.type.padEnd(20)} ${e.summary.replace(/\s*\n\s*/g, ' ')}`;
}
