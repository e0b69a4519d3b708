// The destinations XDP found without a neighbor entry (NO_NEIGH) lately, from the miss map
// fk_miss. With the miss tracker on, the map is emptied each
// interval, so what it took is added up here (hits per destination and egress device, the
// latest time seen), for up to `capacity` destinations, forgetting those not seen for
// `keepMs`; the entries still in the map are added on top when asked. Without the tracker the
// map itself holds them (an LRU of 4096 destinations, hits since each was first seen).
import type { MissEntry } from '../fib/index.js';

/** One destination that fell back to the kernel for lack of a neighbor entry. */
export interface MissRow {
  dst: string;
  /** The neighbor the FIB wanted (the gateway, or dst itself on a link). */
  nexthop: string;
  /** The egress device the FIB chose. */
  device: string;
  ifindex: number;
  /** NO_NEIGH packets counted (since the destination was first seen, or taken). */
  hits: number;
  /** ms since the latest one. */
  lastSeenAgoMs: number;
}

export interface RecentMissesParams {
  /** Destinations remembered. */
  capacity?: number;
  /** How long a destination not seen again stays listed, ms. */
  keepMs?: number;
  /** CLOCK_MONOTONIC in ns, the clock of MissEntry.lastSeenNs. */
  nowNs?: () => bigint;
}

interface Row {
  dst: string;
  nexthop: string;
  ifindex: number;
  hits: number;
  lastSeenNs: bigint;
}

const keyOf = (m: { egressIfindex: number; dst: string }) => `${m.egressIfindex}|${m.dst}`;

export class RecentMisses {
  readonly #rows = new Map<string, Row>();
  readonly #capacity: number;
  readonly #keepNs: bigint;
  readonly #nowNs: () => bigint;

  constructor(p: RecentMissesParams = {}) {
    this.#capacity = p.capacity ?? 1024;
    this.#keepNs = BigInt(p.keepMs ?? 600_000) * 1_000_000n;
    this.#nowNs = p.nowNs ?? (() => process.hrtime.bigint());
  }

  /** Entries taken from the map (the miss tracker's read): their hits are added up. */
  record(taken: readonly MissEntry[]): void {
    for (const m of taken) {
      const k = keyOf(m);
      const r = this.#rows.get(k);
      if (r !== undefined) {
        r.hits += m.hits;
        if (m.lastSeenNs > r.lastSeenNs) r.lastSeenNs = m.lastSeenNs;
        r.nexthop = m.nexthop;
        this.#rows.delete(k); // re-inserted: the map's order is the order of last use
        this.#rows.set(k, r);
        continue;
      }
      this.#rows.set(k, {
        dst: m.dst,
        nexthop: m.nexthop,
        ifindex: m.egressIfindex,
        hits: m.hits,
        lastSeenNs: m.lastSeenNs,
      });
      if (this.#rows.size > this.#capacity) {
        const oldest = this.#rows.keys().next().value;
        if (oldest !== undefined) this.#rows.delete(oldest);
      }
    }
  }

  /**
   * The `limit` destinations with the most hits seen within keepMs: those recorded plus
   * `inMap` (entries still in the map), most hits first, then the latest first.
   */
  top(limit: number, inMap: readonly MissEntry[], nameOf: (ifindex: number) => string): MissRow[] {
    const now = this.#nowNs();
    const merged = new Map<string, Row>();
    for (const [k, r] of this.#rows) {
      if (now - r.lastSeenNs > this.#keepNs) this.#rows.delete(k);
      else merged.set(k, { ...r });
    }
    for (const m of inMap) {
      if (now - m.lastSeenNs > this.#keepNs) continue;
      const k = keyOf(m);
      const r = merged.get(k);
      if (r === undefined) {
        merged.set(k, {
          dst: m.dst,
          nexthop: m.nexthop,
          ifindex: m.egressIfindex,
          hits: m.hits,
          lastSeenNs: m.lastSeenNs,
        });
      } else {
        r.hits += m.hits;
        if (m.lastSeenNs > r.lastSeenNs) r.lastSeenNs = m.lastSeenNs;
      }
    }
    return [...merged.values()]
      .sort((a, b) => b.hits - a.hits || Number(b.lastSeenNs - a.lastSeenNs))
      .slice(0, limit)
      .map((r) => ({
        dst: r.dst,
        nexthop: r.nexthop,
        device: nameOf(r.ifindex),
        ifindex: r.ifindex,
        hits: r.hits,
        lastSeenAgoMs: Math.max(0, Number((now - r.lastSeenNs) / 1_000_000n)),
      }));
  }
}
