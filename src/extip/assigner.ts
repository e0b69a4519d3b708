// The assigner: drives the addresses on the holder device towards the desired set, one
// worker per IP, level-triggered. A request only flips the IP's desired flag (synchronously,
// in call order) and waits; the worker then adds or deletes until the kernel matches, so any
// mix of concurrent requests ends in the state of their serial order by call time, and a
// request that a later one overrides still succeeds (it did hold, then was undone). Address
// events and the periodic check mark IPs as present or missing and wake their workers:
// that is how an address someone else deleted comes back. A new IP passes duplicate address
// detection (the injected `dad`) before it is added; one that comes back after someone else
// removed it does not (it was ours a moment ago, and defended). Kernel calls go through the
// injected HolderOps; everything else here is pure. States and their events: states.ts; the
// wait for the kernel's DAD on an address someone else added: tentative.ts.
import { describeError, FibkeeperError } from '../errors/index.js';
import type { EventSink } from '../events/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { ExtipMetrics } from './metrics.js';
import { IFA_F_DADFAILED, IFA_F_TENTATIVE } from '../netlink/index.js';
import type { Clock } from '../sched/index.js';
import { DuplicateAddressError } from './dad.js';
import { EntryStates } from './states.js';
import { finishTentative, waitTentative } from './tentative.js';
import {
  Batch,
  dadFailed,
  newEntry,
  stoppedError,
  type Entry,
  type Waiter,
  type AnnouncerLike,
  type ExternalIpStatus,
  type HolderOps,
  type ObservedAddress,
} from './types.js';

export interface AssignerParams {
  ops: HolderOps;
  announcer: AnnouncerLike;
  clock: Clock;
  log: Logger;
  metrics: ExtipMetrics;
  /**
   * Duplicate address detection on the external interface, before a new IP is added:
   * resolves when no other host uses it, rejects (DuplicateAddressError) when one does.
   * Absent: off.
   */
  dad?: (ip: ParsedIp) => Promise<void>;
  /** Where assignments, removals, repairs and failures are reported (one event each). */
  events?: EventSink;
}

const hostLen = (ip: ParsedIp) => (ip.family === 4 ? 32 : 128);

export class Assigner {
  readonly #p: AssignerParams;
  readonly #entries = new Map<string, Entry>();
  readonly #states: EntryStates;
  #loaded = false;
  #stopped = false;
  /** Counts our kernel calls, to tell which dump results are older than them. */
  #epoch = 0;
  /** Epoch at which we deleted an address (so an older dump does not bring it back). */
  readonly #removedAt = new Map<string, number>();

  constructor(p: AssignerParams) {
    this.#p = p;
    this.#states = new EntryStates(p.metrics, p.events);
  }

  /** True once setDesired() has run: from then on, undesired addresses are removed. */
  get loaded(): boolean {
    return this.#loaded;
  }

  // --- requests ---------------------------------------------------------------------------

  /**
   * Makes every IP desired (want) or undesired (!want) and resolves when the worker has
   * applied it; rejects with the per-IP error (one IP) or ExternalIpBatchError (several).
   * The desired flags change before this returns, so the final state follows call order.
   */
  request(ips: readonly ParsedIp[], want: boolean): Promise<void> {
    const batch = new Batch(want ? 'assign' : 'unassign');
    const seen = new Set<string>();
    for (const ip of ips) {
      if (seen.has(ip.address)) continue;
      seen.add(ip.address);
      this.#want(ip, want, batch);
    }
    return batch.seal();
  }

  /**
   * The full desired set: every IP in `ips` is assigned, every other one removed (also
   * those adopted at start-up). Marks the desired set as loaded.
   */
  setDesired(ips: readonly ParsedIp[]): Promise<void> {
    this.#loaded = true;
    const batch = new Batch('setDesired');
    const wanted = new Set<string>();
    for (const ip of ips) {
      if (wanted.has(ip.address)) continue;
      wanted.add(ip.address);
      this.#want(ip, true, batch);
    }
    for (const e of [...this.#entries.values()]) {
      if (wanted.has(e.ip.address) || (!e.desired && !e.present)) continue;
      this.#want(e.ip, false, batch);
    }
    return batch.seal();
  }

  #want(ip: ParsedIp, want: boolean, batch: Batch): void {
    batch.add();
    if (this.#stopped) return batch.settle(ip.address, stoppedError());
    const e = this.#entry(ip);
    e.desired = want;
    e.adopted = false;
    if (want) e.foreign = false;
    e.gen++;
    e.waiters.push({ gen: e.gen, want, batch });
    void this.#drive(e);
  }

  #entry(ip: ParsedIp): Entry {
    let e = this.#entries.get(ip.address);
    if (e === undefined) {
      e = newEntry(ip);
      this.#entries.set(ip.address, e);
    }
    return e;
  }

  // --- the worker -------------------------------------------------------------------------

  /** Runs the IP's worker, or asks the running one for another round. */
  async #drive(e: Entry): Promise<void> {
    if (e.running) {
      e.dirty = true;
      return;
    }
    e.running = true;
    try {
      for (;;) {
        e.dirty = false;
        const gen = e.gen;
        const want = e.desired;
        let err: Error | undefined;
        try {
          await this.#step(e, want);
        } catch (x) {
          err = x instanceof Error ? x : new Error(String(x));
        }
        this.#settle(e, gen, want, err);
        if (this.#stopped || (!e.dirty && e.gen === gen)) break;
      }
    } finally {
      e.running = false;
    }
    this.#forgetIfIdle(e);
  }

  #forgetIfIdle(e: Entry): void {
    if (!e.desired && !e.present && !e.running && e.waiters.length === 0) {
      this.#states.set(e, 'pending'); // out of the assigned and failed counts
      this.#entries.delete(e.ip.address);
    }
  }

  /** One round: make the kernel hold (or not hold) the address, announce a new one. */
  async #step(e: Entry, want: boolean): Promise<void> {
    if (this.#stopped) return;
    if (!want) return this.#stepRemove(e);
    if (e.present && e.flags !== undefined && (e.flags & IFA_F_DADFAILED) !== 0) {
      // Retrying an address whose DAD failed: it must go and come back to run DAD again.
      await this.#p.ops.del(e.ip, e.prefixlen);
      this.#touch(e, false);
    }
    if (e.state === 'removing' || (e.state === 'assigned' && !e.present)) {
      this.#states.set(e, 'pending');
    }
    if (!e.present && this.#p.dad !== undefined && e.repairCause === undefined) {
      this.#states.set(e, 'tentative');
      await this.#p.dad(e.ip);
      if (!e.desired || this.#stopped) return; // overridden meanwhile
    }
    let repaired = false; // reported as extip.repaired, not assigned again
    if (!e.present) {
      e.flags = undefined; // from here on, set only by events about this add
      const r = await this.#p.ops.add(e.ip);
      this.#touch(e, true);
      e.prefixlen = hostLen(e.ip);
      // A recreated holder is counted once, by its owner; a lost address here.
      if (r === 'added' && e.repairCause === 'address') this.#p.metrics.repaired('address');
      if (r === 'added' && e.repairCause !== undefined) {
        repaired = true;
        this.#p.events?.emit(
          'extip.repaired',
          `${e.ip.address} put back on the holder (${e.repairCause === 'address' ? 'someone removed it' : 'the holder device was recreated'})`,
          { ip: e.ip.address, cause: e.repairCause },
        );
      }
      e.repairCause = undefined;
    }
    if (e.state === 'assigned') return;
    const tentative = e.flags !== undefined && (e.flags & IFA_F_TENTATIVE) !== 0;
    if (e.ip.family === 6 && tentative)
      await waitTentative(e, this.#p.clock, () => this.#states.set(e, 'tentative'));
    if (!e.desired) return; // overridden meanwhile: the next round removes it
    this.#states.set(e, 'assigned', repaired);
    e.lastError = undefined;
    e.conflict = undefined;
    const err = this.#p.announcer.add(e.ip, 'assign');
    if (err !== undefined) e.lastError = `announce: ${describeError(err)}`;
  }

  async #stepRemove(e: Entry): Promise<void> {
    this.#p.announcer.remove(e.ip.address);
    if (e.present) {
      this.#states.set(e, 'removing');
      const r = await this.#p.ops.del(e.ip, e.prefixlen);
      this.#touch(e, false);
      if (r === 'deleted' && e.foreign) this.#p.metrics.repaired('foreign');
    }
    e.foreign = false;
    this.#states.set(e, 'pending');
  }

  /** Records what a kernel call of ours made true. */
  #touch(e: Entry, present: boolean): void {
    e.present = present;
    e.epoch = ++this.#epoch;
    if (!present) {
      e.flags = undefined;
      this.#removedAt.set(e.ip.address, e.epoch);
    }
  }

  #settle(e: Entry, gen: number, want: boolean, err: Error | undefined): void {
    if (err !== undefined) {
      const again = e.lastError === describeError(err);
      e.lastError = describeError(err);
      e.conflict =
        err instanceof DuplicateAddressError ? { mac: err.mac, what: err.what } : undefined;
      this.#p.metrics.error(want ? 'assign' : 'unassign');
      if (want) this.#states.set(e, 'failed');
      // a retry that fails the same way (every periodic check) is no news
      this.#p.log[again ? 'debug' : 'warn'](
        { ip: e.ip.address, err: e.lastError, conflict: e.conflict },
        `extip: ${want ? 'assign' : 'unassign'} failed`,
      );
    }
    if (e.waiters.length === 0) return;
    const keep: Waiter[] = [];
    for (const w of e.waiters) {
      if (w.gen > gen) keep.push(w);
      else w.batch.settle(e.ip.address, err !== undefined && w.want === want ? err : undefined);
    }
    e.waiters = keep;
  }

  // --- what the kernel says ---------------------------------------------------------------

  /**
   * Start-up, from the first dump of the holder: the addresses already there become ours
   * (adopted, kept, announced), until setDesired() says otherwise.
   */
  adopt(addrs: readonly ObservedAddress[]): void {
    for (const a of addrs) {
      const e = this.#entry(a.ip);
      if (e.desired || e.present) continue;
      e.desired = true;
      e.adopted = true;
      e.present = true;
      e.prefixlen = a.prefixlen;
      e.flags = a.flags;
      this.#adoptState(e);
    }
  }

  #adoptState(e: Entry): void {
    const f = e.flags ?? 0;
    if ((f & IFA_F_DADFAILED) !== 0) {
      this.#states.set(e, 'failed');
      e.lastError = dadFailed(e.ip).message;
    } else if ((f & IFA_F_TENTATIVE) !== 0) {
      void this.#drive(e); // waits for DAD (or its timeout), then announces
    } else {
      this.#states.set(e, 'assigned');
      const err = this.#p.announcer.add(e.ip, 'start');
      if (err !== undefined) e.lastError = `announce: ${describeError(err)}`;
    }
  }

  /** An address event on the holder (RTM_NEWADDR / RTM_DELADDR). */
  onAddress(kind: 'new' | 'del', a: ObservedAddress): void {
    if (this.#stopped) return;
    if (kind === 'del') return this.#onGone(a.ip);
    let e = this.#entries.get(a.ip.address);
    if (e === undefined) {
      e = this.#entry(a.ip);
      e.foreign = true;
    }
    e.present = true;
    e.prefixlen = a.prefixlen;
    e.flags = a.flags;
    const dadFailedNow = (a.flags & IFA_F_DADFAILED) !== 0;
    if (dadFailedNow) finishTentative(e, () => dadFailed(a.ip));
    else if ((a.flags & IFA_F_TENTATIVE) === 0) finishTentative(e);
    if (!e.desired) {
      if (this.#loaded) this.#removeForeign(e);
    } else if (e.state === 'failed' && !dadFailedNow && !e.running) {
      void this.#drive(e); // someone added it back: finish the assignment
    }
  }

  #onGone(ip: ParsedIp): void {
    const e = this.#entries.get(ip.address);
    if (e === undefined || !e.present) return;
    e.present = false;
    e.flags = undefined;
    finishTentative(e, () => new FibkeeperError(`${ip.address} was removed during DAD`));
    if (e.desired) {
      e.repairCause ??= 'address';
      this.#p.log.debug({ ip: ip.address }, 'extip: address removed from the holder; re-adding');
      void this.#drive(e);
    } else {
      this.#forgetIfIdle(e);
    }
  }

  /** An address nobody asked for, on the holder after the desired set is loaded: removed. */
  #removeForeign(e: Entry): void {
    if (!e.running) {
      this.#p.log.info(
        { ip: e.ip.address },
        'extip: removing an undesired address from the holder',
      );
    }
    void this.#drive(e);
  }

  /** The current epoch: pass it to reconcile() with a dump requested after reading it. */
  epoch(): number {
    return this.#epoch;
  }

  /**
   * A full view of the holder's addresses (periodic check, or after lost notifications),
   * from a dump requested at `since` = epoch(): whatever differs from what the assigner
   * believes is fixed; failed IPs are retried. IPs we changed after `since` are skipped.
   */
  reconcile(addrs: readonly ObservedAddress[], since: number): void {
    if (this.#stopped) return;
    const seen = new Map<string, ObservedAddress>();
    for (const a of addrs) seen.set(a.ip.address, a);
    for (const e of [...this.#entries.values()]) {
      if (e.running || e.epoch > since) continue; // newer than the dump
      const a = seen.get(e.ip.address);
      if (a === undefined) {
        if (e.present) this.#onGone(e.ip);
        else if (e.desired) void this.#drive(e); // failed earlier: retry
      } else if (e.desired && e.state === 'failed') {
        e.present = true;
        e.flags = a.flags;
        void this.#drive(e);
      }
    }
    for (const a of seen.values()) {
      const e = this.#entries.get(a.ip.address);
      const removed = this.#removedAt.get(a.ip.address);
      if (removed !== undefined && removed > since) continue;
      if (e === undefined || (!e.present && !e.running && e.epoch <= since)) {
        this.onAddress('new', a);
      }
    }
    for (const [ip, ep] of this.#removedAt) if (ep <= since) this.#removedAt.delete(ip);
  }

  /**
   * The holder device is gone, and every address with it; each desired one is re-added as
   * soon as the holder is back (HolderOps.add waits for it). Call holderBack() once it is.
   */
  holderLost(): void {
    for (const e of [...this.#entries.values()]) {
      const was = e.present;
      e.present = false;
      e.flags = undefined;
      if (e.desired) {
        if (was) e.repairCause = 'holder'; // one never added (failed, probing) is not repaired
        void this.#drive(e);
      } else {
        this.#forgetIfIdle(e);
      }
    }
  }

  /** The holder is back: retries whatever failed meanwhile. */
  holderBack(): void {
    for (const e of this.#entries.values()) if (e.desired && !e.present) void this.#drive(e);
  }

  /** Tries every failed IP again (the external interface came up: probes can go out). */
  retryFailed(): void {
    for (const e of this.#entries.values()) {
      if (e.desired && e.state === 'failed' && !e.running) void this.#drive(e);
    }
  }

  // --- reading ------------------------------------------------------------------------------

  list(): ExternalIpStatus[] {
    const out: ExternalIpStatus[] = [];
    for (const e of this.#entries.values()) {
      if (!e.desired && e.state !== 'removing') continue;
      out.push({
        ip: e.ip.address,
        family: e.ip.family,
        state: e.state,
        adopted: e.adopted,
        announcedAt: this.#p.announcer.announcedAt(e.ip.address),
        lastError: e.lastError,
        conflict: e.conflict,
      });
    }
    return out;
  }

  /** Desired IPs (canonical text). */
  desired(): ParsedIp[] {
    const out: ParsedIp[] = [];
    for (const e of this.#entries.values()) if (e.desired) out.push(e.ip);
    return out;
  }

  /** Desired and assigned (on the holder, usable): we answer for it and defend it. */
  isAssigned(ip: string): boolean {
    const e = this.#entries.get(ip);
    return e !== undefined && e.desired && e.state === 'assigned';
  }

  counts(): { assigned: number; failed: number; pending: number } {
    let failed = 0;
    let pending = 0;
    for (const e of this.#entries.values()) {
      if (!e.desired) continue;
      if (e.state === 'failed') failed++;
      else if (e.state !== 'assigned') pending++;
    }
    return { assigned: this.#states.assigned, failed, pending };
  }

  /** Settles nothing further; pending requests are rejected with ClosedError. Idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    const err = stoppedError();
    for (const e of this.#entries.values()) {
      finishTentative(e, () => err);
      for (const w of e.waiters) w.batch.settle(e.ip.address, err);
      e.waiters = [];
    }
  }
}
