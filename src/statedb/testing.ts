// Test double for reconciler tests (used only by statedb's *.test.ts): a target held in a Map,
// a "faulty" switch (all operations fail) and per-key failures, and an operation history in
// the form "update(10.0.0.2) fail".
import type { BatchResult, Operations } from './ops.js';

export class FakeOps<Obj> implements Operations<Obj> {
  /** What the target holds, by key. */
  readonly target = new Map<string, Obj>();
  /** Every operation, oldest first: "update(k) ok", "delete(k) fail", "prune(a,b) ok". */
  readonly history: string[] = [];
  /** Every operation fails while set. */
  faulty = false;
  /** Operations on these keys fail. */
  readonly failKeys = new Set<string>();
  /** Operations in flight. */
  inFlight = 0;
  #gate: Promise<void> | undefined = undefined;
  #callWaiters: (() => void)[] = [];

  constructor(readonly keyOf: (obj: Obj) => string) {}

  /** Returns and clears the history. */
  take(): string[] {
    return this.history.splice(0);
  }

  /** Holds every operation at its start until the returned function is called. */
  hold(): () => void {
    let release!: () => void;
    this.#gate = new Promise<void>((resolve) => (release = resolve));
    return () => {
      this.#gate = undefined;
      release();
    };
  }

  /** Resolves when the next operation starts. */
  nextCall(): Promise<void> {
    return new Promise((resolve) => this.#callWaiters.push(resolve));
  }

  protected async begin(): Promise<void> {
    this.inFlight++;
    const waiters = this.#callWaiters;
    this.#callWaiters = [];
    for (const w of waiters) w();
    if (this.#gate !== undefined) await this.#gate;
  }

  protected fails(key: string): boolean {
    return this.faulty || this.failKeys.has(key);
  }

  protected applyUpdate(obj: Obj): Error | undefined {
    const key = this.keyOf(obj);
    if (this.fails(key)) {
      this.history.push(`update(${key}) fail`);
      return new Error(`update ${key}: injected failure`);
    }
    this.target.set(key, obj);
    this.history.push(`update(${key}) ok`);
    return undefined;
  }

  protected applyDelete(obj: Obj): Error | undefined {
    const key = this.keyOf(obj);
    if (this.fails(key)) {
      this.history.push(`delete(${key}) fail`);
      return new Error(`delete ${key}: injected failure`);
    }
    this.target.delete(key);
    this.history.push(`delete(${key}) ok`);
    return undefined;
  }

  async update(obj: Obj): Promise<void> {
    await this.begin();
    this.inFlight--;
    const err = this.applyUpdate(obj);
    if (err !== undefined) throw err;
  }

  async delete(obj: Obj): Promise<void> {
    await this.begin();
    this.inFlight--;
    const err = this.applyDelete(obj);
    if (err !== undefined) throw err;
  }

  async prune(desired: Iterable<Obj>): Promise<void> {
    await this.begin();
    this.inFlight--;
    const keep = new Set<string>();
    for (const o of desired) keep.add(this.keyOf(o));
    const removed = [...this.target.keys()].filter((k) => !keep.has(k)).sort();
    if (this.faulty) {
      this.history.push(`prune(${removed.join(',')}) fail`);
      throw new Error('prune: injected failure');
    }
    for (const k of removed) this.target.delete(k);
    this.history.push(`prune(${removed.join(',')}) ok`);
  }
}

/** FakeOps with updateBatch/deleteBatch; a batch call is logged as "updateBatch(n)". */
export class FakeBatchOps<Obj> extends FakeOps<Obj> {
  async updateBatch(objs: readonly Obj[]): Promise<BatchResult> {
    await this.begin();
    this.inFlight--;
    this.history.push(`updateBatch(${objs.length})`);
    return objs.map((o) => this.applyUpdate(o));
  }

  async deleteBatch(objs: readonly Obj[]): Promise<BatchResult> {
    await this.begin();
    this.inFlight--;
    this.history.push(`deleteBatch(${objs.length})`);
    return objs.map((o) => this.applyDelete(o));
  }
}
