// Active-active cluster IPs (mode `active-active`): every eligible member that announces
// routes over BGP holds the IP at once, not drained and able, and the router spreads the
// flows over them (ECMP). No owner key, no claim, no placement: each member decides for
// itself from the view. A member that stops holding one of them of its own accord (drained,
// no longer eligible, the IP deleted) first withdraws its route and keeps the address for
// `lingerMs` more, so that the router has moved the flows away before the address goes
// (flows already on their way are still answered). A lost lease, a link down or a stop
// drop it at once, as for any cluster IP.
import type { ClusterView } from './view.js';
import { isEligible, type PlacementIp } from './placement.js';

/** Whether `ip` is an active-active IP in the view. */
export function isActiveActive(view: ClusterView, ip: string): boolean {
  return view.desired.get(ip)?.eligible.mode === 'active-active';
}

/** The single-holder desired IPs: what placement places. */
export function singleHolderIps(view: ClusterView): PlacementIp[] {
  const out: PlacementIp[] = [];
  for (const d of view.desired.values())
    if (d.eligible.mode !== 'active-active') out.push({ ip: d.ip, eligible: d.eligible });
  return out;
}

/** The members that hold active-active `ip` (as the view has them), sorted. */
export function announcers(view: ClusterView, ip: string): string[] {
  const d = view.desired.get(ip);
  if (d?.eligible.mode !== 'active-active') return [];
  return [...view.members.values()]
    .filter(
      (m) =>
        m.bgp === true &&
        m.able !== false &&
        !view.cordoned.has(m.name) &&
        isEligible(m, d.eligible),
    )
    .map((m) => m.name)
    .sort();
}

export interface ActiveHoldParams {
  node: string;
  /** This node announces routes (bgp.enabled): without, it holds no active-active IP. */
  bgp: boolean;
  lingerMs: number;
  /** Computes the hold set again in `ms` (the linger's end). */
  later: (ms: number, fn: () => void) => void;
  republish: () => void;
  /** Told when IPs start to linger (their routes are to be withdrawn now). */
  onWithdraw?: (ips: readonly string[]) => void;
}

export class ActiveHold {
  readonly #p: ActiveHoldParams;
  /** Active-active IPs that left while held: until when they stay (clock ms). */
  readonly #lingering = new Map<string, number>();
  /** The active-active IPs of the last computed set (lingering ones included). */
  #last = new Set<string>();

  constructor(p: ActiveHoldParams) {
    this.#p = p;
  }

  /**
   * The active-active IPs this node holds now: those it is eligible for, and those it held
   * in `prev` (the hold set applied before) that left less than lingerMs ago. Called only
   * while the node may hold IPs at all (a valid lease, able, not stopping).
   */
  held(view: ClusterView, now: number, prev: readonly string[]): string[] {
    const want = new Set(this.#eligible(view));
    const before = new Set(prev);
    const started: string[] = [];
    for (const ip of this.#last) {
      if (want.has(ip) || !before.has(ip) || this.#lingering.has(ip) || this.#p.lingerMs <= 0)
        continue;
      this.#lingering.set(ip, now + this.#p.lingerMs);
      started.push(ip);
    }
    for (const [ip, until] of this.#lingering) {
      if (want.has(ip) || until <= now || !before.has(ip)) this.#lingering.delete(ip);
      else want.add(ip);
    }
    this.#last = want;
    if (started.length > 0) {
      this.#p.later(this.#p.lingerMs, () => this.#p.republish());
      this.#p.onWithdraw?.(started);
    }
    return [...want];
  }

  /** Held, but its route withdrawn: it stays only until the flows have moved. */
  lingering(ip: string): boolean {
    return this.#lingering.has(ip);
  }

  #eligible(view: ClusterView): string[] {
    if (!this.#p.bgp) return [];
    const self = view.members.get(this.#p.node);
    if (self === undefined || view.cordoned.has(self.name)) return [];
    const out: string[] = [];
    for (const d of view.desired.values())
      if (d.eligible.mode === 'active-active' && isEligible(self, d.eligible)) out.push(d.ip);
    return out;
  }
}
