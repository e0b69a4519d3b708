// Neighbor freshness and the forwardable IPs (src/neighbor). Rows of the one option table (src/config/schema.ts).

import { SECOND, MINUTE, HOUR, DAY, type OptionSpec } from '../spec.js';

export const NEIGHBOR_OPTIONS = [
  {
    path: 'neighbor.enabled',
    type: 'bool',
    default: true,
    doc: 'Keep neighbor entries for forwardable IPs.',
  },
  {
    path: 'neighbor.refresh',
    type: 'enum',
    values: ['auto', 'managed', 'legacy'],
    default: 'auto',
    doc: 'How entries stay fresh: managed (the kernel re-resolves them, 5.16+; ARP grows with the table), legacy (fibkeeper refreshes STALE entries within neighbor.rateLimit), auto: managed while at most neighbor.rateLimit entries are wanted and the kernel has it, legacy above (managed again at half of it).',
  },
  {
    path: 'neighbor.resyncInterval',
    type: 'duration',
    default: 5 * MINUTE,
    min: SECOND,
    max: DAY,
    doc: 'Full recomputation of every next hop, besides the incremental one on route and device changes.',
  },
  {
    path: 'neighbor.retryMin',
    type: 'duration',
    default: 100,
    min: 1,
    max: HOUR,
    doc: 'First retry delay after a failed neighbor write (doubles each failure).',
  },
  {
    path: 'neighbor.retryMax',
    type: 'duration',
    default: MINUTE,
    min: 1,
    max: HOUR,
    doc: 'Longest retry delay after repeated failures.',
  },
  {
    path: 'neighbor.unusableAfter',
    type: 'duration',
    default: 30 * SECOND,
    min: SECOND,
    max: DAY,
    doc: "How long a desired next hop's kernel entry may stay unresolved (FAILED, or INCOMPLETE again after a FAILED: the next hop does not answer ARP/NDP) before the agent reports it unusable: degraded health (/healthz 503, fibkeeper status exit 1) naming it, and fibkeeper_neighbor_unusable_entries. XDP sends such a next hop's traffic to the kernel (NO_NEIGH).",
  },
  {
    path: 'neighbor.rateLimit',
    type: 'int',
    default: 1000,
    min: 1,
    max: 1_000_000,
    doc: 'Most re-inserts, retries and refreshes per second in total. With refresh auto or legacy this bounds ARP/NDP on the wire however large the table (at most 3 requests per write); managed entries are re-probed by the kernel, one burst per reachable time as large as the table.',
  },
  {
    path: 'forwardable.static',
    reload: 'live',
    type: 'list',
    default: [],
    doc: 'Forwardable IPs from the config file (owner "config").',
  },
] as const satisfies readonly OptionSpec[];
