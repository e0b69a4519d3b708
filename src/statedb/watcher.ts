// A watcher's place in a table's changes (Table.changes()): reads the revision log after its
// position; deletions are kept for it until it has read them.
import { ClosedError } from '../errors/index.js';
import type { RevisionLog } from './revlog.js';
import type { Change } from './types.js';

/**
 * A watcher's place in a table's changes. The first read returns every live row; each later
 * read returns what was written or deleted since the previous read, oldest first. Deletions
 * are kept for a watcher until it has read them, so close() a watcher you no longer read.
 */
export interface ChangeIterator<Obj> {
  /** The table revision up to which this watcher has read. */
  readonly position: number;
  /** Changes since the last read, and advance. */
  read(): Change<Obj>[];
  /** Resolves when the table has a commit after `position`. */
  wait(signal?: AbortSignal): Promise<void>;
  /** Unregisters; the deletions it was holding can then be collected. Idempotent. */
  close(): void;
}

/** What a watcher reads of its table. */
export interface WatchedTable {
  readonly name: string;
  readonly revision: number;
  waitForChange(rev: number, signal?: AbortSignal): Promise<void>;
}

export class Watcher<Obj> implements ChangeIterator<Obj> {
  position: number;
  closed = false;

  readonly #table: WatchedTable;
  readonly #log: RevisionLog<Obj>;
  readonly #release: (w: Watcher<Obj>) => void;
  constructor(
    table: WatchedTable,
    log: RevisionLog<Obj>,
    release: (w: Watcher<Obj>) => void,
    /** Deletions at or below this revision happened before the watcher existed. */
    readonly floor: number,
  ) {
    this.#table = table;
    this.#log = log;
    this.#release = release;
    this.position = 0;
  }

  /** Revision up to which this watcher still needs tombstones. */
  get seen(): number {
    return Math.max(this.position, this.floor);
  }

  read(): Change<Obj>[] {
    if (this.closed) throw new ClosedError(`table ${this.#table.name}: changes read after close`);
    const rev = this.#table.revision;
    if (rev === this.position) return [];
    const out = this.#log.readAfter(this.position, this.floor);
    this.position = rev;
    this.#release(this);
    return out;
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (this.closed) {
      return Promise.reject(new ClosedError(`table ${this.#table.name}: wait after close`));
    }
    return this.#table.waitForChange(this.position, signal);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.#release(this);
  }
}
