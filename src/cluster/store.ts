// The cluster's view of etcd: the few operations cluster mode needs, as an injected ops
// object. EtcdStore (etcd-store.ts) implements it over a real etcd; FakeStore
// (testing.ts) is an in-memory model with the same semantics for the unit tests.
//
// Semantics every implementation keeps (they are etcd v3's):
//  - Revisions grow by one per write transaction; a key's modRevision is the revision of
//    its last write. A watch from revision R delivers every change with revision ≥ R in
//    order, or ends with CompactedError when R is older than the last compaction.
//  - A lease expires ttl seconds after its last grant or keep-alive *as received by the
//    leader*, never earlier; its keys are deleted in one revision when it expires or is
//    revoked. A keep-alive of an expired or unknown lease answers 0.
//  - Every call either settles within the store's request timeout or rejects.
import { FibkeeperError } from '../errors/index.js';

export interface StoredKv {
  readonly key: string;
  readonly value: string;
  /** Lease ID as a decimal string; '0' for none. */
  readonly lease: string;
  readonly createRevision: number;
  readonly modRevision: number;
}

export interface WatchEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  /** The new value (put); '' for a delete. */
  readonly value: string;
  readonly lease: string;
  readonly modRevision: number;
}

export interface WatchHandlers {
  /** Changes of one revision (or of several, in order); `revision` is the last one's. */
  onEvents(events: readonly WatchEvent[], revision: number): void;
  /**
   * The watch ended and delivers nothing more: CompactedError (the start revision was
   * compacted away: read everything again), or a connection/stream error. Not called after
   * cancel().
   */
  onEnd(err: Error): void;
}

export interface WatchHandle {
  /** Stops the watch. Idempotent. */
  cancel(): void;
}

/** A watch started at a revision that the store has compacted away. */
export class CompactedError extends FibkeeperError {
  readonly compactRevision: number;
  constructor(compactRevision: number) {
    super(
      `etcd: mvcc: required revision has been compacted (compact revision ${compactRevision})`,
      {
        code: 'FIBKEEPER_ERR_NOT_FOUND',
      },
    );
    this.compactRevision = compactRevision;
  }
}

/** The operations cluster mode performs on etcd. Each is one etcd request. */
export interface ClusterStore {
  /** LeaseGrant. Resolves with the ID and the TTL etcd granted (it may raise a short one). */
  grantLease(ttlSeconds: number): Promise<{ id: string; ttlSeconds: number }>;
  /**
   * One keep-alive of a lease: resolves with the TTL (seconds) the lease now has from the
   * moment etcd received the request, or 0 when the lease is gone (expired or revoked).
   */
  keepAlive(id: string): Promise<number>;
  /** LeaseRevoke: deletes the lease's keys. Revoking a lease that is gone is not an error. */
  revokeLease(id: string): Promise<void>;
  /** Every key under `prefix`, and the store revision the read saw. */
  getPrefix(prefix: string): Promise<{ revision: number; kvs: StoredKv[] }>;
  /**
   * Txn: if `key` does not exist, put it (bound to `lease` unless '0'). Resolves with the
   * revision of the write, or 0 when the key existed (nothing written).
   */
  createIfAbsent(key: string, value: string, lease: string): Promise<number>;
  /** Txn: if `key` exists bound to `lease`, put the new value (same lease). Revision or 0. */
  replaceIfLease(key: string, value: string, lease: string): Promise<number>;
  /**
   * Txn: if `key` exists bound to `fromLease`, put `value` bound to `toLease` (another
   * member's: a handover in one write). Revision, or 0 when the key is not bound to
   * `fromLease`; rejects when `toLease` does not exist.
   */
  moveIfLease(key: string, value: string, fromLease: string, toLease: string): Promise<number>;
  /** Txn: if `key` exists bound to `lease`, delete it. Revision of the delete, or 0. */
  deleteIfLease(key: string, lease: string): Promise<number>;
  /** Put without a lease (desired state written by operators). Returns the revision. */
  put(key: string, value: string): Promise<number>;
  /** Delete one key. Resolves false when it did not exist (not an error). */
  delete(key: string): Promise<boolean>;
  /** Watches every key under `prefix` from `fromRevision` on. */
  watchPrefix(prefix: string, fromRevision: number, handlers: WatchHandlers): WatchHandle;
  /** Compacts the history up to `revision` (tests and maintenance). */
  compact(revision: number): Promise<void>;
  /** Closes connections; later calls reject. Idempotent. */
  close(): void;
}

/** The key range end that covers every key starting with `prefix` (etcd's prefix rule). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}
