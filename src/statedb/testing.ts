// Test double for reconciler tests (used only by statedb's *.test.ts): a target held in a Map,
// a "faulty" switch (all operations fail) and per-key failures, and an operation history in
// the form "update(10.0.0.2) fail".
import { afterEach, beforeEach, vi } from 'vitest';
import type { BatchResult, Operations } from './ops.js';
import type { ReconcilerConfig } from './config.js';
import { Reconciler, type ReconcilerParams } from './reconciler.js';
import { Table } from './table.js';

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

// --- the reconciler tests' setup (reconciler.test.ts, reconciler-batches.test.ts) ----------

/** The row the reconciler tests keep: an IP, and a MAC some of them set. */
export interface IpEntry {
  ip: string;
  mac?: string;
}

export const ipKeyOf = (e: IpEntry): string => e.ip;

export function ipTable(name = 'ips'): Table<IpEntry> {
  return new Table<IpEntry>({ name, primaryKey: ipKeyOf });
}

export interface ReconcilerSetup {
  table: Table<IpEntry>;
  ops: FakeOps<IpEntry>;
  r: Reconciler<IpEntry>;
}

/** Row statuses as "key:kind", sorted. */
export function statuses(table: Table<IpEntry>): string[] {
  return [...table.rows()].map((row) => `${row.key}:${table.status(row.key)?.kind}`).sort();
}

export function insert(table: Table<IpEntry>, ...ips: string[]): void {
  table.write((w) => {
    for (const ip of ips) w.upsert({ ip });
  });
}

/**
 * Fake timers from 0 around each test of the calling file, and reconcilers that stop after
 * it: setup() makes one over a fresh table (or extra.table) and FakeOps; advance() moves the
 * fake time and waits for the reconciler to be idle.
 */
export function reconcilerHarness(): {
  setup: (
    config?: Partial<ReconcilerConfig>,
    extra?: Partial<ReconcilerParams<IpEntry>>,
    ops?: FakeOps<IpEntry>,
  ) => ReconcilerSetup;
  advance: (r: Reconciler<IpEntry>, ms: number) => Promise<void>;
} {
  const running: Reconciler<IpEntry>[] = [];
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    vi.useRealTimers();
  });
  return {
    setup(config = {}, extra = {}, ops = new FakeOps(ipKeyOf)) {
      const table = extra.table ?? ipTable();
      const r = new Reconciler<IpEntry>({ table, ops, config, ...extra });
      running.push(r);
      return { table, ops, r };
    },
    async advance(r, ms) {
      await vi.advanceTimersByTimeAsync(ms);
      await r.waitIdle();
    },
  };
}
