// What the log says about other hosts claiming our external IPs: the first claim after a
// quiet interval at once, with its IP, MAC and frame; every further claim only in a summary,
// at most one per interval while claims go on (how many, which IPs, which MACs, how many
// were answered with a defence). A storm of claims thus costs a line per interval, not a
// line per frame; the per-frame count is in fibkeeper_extip_conflicts_total. Pure: time
// from the injected clock.
import type { EventSink } from '../events/index.js';
import type { Logger } from '../log/index.js';
import { Timer, type Clock } from '../sched/index.js';
import type { Conflict } from './linkio.js';

export interface ConflictLogParams {
  log: Logger;
  clock: Clock;
  /** Least time between two lines, ms. */
  intervalMs: number;
  /** Where the same is reported as events (the first claim, then one summary per interval). */
  events?: EventSink;
}

/** IPs and MACs remembered per interval (the counts stay exact beyond them). */
const MAX_KEYS = 1024;
/** IPs and MACs named in a summary line. */
const SHOWN = 8;

export class ConflictLog {
  readonly #p: ConflictLogParams;
  /** Pending while an interval is open (claims are summed, not logged one by one). */
  readonly #timer: Timer;
  #since = 0;
  #claims = 0;
  #defended = 0;
  readonly #ips = new Map<string, number>();
  #otherIps = 0;
  readonly #macs = new Set<string>();
  #moreMacs = false;

  constructor(p: ConflictLogParams) {
    this.#p = p;
    this.#timer = new Timer(p.clock, { unref: true });
  }

  /** One claim seen; `defended`: a re-announcement answered it (not rate-limited away). */
  record(c: Conflict, defended: boolean): void {
    if (!this.#timer.pending) {
      this.#p.log.warn({ ...c, defended }, 'extip: another host claims an external IP');
      this.#p.events?.emit(
        'extip.conflict',
        `${c.mac} claims ${c.ip}${defended ? '; defended (announced again)' : '; not defended now (rate limit)'}`,
        { ip: c.ip, mac: c.mac, claims: 1, defended: defended ? 1 : 0 },
      );
      this.#open();
      return;
    }
    this.#claims++;
    if (defended) this.#defended++;
    const n = this.#ips.get(c.ip);
    if (n !== undefined) this.#ips.set(c.ip, n + 1);
    else if (this.#ips.size < MAX_KEYS) this.#ips.set(c.ip, 1);
    else this.#otherIps++;
    if (this.#macs.size < MAX_KEYS) this.#macs.add(c.mac);
    else if (!this.#macs.has(c.mac)) this.#moreMacs = true;
  }

  /** Logs what is pending and stops the timer. Idempotent. */
  stop(): void {
    this.#timer.cancel();
    this.#flush();
  }

  #open(): void {
    this.#since = this.#p.clock.now();
    this.#timer.start(this.#p.intervalMs, () => this.#onTimer());
  }

  #onTimer(): void {
    // claims went on: summarize them and keep summarizing; else the next claim is logged at once
    if (this.#flush()) this.#open();
  }

  /** Logs the summary of the interval, if it had claims; returns whether it had. */
  #flush(): boolean {
    const claims = this.#claims;
    if (claims === 0) return false;
    const top = [...this.#ips].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
    const intervalMs = this.#p.clock.now() - this.#since;
    this.#p.log.warn(
      {
        claims,
        defended: this.#defended,
        ips: top.map(([ip, n]) => `${ip}×${n}`),
        ipCount: this.#ips.size,
        moreIps: this.#otherIps > 0 || undefined,
        macs: [...this.#macs].slice(0, SHOWN),
        macCount: this.#macs.size,
        moreMacs: this.#moreMacs || undefined,
        intervalMs,
      },
      `extip: ${claims} more claims of external IPs by other hosts in the last ${Math.round(intervalMs / 1000)}s (${this.#defended} answered with a defence; the rest rate-limited)`,
    );
    this.#p.events?.emit(
      'extip.conflict',
      `${claims} more claims of external IPs by other hosts in ${Math.round(intervalMs / 1000)}s (${this.#defended} defended): ${top.map(([ip, n]) => `${ip}×${n}`).join(', ')}`,
      {
        claims,
        defended: this.#defended,
        ips: top.map(([ip]) => ip),
        macs: [...this.#macs].slice(0, SHOWN),
      },
    );
    this.#claims = 0;
    this.#defended = 0;
    this.#ips.clear();
    this.#otherIps = 0;
    this.#macs.clear();
    this.#moreMacs = false;
    return true;
  }
}
