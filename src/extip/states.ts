// The per-IP state of the assigner's entries, changed in one place: the assigned and failed
// gauges per family follow every change, and each change worth one becomes an event
// (assigned, removed, failed; refused when duplicate address detection found a holder).
import type { EventSink } from '../events/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { ExtipMetrics } from './metrics.js';
import type { Entry, ExternalIpState } from './types.js';

const familyLabel = (ip: ParsedIp) => (ip.family === 4 ? 'ipv4' : 'ipv6');

export class EntryStates {
  readonly #metrics: ExtipMetrics;
  readonly #events: EventSink | undefined;
  readonly #assigned = { ipv4: 0, ipv6: 0 };
  readonly #failed = { ipv4: 0, ipv6: 0 };

  constructor(metrics: ExtipMetrics, events: EventSink | undefined) {
    this.#metrics = metrics;
    this.#events = events;
  }

  /** Entries in state assigned, both families. */
  get assigned(): number {
    return this.#assigned.ipv4 + this.#assigned.ipv6;
  }

  /** Moves `e` to `s`; `quiet`: no event (the caller reported one of its own). */
  set(e: Entry, s: ExternalIpState, quiet = false): void {
    if (e.state === s) return;
    if (!quiet) this.#report(e, e.state, s);
    const fam = familyLabel(e.ip);
    if (e.state === 'assigned') this.#assigned[fam]--;
    if (s === 'assigned') this.#assigned[fam]++;
    if (e.state === 'failed') this.#failed[fam]--;
    if (s === 'failed') this.#failed[fam]++;
    e.state = s;
    this.#metrics.setAssigned(fam, this.#assigned[fam]);
    this.#metrics.setFailed(fam, this.#failed[fam]);
  }

  /** The event of a state change worth one: assigned, removed, failed (DAD: refused). */
  #report(e: Entry, from: ExternalIpState, to: ExternalIpState): void {
    const ev = this.#events;
    if (ev === undefined) return;
    const ip = e.ip.address;
    if (to === 'assigned') {
      ev.emit('extip.assigned', `${ip} assigned to the holder and announced`, { ip });
    } else if (to === 'pending' && from === 'removing') {
      ev.emit('extip.unassigned', `${ip} removed from the holder`, { ip });
    } else if (to === 'failed' && e.conflict !== undefined) {
      const { mac, what } = e.conflict;
      ev.emit(
        'extip.refused',
        `${ip} refused: ${what} ${mac} holds it (duplicate address detection)`,
        { ip, mac, what },
      );
    } else if (to === 'failed') {
      ev.emit('extip.failed', `${ip} not assigned: ${e.lastError ?? 'unknown error'}`, {
        ip,
        error: e.lastError ?? null,
      });
    }
  }
}
