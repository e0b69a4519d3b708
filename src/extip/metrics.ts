// Metric group of the external-IP subsystem (src/extip): what is assigned, what was sent,
// what had to be repaired, which conflicts were seen. Label values come from small fixed
// sets; IPs never become labels.
import { Counter, Gauge, type Registry } from '../metrics/index.js';

export type ExtipFamilyLabel = 'ipv4' | 'ipv6';

const FAMILIES = ['ipv4', 'ipv6'] as const;

/** Why an announcement went out. */
const ANNOUNCE_REASONS = [
  'assign', // first announcement of a newly assigned (or re-added) IP
  'burst', // the rest of a burst
  'link', // the external interface came up or changed its MAC
  'refresh', // the periodic refresh
  'defend', // a conflicting claim was seen
] as const;
export type ExtipAnnounceReason = (typeof ANNOUNCE_REASONS)[number];

/** What a repair fixed. */
const REPAIR_KINDS = [
  'address', // an external IP removed from the holder by someone else, re-added
  'holder', // the holder device deleted, recreated and refilled
  'holder-up', // the holder device set down, set up again
  'foreign', // an address nobody asked for removed from the holder (after start-up)
  'sysctl', // cluster mode: arp_ignore/arp_announce of the external interface set back
] as const;
export type ExtipRepairKind = (typeof REPAIR_KINDS)[number];

/** Which step failed. */
const ERROR_OPS = [
  'assign',
  'unassign',
  'announce',
  'respond',
  'repair',
  'holder',
  'listen',
  'resync',
  'dad', // a probe could not be sent (the interface is down or gone)
] as const;
export type ExtipErrorOp = (typeof ERROR_OPS)[number];

/** How a duplicate address detection ended. */
const DAD_RESULTS = [
  'unique', // no other host answered: the IP was assigned
  'duplicate', // another host holds the IP or probes for it: not assigned
  'error', // no probe could be sent
] as const;
export type ExtipDadResult = (typeof DAD_RESULTS)[number];

const RESYNC_REASONS = ['overflow', 'periodic'] as const;

/** The counters and gauges the subsystem updates. */
export interface ExtipMetrics {
  /** Sets the number of IPs of a family that are on the holder and usable. */
  setAssigned(family: ExtipFamilyLabel, n: number): void;
  /** Sets the number of IPs of a family that could not be assigned (state failed). */
  setFailed(family: ExtipFamilyLabel, n: number): void;
  /** One announcement: IPv4 = the gratuitous ARP request and reply; IPv6 = one unsolicited NA. */
  announced(family: ExtipFamilyLabel, reason: ExtipAnnounceReason, n?: number): void;
  /** Frames put on the wire (2 per IPv4 announcement, 1 per IPv6 one, 1 per response or probe). */
  framesSent(family: ExtipFamilyLabel, n?: number): void;
  /** A reply to an ARP request / neighbor solicitation for an external IP. */
  responded(family: ExtipFamilyLabel): void;
  repaired(kind: ExtipRepairKind, n?: number): void;
  conflict(family: ExtipFamilyLabel): void;
  error(op: ExtipErrorOp): void;
  /** A duplicate address detection ended. */
  dad(family: ExtipFamilyLabel, result: ExtipDadResult): void;
  /** A full resync after lost notifications (subscription overflow) or the periodic check. */
  resync(reason: 'overflow' | 'periodic'): void;
}

/**
 * Counts kept as plain numbers and added to a prom-client counter at scrape time (its
 * collect()): an announcement of 1,000 IPs costs 1,000 additions, not 1,000 label look-ups.
 */
class LazyCounter<L extends string> {
  readonly #pending = new Map<string, { labels: Record<L, string>; n: number }>();
  readonly counter: Counter<L>;

  constructor(name: string, help: string, labelNames: L[], registry: Registry) {
    const pending = this.#pending;
    this.counter = new Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        for (const p of pending.values()) {
          if (p.n > 0) this.inc(p.labels, p.n);
          p.n = 0;
        }
      },
    });
  }

  add(key: string, labels: Record<L, string>, n: number): void {
    const p = this.#pending.get(key);
    if (p !== undefined) p.n += n;
    else this.#pending.set(key, { labels, n });
  }
}

/** Registers the `fibkeeper_extip_*` metrics on `registry` and returns their updater. */
export function registerExtipMetrics(registry: Registry): ExtipMetrics {
  const registers = [registry];
  const assignedNow = { ipv4: 0, ipv6: 0 };
  new Gauge({
    name: 'fibkeeper_extip_assigned',
    help: 'External IPs on the holder device and usable (not tentative, not failed), by family.',
    labelNames: ['family'],
    registers,
    collect() {
      for (const family of ['ipv4', 'ipv6'] as const) this.set({ family }, assignedNow[family]);
    },
  });
  const failedNow = { ipv4: 0, ipv6: 0 };
  new Gauge({
    name: 'fibkeeper_extip_failed',
    help: 'External IPs wanted but not assigned, by family: duplicate address detection found another host using the IP (the API answered 409 with its MAC), or the holder refused it; fibkeeper status gives the reason.',
    labelNames: ['family'],
    registers,
    collect() {
      for (const family of ['ipv4', 'ipv6'] as const) this.set({ family }, failedNow[family]);
    },
  });
  const announcements = new LazyCounter(
    'fibkeeper_extip_announcements_sent_total',
    'Announcements sent from the external interface (IPv4: gratuitous ARP request + reply; IPv6: unsolicited NA), by family and reason.',
    ['family', 'reason'],
    registry,
  );
  const frames = new LazyCounter(
    'fibkeeper_extip_frames_sent_total',
    'Frames sent from the external interface (announcements, responses, duplicate address detection probes), by family.',
    ['family'],
    registry,
  );
  const responses = new LazyCounter(
    'fibkeeper_extip_responses_sent_total',
    'Replies to ARP requests (only when arp_ignore keeps the kernel from answering) and neighbor solicitations for external IPs, by family.',
    ['family'],
    registry,
  );
  const repairs = new Counter({
    name: 'fibkeeper_extip_repairs_total',
    help: 'Repairs of the holder device and its addresses after someone else changed them, by kind (sysctl: cluster mode set arp_ignore or arp_announce of the external interface back).',
    labelNames: ['kind'],
    registers,
  });
  const conflicts = new Counter({
    name: 'fibkeeper_extip_conflicts_total',
    help: 'ARP packets / neighbor advertisements claiming an external IP from another MAC, by family.',
    labelNames: ['family'],
    registers,
  });
  const errors = new Counter({
    name: 'fibkeeper_extip_errors_total',
    help: 'Failed operations of the external-IP subsystem, by operation.',
    labelNames: ['op'],
    registers,
  });
  const resyncs = new Counter({
    name: 'fibkeeper_extip_resyncs_total',
    help: 'Full comparisons of the holder addresses with the desired set, by reason (overflow: notifications were lost).',
    labelNames: ['reason'],
    registers,
  });
  const dad = new Counter({
    name: 'fibkeeper_extip_dad_total',
    help: 'Duplicate address detections on the external interface before an IP is assigned, by family and result (unique: assigned; duplicate: another host holds it, not assigned; error: no probe could be sent).',
    labelNames: ['family', 'result'],
    registers,
  });
  // every series from the start, so that rate() and increase() see the first event
  for (const family of FAMILIES) {
    conflicts.inc({ family }, 0);
    frames.counter.inc({ family }, 0);
    responses.counter.inc({ family }, 0);
    for (const reason of ANNOUNCE_REASONS) announcements.counter.inc({ family, reason }, 0);
    for (const result of DAD_RESULTS) dad.inc({ family, result }, 0);
  }
  for (const kind of REPAIR_KINDS) repairs.inc({ kind }, 0);
  for (const op of ERROR_OPS) errors.inc({ op }, 0);
  for (const reason of RESYNC_REASONS) resyncs.inc({ reason }, 0);
  return {
    setAssigned: (family, n) => void (assignedNow[family] = n),
    setFailed: (family, n) => void (failedNow[family] = n),
    announced: (family, reason, n = 1) =>
      announcements.add(`${family} ${reason}`, { family, reason }, n),
    framesSent: (family, n = 1) => frames.add(family, { family }, n),
    responded: (family) => responses.add(family, { family }, 1),
    repaired: (kind, n = 1) => repairs.inc({ kind }, n),
    conflict: (family) => conflicts.inc({ family }),
    error: (op) => errors.inc({ op }),
    dad: (family, result) => dad.inc({ family, result }),
    resync: (reason) => resyncs.inc({ reason }),
  };
}

/** An updater that records nothing (no registry given). */
export function noopExtipMetrics(): ExtipMetrics {
  const nop = (): void => undefined;
  return {
    setAssigned: nop,
    setFailed: nop,
    announced: nop,
    framesSent: nop,
    responded: nop,
    repaired: nop,
    conflict: nop,
    error: nop,
    dad: nop,
    resync: nop,
  };
}
