// What cluster mode reports as events: the IPs this node takes and gives up (with why), a
// fence (the lease can no longer be proven valid: everything dropped), IPs that moved between
// other nodes, and members that joined or left, seen at every hold set but a renewal.
import type { ClusterStatus, HoldSet } from '../cluster/index.js';
import type { EventSink } from '../events/index.js';

const list = (ips: readonly string[], max = 8) =>
  ips.slice(0, max).join(' ') + (ips.length > max ? ` (+${ips.length - max} more)` : '');

/** IPs an event carries as fields (the ring's memory stays bounded); `count` has them all. */
export const EVENT_IPS_MAX = 64;
const ipFields = (ips: readonly string[]) => ({
  ips: ips.slice(0, EVENT_IPS_MAX),
  count: ips.length,
});

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
        { ...fields, ...ipFields(dropped) },
      );
    } else if (dropped.length > 0) {
      this.#sink.emit('cluster.released', `gave up ${list(dropped)} (${set.reason})`, {
        ...fields,
        ...ipFields(dropped),
      });
    }
    if (taken.length > 0) {
      this.#sink.emit('cluster.held', `took ${list(taken)} (${set.reason})`, {
        ...fields,
        ...ipFields(taken),
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

  /** One event for the moves of one view: a node that dies moves all its IPs at once. */
  #moved(moves: readonly { ip: string; from: string | null; to: string }[]): void {
    const text = (m: (typeof moves)[number]) =>
      `${m.ip} moved from ${m.from ?? 'nobody'} to ${m.to}`;
    if (moves.length === 1) {
      this.#sink.emit('cluster.moved', text(moves[0]!), { ...moves[0]! });
    } else if (moves.length > 1) {
      const shown = moves.slice(0, 8).map((m) => `${m.ip} ${m.from ?? 'nobody'}→${m.to}`);
      this.#sink.emit(
        'cluster.moved',
        `${moves.length} cluster IPs moved between nodes: ${shown.join(', ')}${moves.length > 8 ? ', …' : ''}`,
        {
          count: moves.length,
          moves: moves.slice(0, EVENT_IPS_MAX).map((m) => `${m.ip} ${m.from ?? '-'} ${m.to}`),
        },
      );
    }
  }

  /** Owners that changed between other nodes, members that joined or left. */
  #view(s: ClusterStatus): void {
    const owners = new Map<string, string | undefined>();
    const moves: { ip: string; from: string | null; to: string }[] = [];
    for (const i of s.ips) {
      owners.set(i.ip, i.owner);
      const before = this.#owners.get(i.ip);
      if (this.#owners.has(i.ip) && before !== i.owner && i.owner !== undefined) {
        moves.push({ ip: i.ip, from: before ?? null, to: i.owner });
      }
    }
    this.#owners = owners;
    this.#moved(moves);
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
