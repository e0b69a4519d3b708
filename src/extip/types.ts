// Types shared inside src/extip: what the assigner sees of the kernel and of the
// announcer, the per-IP status, and the error of a request for several IPs.
import { ClosedError, describeError, FibkeeperError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Timer } from '../sched/index.js';

/** An address as seen on the holder (dump or event). */
export interface ObservedAddress {
  readonly ip: ParsedIp;
  readonly prefixlen: number;
  /** IFA_F_* */
  readonly flags: number;
}

/** The kernel side of the assigner; each call is idempotent. */
export interface HolderOps {
  /**
   * Like `ip addr add IP/32|/128 dev HOLDER`: 'exists' when the kernel says EEXIST (not an
   * error). Waits while the holder device is being recreated.
   */
  add(ip: ParsedIp): Promise<'added' | 'exists'>;
  /** Like `ip addr del IP/PLEN dev HOLDER`: 'absent' when it was not there (not an error). */
  del(ip: ParsedIp, prefixlen: number): Promise<'deleted' | 'absent'>;
}

/** What the assigner needs from the announcer. */
export interface AnnouncerLike {
  add(ip: ParsedIp, reason?: 'assign' | 'start'): Error | undefined;
  remove(ip: string): void;
  announcedAt(ip: string): number | undefined;
}

/**
 * pending: desired, not (yet) on the holder · tentative: duplicate address detection running
 * (on the external interface before the IP is added; or the kernel's, on the holder, for an
 * address someone else added with DAD) · assigned: on the holder, usable, announced ·
 * failed: could not be assigned (lastError says why, `conflict` which host holds it; retried
 * by the periodic check and when the external interface comes up) · removing: being deleted.
 */
export type ExternalIpState = 'pending' | 'tentative' | 'assigned' | 'failed' | 'removing';

export interface ExternalIpStatus {
  ip: string;
  family: 4 | 6;
  state: ExternalIpState;
  /** Found on the holder at start-up and not (yet) confirmed by a request or setDesired. */
  adopted: boolean;
  /** Clock time (ms) of the last announcement sent, if any. */
  announcedAt: number | undefined;
  lastError: string | undefined;
  /** The host that duplicate address detection found holding the IP (state failed). */
  conflict: DadConflict | undefined;
  /** A cluster external IP (cluster mode), held while this node owns it; else node-local. */
  cluster?: boolean;
}

/** Another host that holds an IP: its MAC and the frame that said so. */
export interface DadConflict {
  mac: string;
  what: string;
}

/** A request for several IPs failed for some of them. */
export class ExternalIpBatchError extends FibkeeperError {
  readonly failures: readonly { ip: string; error: Error }[];
  constructor(verb: string, total: number, failures: { ip: string; error: Error }[]) {
    const shown = failures.slice(0, 5).map((f) => `${f.ip}: ${describeError(f.error)}`);
    const more = failures.length > 5 ? `; and ${failures.length - 5} more` : '';
    const first = failures[0]?.error as { code?: unknown } | undefined;
    const code = first instanceof FibkeeperError ? first.code : 'FIBKEEPER_ERR_SYSTEM';
    super(`${verb}: ${failures.length} of ${total} IPs failed: ${shown.join('; ')}${more}`, {
      cause: failures[0]?.error,
      code,
    });
    this.failures = failures;
  }
}

/**
 * One request for several IPs: settles once every IP has settled, without a promise per
 * IP. Resolves when all succeeded; rejects with the IP's own error when the request named
 * one IP, with ExternalIpBatchError when it named several.
 */
export class Batch {
  readonly promise: Promise<void>;
  readonly #verb: string;
  #total = 0;
  #pending = 0;
  #sealed = false;
  readonly #failures: { ip: string; error: Error }[] = [];
  #resolve!: () => void;
  #reject!: (err: Error) => void;

  constructor(verb: string) {
    this.#verb = verb;
    this.promise = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** One more IP to wait for. */
  add(): void {
    this.#total++;
    this.#pending++;
  }

  /** No more IPs: settles now if all have already settled. */
  seal(): Promise<void> {
    this.#sealed = true;
    this.#finish();
    return this.promise;
  }

  settle(ip: string, error?: Error): void {
    if (error !== undefined) this.#failures.push({ ip, error });
    this.#pending--;
    this.#finish();
  }

  #finish(): void {
    if (!this.#sealed || this.#pending > 0) return;
    const failures = this.#failures;
    if (failures.length === 0) this.#resolve();
    else if (this.#total === 1) this.#reject(failures[0]!.error);
    else this.#reject(new ExternalIpBatchError(this.#verb, this.#total, failures));
  }
}

export function stoppedError(): ClosedError {
  return new ClosedError('extip: the external-IP subsystem is stopped');
}

export function dadFailed(ip: ParsedIp): FibkeeperError {
  return new FibkeeperError(
    `${ip.address}: duplicate address detection failed (dadfailed): another host on the link uses it`,
    { code: 'FIBKEEPER_ERR_CONFLICT' },
  );
}

// --- the assigner's per-IP record --------------------------------------------------------

export interface Waiter {
  gen: number;
  want: boolean;
  batch: Batch;
}

export interface TentativeWait {
  resolve(): void;
  reject(err: Error): void;
  timer: Timer;
}

export interface Entry {
  readonly ip: ParsedIp;
  desired: boolean;
  adopted: boolean;
  /** On the holder, as last seen or applied. */
  present: boolean;
  prefixlen: number;
  /** IFA_F_* as last seen in an event or dump; undefined = not seen since our last add. */
  flags: number | undefined;
  state: ExternalIpState;
  lastError: string | undefined;
  /** Bumped by every request; waiters settle once the worker has applied their gen. */
  gen: number;
  waiters: Waiter[];
  running: boolean;
  /** Woken while running: run once more. */
  dirty: boolean;
  /** Why the address is missing, when someone else removed it (counted on re-add). */
  repairCause: 'address' | 'holder' | undefined;
  /** Set when duplicate address detection failed for it. */
  conflict: DadConflict | undefined;
  /** Waiting for the kernel's DAD on the holder (an address someone else added with it). */
  tentative: TentativeWait | undefined;
  /** Seen on the holder without being desired (removed once the desired set is loaded). */
  foreign: boolean;
  /** #epoch of our last kernel call for it: dumps started before it are stale for it. */
  epoch: number;
}

const hostLen = (ip: ParsedIp): number => (ip.family === 4 ? 32 : 128);

export function newEntry(ip: ParsedIp): Entry {
  return {
    ip,
    desired: false,
    adopted: false,
    present: false,
    prefixlen: hostLen(ip),
    flags: undefined,
    state: 'pending',
    lastError: undefined,
    gen: 0,
    waiters: [],
    running: false,
    dirty: false,
    repairCause: undefined,
    conflict: undefined,
    tentative: undefined,
    foreign: false,
    epoch: 0,
  };
}
