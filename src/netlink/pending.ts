// The client's operations waiting for replies: those answered under one sequence number in a
// map, bulk operations (a range each) in a list; whether any wait (the socket then keeps the
// event loop alive), and the timeout of an operation that hears nothing.
import { TimeoutError } from '../errors/index.js';
import { BulkOp } from './bulk.js';
import type { Op } from './ops.js';
import { Periodic, type Clock } from '../sched/index.js';

export interface PendingParams {
  /** Time of the operations' activity and of the timeout checks. */
  clock: Clock;
  /** An operation that hears nothing for this long fails with TimeoutError (0: never). */
  timeoutMs: number;
  /** The first operation began waiting (busy) or the last one ended (idle). */
  busy(on: boolean): void;
  /** Operations timed out (they were dropped and failed). */
  timedOut(): void;
}

export class PendingOps {
  readonly #p: PendingParams;
  readonly #single = new Map<number, Op>();
  readonly #ranges: Op[] = [];
  #count = 0;
  #checks: Periodic | undefined;

  constructor(p: PendingParams) {
    this.#p = p;
  }

  get count(): number {
    return this.#count;
  }

  add(op: Op): void {
    op.lastActivity = this.#p.clock.now();
    if (isSingle(op)) this.#single.set(op.firstSeq, op);
    else this.#ranges.push(op);
    if (this.#count++ === 0) {
      this.#p.busy(true);
      this.#startTimer();
    }
  }

  /** Forgets `op` (it will not be answered any more); nothing when it is not waiting. */
  drop(op: Op): void {
    if (isSingle(op)) {
      if (this.#single.get(op.firstSeq) !== op) return;
      this.#single.delete(op.firstSeq);
    } else {
      const i = this.#ranges.indexOf(op);
      if (i < 0) return;
      this.#ranges.splice(i, 1);
    }
    if (--this.#count === 0) {
      this.#p.busy(false);
      this.#stopTimer();
    }
  }

  /** The operation a reply with sequence number `seq` belongs to. */
  find(seq: number): Op | undefined {
    const op = this.#single.get(seq);
    if (op) return op;
    for (const r of this.#ranges) if (seq >= r.firstSeq && seq <= r.lastSeq) return r;
    return undefined;
  }

  has(op: Op): boolean {
    return this.#single.get(op.firstSeq) === op || this.#ranges.includes(op);
  }

  all(): Op[] {
    return [...this.#single.values(), ...this.#ranges];
  }

  /** The bulk operations (a copy). */
  ranges(): Op[] {
    return [...this.#ranges];
  }

  /** Forgets every operation and returns them (close). */
  clear(): Op[] {
    const ops = this.all();
    this.#single.clear();
    this.#ranges.length = 0;
    this.#count = 0;
    this.#stopTimer();
    return ops;
  }

  #startTimer(): void {
    const ms = this.#p.timeoutMs;
    if (ms <= 0) return;
    const every = Math.max(10, Math.min(1000, ms / 4));
    this.#checks ??= new Periodic(this.#p.clock, every, () => this.#check(), { unref: true });
    this.#checks.start();
  }

  #stopTimer(): void {
    this.#checks?.stop();
  }

  #check(): void {
    const now = this.#p.clock.now();
    const ms = this.#p.timeoutMs;
    for (const op of this.all()) {
      if (now - op.lastActivity > ms) {
        this.drop(op);
        op.fail(new TimeoutError(`netlink: no reply for ${ms} ms`));
      }
    }
    this.#p.timedOut();
  }
}

/** Ops answered under one sequence number live in a map; bulk operations in a list. */
function isSingle(op: Op): boolean {
  return op.firstSeq === op.lastSeq && !(op instanceof BulkOp);
}
