// The announcement schedule of the external IPs: a burst when an IP is assigned (the first
// announcement at once, the rest `intervalMs` apart), a burst for every IP when the external
// interface comes up or changes its MAC, an optional periodic refresh, and a rate-limited
// defence when another host claims one of our IPs. Pure: frames go to the injected sink,
// time comes from the injected clock.
import { describeError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { ExtipAnnounceReason, ExtipMetrics } from './metrics.js';
import { KeyScheduler, RateLimiter, type Clock } from '../sched/index.js';

/** Puts one announcement of `ip` on the wire; throws when it could not. */
export interface AnnounceSink {
  announce(ip: ParsedIp): void;
  /** The IP is ours from now on (announced or not): answer for it. */
  track?(ip: ParsedIp): void;
  /** The IP is no longer ours: drop whatever was kept for it. */
  forget?(ip: ParsedIp): void;
}

export interface AnnouncerParams {
  count: number;
  intervalMs: number;
  refreshIntervalMs: number;
  defendIntervalMs: number;
  defendRatePerSecond: number;
  sink: AnnounceSink;
  clock: Clock;
  log: Logger;
  metrics: ExtipMetrics;
  /**
   * Checked right before every frame (cluster mode: the node may hold the IP by its lease
   * now, as timers can fire late); false skips the frame.
   */
  allowed?: (ip: string) => boolean;
  /** Told about every attempt: when it was made, and the error if it failed. */
  onResult?: (ip: string, at: number, err: Error | undefined) => void;
}

interface Announced {
  readonly ip: ParsedIp;
  /** Announcements still to send in the current burst. */
  remaining: number;
  announcedAt: number | undefined;
  lastDefence: number | undefined;
}

const familyLabel = (ip: ParsedIp) => (ip.family === 4 ? 'ipv4' : 'ipv6');

export class Announcer {
  readonly #p: AnnouncerParams;
  readonly #ips = new Map<string, Announced>();
  readonly #timers: KeyScheduler;
  readonly #defendLimit: RateLimiter;
  #stopped = false;
  #lastWarn = -Infinity;
  #suppressed = 0;

  constructor(p: AnnouncerParams) {
    this.#p = p;
    this.#timers = new KeyScheduler(p.clock, (keys) => this.#onDue(keys));
    this.#defendLimit = new RateLimiter({
      rate: p.defendRatePerSecond,
      burst: Math.max(1, Math.ceil(p.defendRatePerSecond)),
      now: () => p.clock.now(),
    });
  }

  /**
   * Starts announcing `ip`: the first announcement is sent before this returns, the rest of
   * the burst is scheduled. Adding an IP that is already announced restarts its burst.
   * Returns the error of the first announcement, if it failed.
   */
  add(ip: ParsedIp, reason: 'assign' | 'start' = 'assign'): Error | undefined {
    if (this.#stopped) return undefined;
    let a = this.#ips.get(ip.address);
    if (a === undefined) {
      a = { ip, remaining: 0, announcedAt: undefined, lastDefence: undefined };
      this.#ips.set(ip.address, a);
      this.#p.sink.track?.(ip);
    }
    if (this.#p.count === 0) {
      this.#scheduleNext(a, this.#p.clock.now());
      return undefined;
    }
    a.remaining = this.#p.count;
    const failures: Failure[] = [];
    this.#send(a, reason === 'start' ? 'assign' : reason, failures);
    this.#logFailures('first', failures);
    return failures[0]?.err;
  }

  /** Stops announcing `ip` (pending burst and refresh cancelled). Idempotent. */
  remove(ip: string): void {
    const a = this.#ips.get(ip);
    if (a !== undefined) {
      this.#ips.delete(ip);
      this.#p.sink.forget?.(a.ip);
    }
    this.#timers.cancel(ip);
  }

  has(ip: string): boolean {
    return this.#ips.has(ip);
  }

  get size(): number {
    return this.#ips.size;
  }

  /** Clock time of the last announcement that went out for `ip`. */
  announcedAt(ip: string): number | undefined {
    return this.#ips.get(ip)?.announcedAt;
  }

  /** A new burst for every IP (the external interface came up or changed its MAC). */
  burstAll(reason: 'link'): void {
    if (this.#stopped || this.#p.count === 0) return;
    const failures: Failure[] = [];
    for (const a of this.#ips.values()) {
      a.remaining = this.#p.count;
      this.#send(a, reason, failures);
    }
    this.#logFailures(reason, failures);
  }

  /**
   * Another host claims `ip`: re-announce once, at most once per defendIntervalMs per IP
   * and defendRatePerSecond in total (RFC 5227 §2.4 (c)). Returns whether it was sent.
   */
  defend(ip: string): boolean {
    const a = this.#ips.get(ip);
    if (a === undefined || this.#stopped) return false;
    const now = this.#p.clock.now();
    if (a.lastDefence !== undefined && now - a.lastDefence < this.#p.defendIntervalMs) {
      return false;
    }
    if (!this.#defendLimit.tryTake()) return false;
    a.lastDefence = now;
    const failures: Failure[] = [];
    const burstLeft = a.remaining; // a defence does not cut an ongoing burst short
    a.remaining = 1;
    this.#send(a, 'defend', failures);
    if (burstLeft > 0) {
      a.remaining = burstLeft;
      this.#scheduleNext(a, now);
    }
    this.#logFailures('defend', failures);
    return failures.length === 0;
  }

  /** Cancels every timer; later calls do nothing. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#timers.stop();
    this.#ips.clear();
  }

  #onDue(keys: string[]): void {
    const failures: Failure[] = [];
    for (const key of keys) {
      const a = this.#ips.get(key);
      if (a === undefined) continue;
      this.#send(a, a.remaining > 0 ? 'burst' : 'refresh', failures);
    }
    this.#logFailures('scheduled', failures);
  }

  /** Sends one announcement of `a` and schedules the next one. */
  #send(a: Announced, reason: ExtipAnnounceReason, failures: Failure[]): void {
    const now = this.#p.clock.now();
    let err: Error | undefined;
    if (this.#p.allowed?.(a.ip.address) === false) {
      if (a.remaining > 0) a.remaining--;
      this.#scheduleNext(a, now);
      return;
    }
    try {
      this.#p.sink.announce(a.ip);
      a.announcedAt = now;
      this.#p.metrics.announced(familyLabel(a.ip), reason);
    } catch (e) {
      err = e instanceof Error ? e : new Error(String(e));
      this.#p.metrics.error('announce');
      failures.push({ ip: a.ip.address, err });
    }
    if (a.remaining > 0) a.remaining--;
    this.#p.onResult?.(a.ip.address, now, err);
    this.#scheduleNext(a, now);
  }

  #scheduleNext(a: Announced, now: number): void {
    if (a.remaining > 0) this.#timers.at(a.ip.address, now + this.#p.intervalMs);
    else if (this.#p.refreshIntervalMs > 0) {
      this.#timers.at(a.ip.address, now + this.#p.refreshIntervalMs);
    } else this.#timers.cancel(a.ip.address);
  }

  /**
   * One log line per round however many IPs failed (an interface that is down fails all),
   * and at most one a second: the failures are counted in the metrics anyway.
   */
  #logFailures(what: string, failures: Failure[]): void {
    const first = failures[0];
    if (first === undefined) return;
    const now = this.#p.clock.now();
    if (now - this.#lastWarn < 1000) {
      this.#suppressed += failures.length;
      return;
    }
    this.#lastWarn = now;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    this.#p.log.warn(
      { ip: first.ip, failed: failures.length, suppressed, err: describeError(first.err) },
      `extip: ${what} announcement failed for ${failures.length} IP(s)`,
    );
  }
}

interface Failure {
  ip: string;
  err: Error;
}
