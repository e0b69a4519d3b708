// The XDP miss tracker: next hops that the XDP program found without a neighbor entry
// (NO_NEIGH) become forwardable IPs with owner `xdp-miss`, and stop being forwardable once
// no miss has been seen for `ttlMs`. So traffic to a next hop nobody registered heals itself.
import type { Registry } from 'prom-client';
import { registerMissTrackerMetrics, type MissTrackerMetrics } from './metrics.js';
import type { Logger } from '../log/index.js';
import { MISS_OWNER } from '../config/index.js';
import { Periodic, systemClock, type Clock } from '../sched/index.js';

export { MISS_OWNER };

export interface MissSource {
  /** Reads and removes the recorded misses. */
  takeMisses(): Promise<{ nexthop: string }[]> | { nexthop: string }[];
}

/** Where learned next hops go (the agent: through its write queue). */
export interface MissSink {
  upsert(owner: string, ips: readonly string[]): void | Promise<unknown>;
  delete(owner: string, ips: readonly string[]): void | Promise<unknown>;
}

export interface MissTrackerParams {
  source: MissSource;
  sink: MissSink;
  ttlMs: number;
  intervalMs: number;
  registry?: Registry;
  log: Logger;
  /** The ticks' timer and the misses' age (default the process clock). */
  clock?: Clock;
  /** The misses' age only (default clock.now). */
  now?: () => number;
}

export class MissTracker {
  readonly #lastSeen = new Map<string, number>();
  readonly #ticks: Periodic;
  #running: Promise<void> | undefined;
  readonly #metrics: MissTrackerMetrics | undefined;
  readonly #now: () => number;

  readonly #p: MissTrackerParams;
  constructor(p: MissTrackerParams) {
    this.#p = p;
    const clock = p.clock ?? systemClock;
    this.#now = p.now ?? (() => clock.now());
    // a tick that still runs when the next is due is skipped
    this.#ticks = new Periodic(
      clock,
      p.intervalMs,
      () => {
        this.#running ??= this.tick().finally(() => (this.#running = undefined));
      },
      { unref: true },
    );
    if (p.registry)
      this.#metrics = registerMissTrackerMetrics(p.registry, () => this.#lastSeen.size);
  }

  get tracked(): number {
    return this.#lastSeen.size;
  }

  start(): void {
    this.#ticks.start();
  }

  async stop(): Promise<void> {
    this.#ticks.stop();
    await this.#running;
  }

  /** One pass: learn new misses, refresh seen ones, expire old ones. */
  async tick(): Promise<void> {
    let misses: { nexthop: string }[];
    try {
      misses = await this.#p.source.takeMisses();
    } catch (err) {
      this.#p.log.warn({ err }, 'reading the XDP miss map failed');
      return;
    }
    const now = this.#now();
    const fresh: string[] = [];
    for (const m of misses) {
      if (!this.#lastSeen.has(m.nexthop)) fresh.push(m.nexthop);
      this.#lastSeen.set(m.nexthop, now);
    }
    if (fresh.length > 0) {
      try {
        await this.#p.sink.upsert(MISS_OWNER, fresh);
        this.#metrics?.learned.inc(fresh.length);
        this.#p.log.info(
          { count: fresh.length, sample: fresh.slice(0, 5) },
          'next hops learned from XDP misses',
        );
      } catch (err) {
        // A next hop that is not forwardable (the node's own address, say): forget it.
        for (const ip of fresh) this.#lastSeen.delete(ip);
        this.#p.log.warn({ err }, 'XDP miss next hops refused');
      }
    }
    const old = [...this.#lastSeen].filter(([, t]) => now - t >= this.#p.ttlMs).map(([ip]) => ip);
    if (old.length > 0) {
      for (const ip of old) this.#lastSeen.delete(ip);
      try {
        await this.#p.sink.delete(MISS_OWNER, old);
      } catch (err) {
        this.#p.log.warn({ err }, 'expired XDP miss next hops not released');
      }
      this.#metrics?.expired.inc(old.length);
    }
  }
}
