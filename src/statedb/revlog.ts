// The revision log of a table: every live row and every retained deletion (tombstone) in one
// doubly linked list ordered by revision. A write unlinks the row's old node and appends a
// new one, so "everything after revision r" is a walk back from the tail to r and forward
// again: O(changes), never O(table). Tombstones are also queued in revision order so that
// garbage collection drops them from the front once every watcher has read past them.
import type { Change } from './types.js';

export const STATUS_PENDING = 0;
export const STATUS_DONE = 1;
export const STATUS_ERROR = 2;
export type StatusCode = typeof STATUS_PENDING | typeof STATUS_DONE | typeof STATUS_ERROR;

/**
 * One version of a row (or a tombstone). The identity fields never change after
 * construction; consumers see a node only through the read-only `Change` interface. The
 * status fields belong to the reconciler and are changed in place (see Table.setStatus).
 */
/** Node.#bits: the status code in the low two bits, then the flags. */
const SUPERSEDED = 4;
const DELETED = 8;
/** #at holds the time itself, not its distance from AT_BASE. */
const ABSOLUTE_AT = 16;

/**
 * Status times are kept relative to this (the module's load): milliseconds since then are a
 * small integer for 24 days, where an absolute time (Date.now() is above 2^31) was a heap
 * number of 16 bytes per node (1,000,000 desired rows: 16 MB; docs/neighbor.md, "The fifth
 * pass"). A time that is no whole number of ms from it within that range (a fractional or a
 * test's clock, a run of more than 24 days) is kept as it is.
 */
const AT_BASE = Date.now();

export class Node<Obj> implements Change<Obj> {
  prev: Node<Obj> | undefined = undefined;
  next: Node<Obj> | undefined = undefined;
  statusError: string | undefined = undefined;
  /** statusAt, relative to AT_BASE unless ABSOLUTE_AT. */
  #at = 0;
  /** statusKind | SUPERSEDED | DELETED | ABSOLUTE_AT: one small integer where four fields were (100,000s of nodes). */
  #bits: number;
  // Set once (a row that is its own node: when the table takes it, see RowNode); never
  // changed after that.
  key: string;
  object: Obj;
  revision: number;

  constructor(key: string, object: Obj, revision: number, deleted: boolean, at: number) {
    this.key = key;
    this.object = object;
    this.revision = revision;
    this.#bits = deleted ? DELETED : STATUS_PENDING;
    this.statusAt = at;
  }

  /** When the status was last set (the table's clock). */
  get statusAt(): number {
    return (this.#bits & ABSOLUTE_AT) !== 0 ? this.#at : this.#at + AT_BASE;
  }
  set statusAt(at: number) {
    const d = at - AT_BASE;
    const small = d | 0;
    if (small === d && d + AT_BASE === at) {
      // `small`, not `d`: V8 stores a difference of two doubles as a heap number even when
      // it is whole, an int32 as a small integer.
      this.#at = small;
      this.#bits &= ~ABSOLUTE_AT;
    } else {
      this.#at = at;
      this.#bits |= ABSOLUTE_AT;
    }
  }

  get deleted(): boolean {
    return (this.#bits & DELETED) !== 0;
  }

  /** Replaced by a newer version or deleted: no longer the table's row for its key. */
  get superseded(): boolean {
    return (this.#bits & SUPERSEDED) !== 0;
  }
  set superseded(v: boolean) {
    this.#bits = v ? this.#bits | SUPERSEDED : this.#bits & ~SUPERSEDED;
  }

  get statusKind(): StatusCode {
    return (this.#bits & 3) as StatusCode;
  }
  set statusKind(code: StatusCode) {
    this.#bits = (this.#bits & ~3) | code;
  }
}

/**
 * A base for row objects that are their own revision node: a row that extends RowNode (with
 * `object` the row itself and revision 0) is kept by the table as its node when it is
 * inserted — one object per row where a row and its node were two (a million desired
 * neighbors: 88 bytes each). Such a row is written once: a write of a new version of its key
 * (or of the same object again) gets a node of its own as any other row. Its node fields
 * belong to the table.
 */
export abstract class RowNode<Obj> extends Node<Obj> {
  constructor(key: string) {
    super(key, undefined as unknown as Obj, 0, false, 0);
    this.object = this as unknown as Obj;
  }
}

/** `obj` as its own node for `key` at `revision`, when it is an unused RowNode; else undefined. */
export function ownNode<Obj>(
  key: string,
  obj: Obj,
  revision: number,
  at: number,
): Node<Obj> | undefined {
  if (!(obj instanceof RowNode)) return undefined;
  const n = obj as unknown as Node<Obj>;
  if (n.revision !== 0 || n.object !== obj || n.key !== key || n.superseded) return undefined;
  n.revision = revision;
  n.statusAt = at;
  return n;
}

export class RevisionLog<Obj> {
  #head: Node<Obj> | undefined = undefined;
  #tail: Node<Obj> | undefined = undefined;
  #tombs: (Node<Obj> | undefined)[] = [];
  #tombHead = 0;

  /** Number of deletions retained for watchers that have not read them yet. */
  get tombstones(): number {
    return this.#tombs.length - this.#tombHead;
  }

  /** Appends a node; its revision must be higher than every node already in the log. */
  append(node: Node<Obj>): void {
    node.prev = this.#tail;
    node.next = undefined;
    if (this.#tail === undefined) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
  }

  appendTombstone(node: Node<Obj>): void {
    this.append(node);
    this.#tombs.push(node);
  }

  /** Removes a node; clears its links so a node held elsewhere retains no neighbours. */
  unlink(node: Node<Obj>): void {
    const { prev, next } = node;
    if (prev === undefined) this.#head = next;
    else prev.next = next;
    if (next === undefined) this.#tail = prev;
    else next.prev = prev;
    node.prev = undefined;
    node.next = undefined;
  }

  /**
   * Nodes with a revision above `after`, oldest first. Tombstones at or below `floor` are
   * left out (the reader registered after those deletions and never saw the rows).
   */
  readAfter(after: number, floor: number): Node<Obj>[] {
    let start = this.#head;
    if (start !== undefined && start.revision <= after) {
      // Walk back from the tail to the first node at or below `after`.
      let n = this.#tail;
      while (n !== undefined && n.revision > after) n = n.prev;
      start = n === undefined ? this.#head : n.next;
    }
    const out: Node<Obj>[] = [];
    for (let n = start; n !== undefined; n = n.next) {
      if (n.deleted && n.revision <= floor) continue;
      out.push(n);
    }
    return out;
  }

  /** Drops every tombstone with a revision at or below `upTo`. */
  collect(upTo: number): void {
    const tombs = this.#tombs;
    let i = this.#tombHead;
    while (i < tombs.length) {
      const t = tombs[i];
      if (t === undefined || t.revision > upTo) break;
      this.unlink(t);
      i++;
    }
    if (i === tombs.length) {
      this.#tombs = [];
      this.#tombHead = 0;
    } else if (i > 1024 && i * 2 > tombs.length) {
      this.#tombs = tombs.slice(i);
      this.#tombHead = 0;
    } else {
      // Let the collected nodes go even before the array is compacted.
      tombs.fill(undefined, this.#tombHead, i);
      this.#tombHead = i;
    }
  }
}
