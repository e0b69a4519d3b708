// When this node may claim an unowned cluster IP, beyond placement and its own lease:
//
//  - Cool-down: the IP's owner key went with a lease that a peer fenced (fenced/<node>,
//    takeover.ts): the silent node's kernel may answer for it for coolMs after the revoke,
//    so the claim waits that long from the moment this node saw the key go. A node whose
//    first read already shows a fenced key (it started meanwhile) cannot tell which IPs were
//    the fenced node's: it cools every unowned IP as long as the longest cool-down.
//  - Duplicate address detection: an IP whose previous holder this node saw (an owner key,
//    bound to a fibkeeper node's lease) needs none — that holder is fenced by its lease. Any
//    other IP (new in the desired set, or never seen owned) is probed on the external
//    interface first; another host answering makes it a conflict: not claimed, not
//    announced, tried again after `conflictRetryMs`.
//  - Promises: while this node's own promises to its peers run (peers.ts), it claims nothing.
// Pure: the member feeds it the view and asks.
import type { Logger } from 'pino';
import { describeError } from '../errors/index.js';
import type { ClusterView, ViewOwner } from './view.js';

export interface Conflict {
  mac: string;
  what: string;
  /** Clock ms when seen. */
  at: number;
}

/** How long a detection that found an IP free stands in for the proof of an owner key. */
const PROBE_VALID_MS = 10_000;

export type ClaimVerdict = { kind: 'now' } | { kind: 'wait'; until: number } | { kind: 'probe' };

export class ClaimGate {
  readonly #conflictRetryMs: number;
  /** IPs this node saw with an owner key (a fibkeeper node held them). */
  readonly #owned = new Set<string>();
  readonly #coolUntil = new Map<string, number>();
  readonly #conflicts = new Map<string, Conflict>();
  /** IPs a detection found free, and when (a proof that goes stale). */
  readonly #probed = new Map<string, number>();
  #lastOwners = new Map<string, ViewOwner>();
  #first = true;

  constructor(opts: { conflictRetryMs: number }) {
    this.#conflictRetryMs = opts.conflictRetryMs;
  }

  /** Takes the view after every change. */
  observe(view: ClusterView, now: number): void {
    const fencedByLease = new Map<string, number>();
    for (const f of view.fenced.values()) fencedByLease.set(f.lease, f.coolMs);
    if (this.#first) {
      this.#first = false;
      const longest = Math.max(0, ...fencedByLease.values());
      if (longest > 0) {
        for (const ip of view.desired.keys()) {
          if (!view.owners.has(ip)) this.#cool(ip, now + longest);
        }
      }
    }
    for (const [ip, prev] of this.#lastOwners) {
      if (view.owners.get(ip)?.lease === prev.lease) continue;
      const cool = fencedByLease.get(prev.lease);
      if (cool !== undefined && !view.owners.has(ip)) this.#cool(ip, now + cool);
    }
    for (const ip of view.owners.keys()) this.#owned.add(ip);
    for (const ip of [...this.#owned]) if (!view.desired.has(ip)) this.#owned.delete(ip);
    for (const [ip, at] of this.#probed) {
      if (!view.desired.has(ip) || now - at >= PROBE_VALID_MS) this.#probed.delete(ip);
    }
    for (const [ip, until] of this.#coolUntil) {
      if (until <= now || !view.desired.has(ip)) this.#coolUntil.delete(ip);
    }
    for (const ip of this.#conflicts.keys()) {
      if (!view.desired.has(ip) || view.owners.has(ip)) this.#conflicts.delete(ip);
    }
    this.#lastOwners = new Map(view.owners);
  }

  #cool(ip: string, until: number): void {
    this.#coolUntil.set(ip, Math.max(until, this.#coolUntil.get(ip) ?? -Infinity));
  }

  /** May `ip` (unowned, placed here) be claimed now? `noClaimUntil`: this node's promises. */
  check(ip: string, now: number, noClaimUntil: number): ClaimVerdict {
    let until = noClaimUntil;
    const cool = this.#coolUntil.get(ip);
    if (cool !== undefined) until = Math.max(until, cool);
    const c = this.#conflicts.get(ip);
    if (c !== undefined) until = Math.max(until, c.at + this.#conflictRetryMs);
    if (until > now) return { kind: 'wait', until };
    const probed = this.#probed.get(ip);
    if (this.#owned.has(ip) || (probed !== undefined && now - probed < PROBE_VALID_MS)) {
      return { kind: 'now' };
    }
    return { kind: 'probe' };
  }

  /** Duplicate address detection found another host on `ip`. */
  conflict(ip: string, c: Conflict): void {
    this.#conflicts.set(ip, c);
  }

  /** Detection found nobody at `now`: the IP may be claimed for a while without another. */
  probed(ip: string, now: number): void {
    this.#conflicts.delete(ip);
    this.#probed.set(ip, now);
  }

  conflicts(): ReadonlyMap<string, Conflict> {
    return this.#conflicts;
  }

  /** IPs cooling down, with the clock ms they may be claimed from. */
  cooling(): ReadonlyMap<string, number> {
    return this.#coolUntil;
  }
}

export interface ProberParams {
  gate: ClaimGate;
  /** Duplicate address detection; rejects with `mac` and `what` when another host uses it. */
  probe: ((ip: string) => Promise<void>) | undefined;
  now: () => number;
  /** Another host was found on an IP (counted). */
  onConflict: () => void;
  /** Reconcile again (now, or after `ms`). */
  kick: (ms?: number) => void;
  retryMs: number;
  log: Logger | undefined;
}

/** Runs duplicate address detection for an IP before its claim, one at a time per IP. */
export class ClaimProber {
  readonly #p: ProberParams;
  readonly #running = new Set<string>();

  constructor(p: ProberParams) {
    this.#p = p;
  }

  /** Probes `ip`; found free, the gate lets it be claimed (and the member reconciles). */
  run(ip: string): void {
    const p = this.#p;
    if (p.probe === undefined) {
      p.gate.probed(ip, p.now());
      return p.kick();
    }
    if (this.#running.has(ip)) return;
    this.#running.add(ip);
    p.probe(ip).then(
      () => {
        this.#running.delete(ip);
        p.gate.probed(ip, p.now());
        p.kick();
      },
      (err: { mac?: unknown; what?: unknown }) => {
        this.#running.delete(ip);
        if (typeof err?.mac === 'string') {
          const what = typeof err.what === 'string' ? err.what : 'an answer';
          p.gate.conflict(ip, { mac: err.mac, what, at: p.now() });
          p.onConflict();
          p.log?.warn(
            { ip, mac: err.mac, what },
            'cluster: another host on the segment uses this cluster IP; not taken, not announced (tried again later)',
          );
          p.kick();
        } else {
          p.log?.debug({ ip, err: describeError(err) }, 'cluster: detection failed');
          p.kick(p.retryMs);
        }
      },
    );
  }
}
