// Table: an in-memory desired-state table with a primary key, optional secondary indexes, a
// revision per row and per table, change tracking per watcher and initializers. Pure and
// synchronous; only waiting is asynchronous.
//
// Revisions: every write (insert, upsert, modify, delete) takes the next table revision, so
// revisions order all writes of the table. A write(fn) call groups many writes into one
// commit: watchers and waiters are woken once, after fn returns.
//
// Status: each row carries a reconciliation status (pending/done/error) outside the object
// and outside the revision stream. A write of the object resets it to pending; the
// reconciler sets it with setStatus(key, revision, …), which only applies if the row is
// still at that revision and neither bumps the revision nor wakes anyone.
//
// Beside it: watcher.ts (a watcher's place in the changes), initializers.ts (what must finish
// before the table counts as initialized), revlog.ts (the revision log), indexes.ts.
import { ConflictError, InvalidArgumentError } from '../errors/index.js';
import { SecondaryIndexes, type IndexFn } from './indexes.js';
import {
  Node,
  ownNode,
  RevisionLog,
  STATUS_DONE,
  STATUS_ERROR,
  STATUS_PENDING,
  type StatusCode,
} from './revlog.js';
import type { Initializable, Row, RowStatus, StatusKind } from './types.js';
import { Watcher, type ChangeIterator } from './watcher.js';
import { Initializers } from './initializers.js';

export interface TableOptions<Obj> {
  /** Name for logs, errors and the status view. */
  name: string;
  /** The primary key of an object; must not change for the life of the row. */
  primaryKey: (obj: Obj) => string;
  /** Secondary indexes by name; each maps an object to one or several values. Pure. */
  indexes?: Readonly<Record<string, IndexFn<Obj>>>;
  /**
   * When given, an upsert of an object equal to the stored one writes nothing: no new
   * revision, no change for watchers, the status is kept.
   */
  equals?: (a: Obj, b: Obj) => boolean;
  /** Clock for status timestamps, in ms (default Date.now). */
  now?: () => number;
}

/** The write operations; `write(fn)` hands one to fn so that many writes make one commit. */
export interface TableWriter<Obj> {
  /** Adds a row; throws ConflictError if the key exists. */
  insert(obj: Obj): void;
  /** Adds or replaces a row. False when `equals` found the stored object equal (no write). */
  upsert(obj: Obj): boolean;
  /** Removes the row; returns the removed object, or undefined if there was none. */
  delete(key: string): Obj | undefined;
  /**
   * Read-modify-write of one row: fn gets the current object (or undefined) and returns the
   * new one, undefined to delete, or the same object to leave the row untouched. Returns
   * the object now stored.
   */
  modify(key: string, fn: (current: Obj | undefined) => Obj | undefined): Obj | undefined;
}

export type { ChangeIterator } from './watcher.js';

export interface StatusCounts {
  pending: number;
  done: number;
  error: number;
}

const KINDS: readonly StatusKind[] = ['pending', 'done', 'error'];
const CODES: Readonly<Record<StatusKind, StatusCode>> = {
  pending: STATUS_PENDING,
  done: STATUS_DONE,
  error: STATUS_ERROR,
};

export class Table<Obj> implements TableWriter<Obj>, Initializable {
  readonly name: string;
  readonly #primaryKey: (obj: Obj) => string;
  readonly #equals: ((a: Obj, b: Obj) => boolean) | undefined;
  readonly #now: () => number;
  readonly #rowsByKey = new Map<string, Node<Obj>>();
  readonly #log = new RevisionLog<Obj>();
  readonly #indexes: SecondaryIndexes<Obj> | undefined;
  readonly #watchers = new Set<Watcher<Obj>>();
  readonly #counts: [number, number, number] = [0, 0, 0];
  #rev = 0;
  #depth = 0;
  #dirty = false;
  #writeAt = 0;
  /** Waiters for the next commit (waitForChange); an aborted one removes itself. */
  readonly #changeWaiters = new Set<() => void>();
  readonly #init: Initializers;
  #statusOwner: string | undefined = undefined;

  constructor(opts: TableOptions<Obj>) {
    if (!opts.name) throw new InvalidArgumentError('table: name is required');
    this.name = opts.name;
    this.#init = new Initializers(`table ${opts.name}`);
    this.#primaryKey = opts.primaryKey;
    this.#equals = opts.equals;
    this.#now = opts.now ?? Date.now;
    const defs = opts.indexes ?? {};
    this.#indexes = Object.keys(defs).length > 0 ? new SecondaryIndexes(defs) : undefined;
  }

  // ---- reads -------------------------------------------------------------------------

  /** The revision of the last write (0 for a table never written). */
  get revision(): number {
    return this.#rev;
  }

  get size(): number {
    return this.#rowsByKey.size;
  }

  /** Deletions still kept for watchers that have not read them. */
  get retainedDeletions(): number {
    return this.#log.tombstones;
  }

  keyOf(obj: Obj): string {
    return this.#primaryKey(obj);
  }

  get(key: string): Obj | undefined {
    return this.#rowsByKey.get(key)?.object;
  }

  has(key: string): boolean {
    return this.#rowsByKey.has(key);
  }

  /** The row with its revision, or undefined. */
  row(key: string): Row<Obj> | undefined {
    return this.#rowsByKey.get(key);
  }

  /**
   * Whether `row` is the table's current version of its key (`row(row.key) === row`), without
   * a lookup for the rows the table handed out itself.
   */
  isCurrent(row: Row<Obj>): boolean {
    if (row instanceof Node) return !row.superseded && !row.deleted;
    return this.#rowsByKey.get(row.key) === row;
  }

  /** A snapshot of every object, in no particular order. */
  list(): Obj[] {
    const out = new Array<Obj>(this.#rowsByKey.size);
    let i = 0;
    for (const n of this.#rowsByKey.values()) out[i++] = n.object;
    return out;
  }

  /** Live iteration over the rows (safe under concurrent writes, like a Map's). */
  rows(): IterableIterator<Row<Obj>> {
    return this.#rowsByKey.values();
  }

  /** Objects whose index `index` has `value`. Throws InvalidArgumentError for an unknown index. */
  getBy(index: string, value: string): Obj[] {
    if (this.#indexes === undefined || !this.#indexes.has(index)) {
      throw new InvalidArgumentError(`table ${this.name}: no index named ${index}`);
    }
    const out: Obj[] = [];
    for (const key of this.#indexes.lookup(index, value)) {
      const n = this.#rowsByKey.get(key);
      if (n !== undefined) out.push(n.object);
    }
    return out;
  }

  // ---- writes ------------------------------------------------------------------------

  /**
   * Runs fn with a writer and commits once: watchers and waiters wake after fn returns.
   * fn must be synchronous. A throw leaves the writes fn already made in place (they are
   * committed); there is no rollback. Returns the table revision after the commit.
   */
  write(fn: (w: TableWriter<Obj>) => void): number {
    this.#begin();
    try {
      const r: unknown = fn(this);
      if (r instanceof Promise) {
        r.catch(() => undefined);
        throw new InvalidArgumentError(`table ${this.name}: write function must be synchronous`);
      }
    } finally {
      this.#end();
    }
    return this.#rev;
  }

  insert(obj: Obj): void {
    this.#begin();
    try {
      this.#put(this.#primaryKey(obj), obj, true);
    } finally {
      this.#end();
    }
  }

  upsert(obj: Obj): boolean {
    this.#begin();
    try {
      return this.#put(this.#primaryKey(obj), obj, false);
    } finally {
      this.#end();
    }
  }

  delete(key: string): Obj | undefined {
    this.#begin();
    try {
      return this.#remove(key);
    } finally {
      this.#end();
    }
  }

  modify(key: string, fn: (current: Obj | undefined) => Obj | undefined): Obj | undefined {
    this.#begin();
    try {
      const current = this.#rowsByKey.get(key)?.object;
      const next = fn(current);
      if (next === undefined) {
        this.#remove(key);
        return undefined;
      }
      if (next === current) return current;
      const nextKey = this.#primaryKey(next);
      if (nextKey !== key) {
        throw new InvalidArgumentError(
          `table ${this.name}: modify(${key}) returned an object with key ${nextKey}`,
        );
      }
      this.#put(key, next, false);
      return next;
    } finally {
      this.#end();
    }
  }

  #begin(): void {
    if (this.#depth++ === 0) this.#writeAt = this.#now();
  }

  #end(): void {
    if (--this.#depth > 0 || !this.#dirty) return;
    this.#dirty = false;
    if (this.#changeWaiters.size === 0) return;
    const waiters = [...this.#changeWaiters];
    this.#changeWaiters.clear();
    for (const w of waiters) w();
  }

  #put(key: string, obj: Obj, mustBeNew: boolean): boolean {
    const old = this.#rowsByKey.get(key);
    if (old !== undefined) {
      if (mustBeNew) throw new ConflictError(`table ${this.name}: ${key} exists`);
      if (this.#equals !== undefined && this.#equals(old.object, obj)) return false;
    }
    const rev = ++this.#rev;
    const node =
      ownNode(key, obj, rev, this.#writeAt) ?? new Node<Obj>(key, obj, rev, false, this.#writeAt);
    this.#rowsByKey.set(key, node);
    if (old === undefined) {
      this.#indexes?.add(key, obj);
    } else {
      old.superseded = true;
      this.#counts[old.statusKind]--;
      this.#log.unlink(old);
      this.#indexes?.replace(key, old.object, obj);
    }
    this.#counts[STATUS_PENDING]++;
    this.#log.append(node);
    this.#dirty = true;
    return true;
  }

  #remove(key: string): Obj | undefined {
    const old = this.#rowsByKey.get(key);
    if (old === undefined) return undefined;
    this.#rowsByKey.delete(key);
    old.superseded = true;
    this.#counts[old.statusKind]--;
    this.#log.unlink(old);
    this.#indexes?.remove(key, old.object);
    const rev = ++this.#rev;
    // Without watchers nobody needs the deletion: a watcher registered later starts from
    // the live rows.
    if (this.#watchers.size > 0) {
      this.#log.appendTombstone(new Node<Obj>(key, old.object, rev, true, this.#writeAt));
    }
    this.#dirty = true;
    return old.object;
  }

  // ---- changes -----------------------------------------------------------------------

  /** Registers a watcher; its first read returns every live row. */
  changes(): ChangeIterator<Obj> {
    const w = new Watcher<Obj>(this, this.#log, (x) => this.#releaseWatcher(x), this.#rev);
    this.#watchers.add(w);
    return w;
  }

  /** Resolves on the first commit that takes the table revision above `rev`. */
  async waitForChange(rev: number, signal?: AbortSignal): Promise<void> {
    while (this.#rev <= rev) await this.#nextCommit(signal);
  }

  /**
   * Resolves at the next commit; rejects with the signal's reason if it aborts first. An
   * aborted wait leaves nothing behind (a reconciler waits once per round, and rounds can
   * come a thousand times a second while nothing is committed).
   */
  #nextCommit(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.#changeWaiters.delete(done);
        reject(signal?.reason);
      };
      this.#changeWaiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Pending waitForChange calls (for tests: an aborted one must not stay). */
  get changeWaitersCount(): number {
    return this.#changeWaiters.size;
  }

  /** Called after a watcher read or closed: drop tombstones every watcher has seen. */
  #releaseWatcher(w: Watcher<Obj>): void {
    if (w.closed) this.#watchers.delete(w);
    if (this.#log.tombstones === 0) return;
    let min = this.#rev;
    for (const x of this.#watchers) min = Math.min(min, x.seen);
    this.#log.collect(min);
  }

  // ---- initialization ----------------------------------------------------------------

  /**
   * Registers something that must finish before the table counts as initialized (the first
   * dump, a config load). Register every initializer before consumers start: once the
   * last one has finished, the table stays initialized and registering throws. Returns
   * the (idempotent) done function.
   */
  registerInitializer(name: string): () => void {
    return this.#init.register(name);
  }

  /** True when no registered initializer is pending (a table without any is initialized). */
  get initialized(): boolean {
    return this.#init.done;
  }

  pendingInitializers(): string[] {
    return this.#init.pending();
  }

  waitInitialized(signal?: AbortSignal): Promise<void> {
    return this.#init.wait(signal);
  }

  // ---- reconciliation status ---------------------------------------------------------

  /**
   * Reserves the status column for one writer (a reconciler); a second claim by another
   * owner throws ConflictError, since two reconcilers would overwrite each other's status.
   */
  claimStatus(owner: string): void {
    if (this.#statusOwner !== undefined && this.#statusOwner !== owner) {
      throw new ConflictError(
        `table ${this.name}: status already written by ${this.#statusOwner}, not ${owner}`,
      );
    }
    this.#statusOwner = owner;
  }

  status(key: string): RowStatus | undefined {
    const n = this.#rowsByKey.get(key);
    if (n === undefined) return undefined;
    const kind = KINDS[n.statusKind] as StatusKind;
    return n.statusError === undefined
      ? { kind, updatedAt: n.statusAt }
      : { kind, error: n.statusError, updatedAt: n.statusAt };
  }

  /**
   * Sets a row's status if the row is still at `revision` (a result for an older version
   * never lands on a newer one). Not a write: no revision, no wake-up. `updatedAt` defaults
   * to the table clock. Returns whether the status was applied.
   */
  setStatus(
    key: string,
    revision: number,
    status: { kind: StatusKind; error?: string; updatedAt?: number },
  ): boolean {
    const n = this.#rowsByKey.get(key);
    if (n === undefined || n.revision !== revision) return false;
    this.#applyStatus(n, status);
    return true;
  }

  /**
   * setStatus(row.key, row.revision, status) for a row the table handed out (a change or a
   * row): applies only while it is the current version, without a lookup.
   */
  setRowStatus(
    row: Row<Obj>,
    status: { kind: StatusKind; error?: string; updatedAt?: number },
  ): boolean {
    if (!(row instanceof Node)) return this.setStatus(row.key, row.revision, status);
    if (row.superseded || row.deleted) return false;
    this.#applyStatus(row, status);
    return true;
  }

  #applyStatus(
    n: Node<Obj>,
    status: { kind: StatusKind; error?: string; updatedAt?: number },
  ): void {
    const code = CODES[status.kind];
    this.#counts[n.statusKind]--;
    this.#counts[code]++;
    n.statusKind = code;
    n.statusError = code === STATUS_ERROR ? (status.error ?? 'unknown error') : undefined;
    n.statusAt = status.updatedAt ?? this.#now();
  }

  statusCounts(): StatusCounts {
    const [pending, done, error] = this.#counts;
    return { pending, done, error };
  }
}
