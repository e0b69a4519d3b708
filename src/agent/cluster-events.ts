// What cluster mode reports as events: the IPs this node takes and gives up (with why), a
// fence (the lease can no longer be proven valid: everything dropped), IPs that moved between
// other nodes, and members that joined or left, seen at every hold set but a renewal.
import type { ClusterStatus, HoldSet } from '../cluster/index.js';
import type { EventSink } from '../events/index.js';

const list = (ips: readonly string[], max = 8) =>
  ips.slice(0, max).join(' ') + (ips.length > max ? ` (+${ips.length - max} more)` : '');

export class ClusterEvents {
  readonly #sink: EventSink;
  #held = new Set<string>();
  #owners = new Map<string, string | undefined>();
  #members: Set<string> | undefined;

  constructor(sink: EventSink) {
    this.#sink = sink;
  }

  /** A hold set was computed; `status` is the member's view then (not read for renewals). */
  hold(set: HoldSet, status: () => ClusterStatus): void {
    if (set.reason === 'renew') return;
    const next = new Set(set.ips);
    const taken = set.ips.filter((ip) => !this.#held.has(ip));
    const dropped = [...this.#held].filter((ip) => !next.has(ip));
    this.#held = next;
    const fields = { reason: set.reason };
    if (set.reason === 'fence' || set.reason === 'lost') {
      this.#sink.emit(
        'cluster.fenced',
        set.reason === 'fence'
          ? `lease can no longer be proven valid: every cluster IP dropped${dropped.length ? ` (${list(dropped)})` : ''}`
          : `etcd says the lease is gone: every cluster IP dropped${dropped.length ? ` (${list(dropped)})` : ''}`,
        { ...fields, ips: dropped },
      );
    } else if (dropped.length > 0) {
      this.#sink.emit('cluster.released', `gave up ${list(dropped)} (${set.reason})`, {
        ...fields,
        ips: dropped,
      });
    }
    if (taken.length > 0) {
      this.#sink.emit('cluster.held', `took ${list(taken)} (${set.reason})`, {
        ...fields,
        ips: taken,
      });
    }
    let s: ClusterStatus;
    try {
      s = status();
    } catch {
      return; // the member is being built: nothing to compare yet
    }
    this.#view(s);
  }

  /** Owners that changed between other nodes, members that joined or left. */
  #view(s: ClusterStatus): void {
    const owners = new Map<string, string | undefined>();
    for (const i of s.ips) {
      owners.set(i.ip, i.owner);
      const before = this.#owners.get(i.ip);
      if (this.#owners.has(i.ip) && before !== i.owner && i.owner !== undefined) {
        this.#sink.emit('cluster.moved', `${i.ip} moved from ${before ?? 'nobody'} to ${i.owner}`, {
          ip: i.ip,
          from: before ?? null,
          to: i.owner,
        });
      }
    }
    this.#owners = owners;
    const members = new Set(s.members.map((m) => m.name));
    const was = this.#members;
    this.#members = members;
    if (was === undefined) return;
    const joined = [...members].filter((m) => !was.has(m));
    const left = [...was].filter((m) => !members.has(m));
    if (joined.length + left.length === 0) return;
    this.#sink.emit(
      'cluster.members',
      [joined.length ? `joined: ${list(joined)}` : '', left.length ? `left: ${list(left)}` : '']
        .filter(Boolean)
        .join('; ') + ` (${members.size} members)`,
      { joined, left, members: members.size },
    );
  }
}
