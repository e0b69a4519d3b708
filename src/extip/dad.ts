// Duplicate address detection on the external interface, before an external IP is put on the
// holder and announced: the holder is fibkeeper's own device and sees no segment, so the
// kernel's DAD there proves nothing. For IPv6, neighbor solicitations from :: to the target's
// solicited-node group (RFC 4862 §5.4); for IPv4, ARP probes (RFC 5227 §2.1.1). `probes`
// probes `intervalMs` apart, then `waitMs` of listening after the last one. The address is
// a duplicate when, meanwhile, another host answers for it (an NA, an ARP packet with it as
// sender) or probes for it too (an NS from :: without our nonce, an ARP probe). Pure: the
// frames go through the injected sink, what the listeners see comes in through claim(),
// time from the injected clock.
import { randomBytes } from 'node:crypto';
import { ConflictError, describeError, FibkeeperError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { ExtipMetrics } from './metrics.js';
import { Timer, type Clock } from '../sched/index.js';
import { DAD_NONCE_LEN } from './ndp.js';

export interface DadOptions {
  /** Probes sent per address (DupAddrDetectTransmits; RFC 5227 PROBE_NUM). */
  probes: number;
  /** Gap between two probes, ms. */
  intervalMs: number;
  /** Listening after the last probe, ms (RetransTimer; RFC 5227 ANNOUNCE_WAIT). */
  waitMs: number;
}

/** Puts probes on the wire. */
export interface DadSink {
  /** One probe for `ip`: an ARP probe, or an NS from :: carrying `nonce`. Throws if it cannot. */
  sendProbe(ip: ParsedIp, nonce: Buffer): void;
  /** While `on`, frames to the solicited-node group of the IPv6 `ip` must reach the listener. */
  listen(ip: ParsedIp, on: boolean): void;
}

export interface DadParams extends DadOptions {
  sink: DadSink;
  clock: Clock;
  metrics: ExtipMetrics;
}

/** Another host holds (or is claiming) the address: it must not be assigned. */
export class DuplicateAddressError extends ConflictError {
  readonly ip: string;
  readonly mac: string;
  readonly what: string;
  constructor(ip: string, mac: string, what: string) {
    super(
      `${ip}: duplicate address: another host on the external interface's segment uses it (${what} from ${mac}); it was not assigned or announced — free the address there, or choose another`,
    );
    this.ip = ip;
    this.mac = mac;
    this.what = what;
  }
}

interface Run {
  readonly ip: ParsedIp;
  readonly nonce: Buffer;
  sent: number;
  /** The next probe or the end of the wait. A live timer: a caller awaits the outcome. */
  readonly timer: Timer;
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}

const familyLabel = (ip: ParsedIp) => (ip.family === 4 ? 'ipv4' : 'ipv6');

export class DadProber {
  readonly #p: DadParams;
  readonly #runs = new Map<string, Run>();
  #stopped = false;

  constructor(p: DadParams) {
    this.#p = p;
  }

  /** The time one detection takes when no other host answers, ms. */
  get durationMs(): number {
    return (this.#p.probes - 1) * this.#p.intervalMs + this.#p.waitMs;
  }

  /**
   * Probes for `ip`: resolves when no other host claimed it within the probes and the wait;
   * rejects with DuplicateAddressError (another host holds or probes for it), or with a
   * FibkeeperError when a probe could not be sent (the interface is down or gone). A second
   * call while one runs shares it. The first probe goes out before this returns.
   */
  probe(ip: ParsedIp): Promise<void> {
    if (this.#stopped) return Promise.reject(new FibkeeperError('extip: stopped'));
    const running = this.#runs.get(ip.address);
    if (running !== undefined) return running.promise;
    let resolve!: () => void;
    let reject!: (err: Error) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const nonce = randomBytes(DAD_NONCE_LEN);
    const timer = new Timer(this.#p.clock);
    const run: Run = { ip, nonce, sent: 0, timer, promise, resolve, reject };
    this.#runs.set(ip.address, run);
    try {
      this.#p.sink.listen(ip, true);
    } catch (err) {
      this.#fail(run, err);
      return promise;
    }
    this.#next(run);
    return promise;
  }

  /** A detection is running for `ip` (canonical text). */
  probing(ip: string): boolean {
    return this.#runs.has(ip);
  }

  /**
   * A frame that makes `ip` a duplicate while it is probed: `what` another host sent, from
   * `mac`. A solicitation carrying our own nonce (ours, looped back) is not one. Returns
   * whether a detection was running for `ip`.
   */
  claim(ip: string, mac: string, what: string, nonce?: Uint8Array): boolean {
    const run = this.#runs.get(ip);
    if (run === undefined) return false;
    if (nonce !== undefined && run.nonce.equals(nonce)) return true;
    this.#end(run);
    this.#p.metrics.dad(familyLabel(run.ip), 'duplicate');
    run.reject(new DuplicateAddressError(ip, mac, what));
    return true;
  }

  /** Ends every running detection with `err` (the interface was deleted). */
  abortAll(err: Error): void {
    for (const run of [...this.#runs.values()]) this.#fail(run, err);
  }

  /** Ends every running detection (ClosedError-like `err`) and refuses new ones. Idempotent. */
  stop(err: Error): void {
    this.#stopped = true;
    this.abortAll(err);
  }

  /** Sends the next probe, or, after the wait, declares the address unique. */
  #next(run: Run): void {
    if (run.sent >= this.#p.probes) {
      this.#end(run);
      this.#p.metrics.dad(familyLabel(run.ip), 'unique');
      run.resolve();
      return;
    }
    try {
      this.#p.sink.sendProbe(run.ip, run.nonce);
    } catch (err) {
      this.#fail(run, err);
      return;
    }
    run.sent++;
    const last = run.sent >= this.#p.probes;
    const wait = last ? this.#p.waitMs : this.#p.intervalMs;
    run.timer.start(wait, () => this.#next(run));
  }

  #fail(run: Run, err: unknown): void {
    if (this.#runs.get(run.ip.address) !== run) return;
    this.#end(run);
    this.#p.metrics.dad(familyLabel(run.ip), 'error');
    this.#p.metrics.error('dad');
    run.reject(
      new FibkeeperError(
        `${run.ip.address}: duplicate address detection could not probe: ${describeError(err)}`,
        { cause: err },
      ),
    );
  }

  #end(run: Run): void {
    this.#runs.delete(run.ip.address);
    run.timer.cancel();
    try {
      this.#p.sink.listen(run.ip, false);
    } catch {
      // the socket is gone: so is its membership
    }
  }
}
