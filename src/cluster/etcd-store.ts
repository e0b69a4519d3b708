// ClusterStore over a real etcd v3, through the npm client `etcd3` (gRPC via @grpc/grpc-js).
// Only its low-level RPC clients are used: the high-level Lease renews on its own timer
// and times keep-alives by their answers (Date.now() on arrival), which cannot prove a
// lease valid; here every keep-alive is one request whose send time the caller records.
//
// Failure handling is ours, not the client's: etcd3's default circuit breaker refuses
// every call for 5 s after three failures (longer than a lease), so it is replaced by
// cockatiel's no-op policy; each unary call carries a gRPC deadline; a keep-alive that
// times out resets the connection (a black-holed TCP connection is never noticed by
// gRPC on its own within a lease TTL; etcd refuses client pings more often than 5 s).
// With several endpoints the store talks to one member at a time and moves to the next on
// a timeout or an unavailable member (etcd3's pool would pick a member at random for every
// call and stream, the cut-off one again as likely as not).
//
// `etcd3` and its gRPC stack (~35 MiB of RSS once loaded) are required when the first store
// is built, so an agent without cluster mode never loads them.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { noop } from 'cockatiel';
import type {
  Etcd3,
  IDuplexStream,
  ILeaseKeepAliveRequest,
  ILeaseKeepAliveResponse,
  IOptions,
  IWatchRequest,
  IWatchResponse,
} from 'etcd3';
import { ClosedError, TimeoutError } from '../errors/index.js';
import { monotonicClock, Timer, type Clock } from '../sched/index.js';
import {
  CompactedError,
  prefixEnd,
  type ClusterStore,
  type StoredKv,
  type WatchEvent,
  type WatchHandle,
  type WatchHandlers,
} from './store.js';

export interface EtcdStoreOptions {
  /** host:port or http(s)://host:port of each etcd member. */
  endpoints: readonly string[];
  /** Times the keep-alives; default the monotonic clock. */
  clock?: Clock;
  /** Deadline of each request in ms. */
  requestTimeoutMs: number;
  /**
   * How long a keep-alive may go unanswered before the stream is reset (and the next
   * endpoint tried), ms; default requestTimeoutMs.
   */
  keepAliveTimeoutMs?: number;
  /** PEM files for TLS (ca alone: server-verified TLS; with cert+key: client certificates). */
  tls?: { ca: string; cert?: string; key?: string };
}

type KeepAliveStream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

interface PendingKeepAlive {
  resolve(ttl: number): void;
  reject(err: Error): void;
  timer: Timer;
}

function buildClient(o: EtcdStoreOptions, endpoint: string): Etcd3 {
  const options: IOptions = {
    hosts: [endpoint],
    dialTimeout: o.requestTimeoutMs,
    faultHandling: { host: () => noop, global: noop },
    grpcOptions: {
      'grpc.initial_reconnect_backoff_ms': 50,
      'grpc.min_reconnect_backoff_ms': 50,
      'grpc.max_reconnect_backoff_ms': 500,
    },
  };
  if (o.tls) {
    options.credentials = {
      rootCertificate: readFileSync(o.tls.ca),
      ...(o.tls.cert ? { certChain: readFileSync(o.tls.cert) } : {}),
      ...(o.tls.key ? { privateKey: readFileSync(o.tls.key) } : {}),
    };
  }
  const { Etcd3: Client } = createRequire(import.meta.url)('etcd3') as typeof import('etcd3');
  return new Client(options);
}

function kvOf(kv: {
  key: Buffer;
  value: Buffer;
  lease: string;
  create_revision: string;
  mod_revision: string;
}): StoredKv {
  return {
    key: kv.key.toString(),
    value: kv.value.toString(),
    lease: String(kv.lease ?? '0'),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
  };
}

export class EtcdStore implements ClusterStore {
  readonly #opts: EtcdStoreOptions;
  readonly #clock: Clock;
  #client: Etcd3;
  #current = 0;
  #closed = false;
  #ka: KeepAliveStream | undefined;
  #kaOpening: Promise<KeepAliveStream> | undefined;
  readonly #kaPending: PendingKeepAlive[] = [];
  /** Stops the call of every open watch (close() ends them all). */
  readonly #watches = new Set<() => void>();

  constructor(options: EtcdStoreOptions) {
    this.#opts = options;
    this.#clock = options.clock ?? monotonicClock;
    if (options.endpoints.length === 0) throw new Error('etcd store: no endpoints');
    this.#client = buildClient(options, options.endpoints[0]!);
  }

  get #kaTimeout(): number {
    return this.#opts.keepAliveTimeoutMs ?? this.#opts.requestTimeoutMs;
  }

  #deadline(): { deadline: Date } {
    if (this.#closed) throw new ClosedError('etcd store closed');
    return { deadline: new Date(Date.now() + this.#opts.requestTimeoutMs) };
  }

  async grantLease(ttlSeconds: number): Promise<{ id: string; ttlSeconds: number }> {
    const res = await this.#unary((c) =>
      c.leaseClient.leaseGrant({ TTL: ttlSeconds, ID: 0 }, this.#deadline()),
    );
    if (res.error) throw new Error(`etcd lease grant: ${res.error}`);
    return { id: String(res.ID), ttlSeconds: Number(res.TTL) };
  }

  keepAlive(id: string): Promise<number> {
    if (this.#closed) return Promise.reject(new ClosedError('etcd store closed'));
    return new Promise<number>((resolve, reject) => {
      const timer = new Timer(this.#clock);
      timer.start(this.#kaTimeout, () => {
        const i = this.#kaPending.indexOf(entry);
        if (i >= 0) this.#kaPending.splice(i, 1);
        // The stream's answers are matched in order: one lost answer breaks the order.
        this.#resetKeepAlive(new TimeoutError('etcd keep-alive stream reset after a timeout'));
        this.#reconnect();
        reject(new TimeoutError(`etcd lease keep-alive: no answer within ${this.#kaTimeout} ms`));
      });
      const entry: PendingKeepAlive = { resolve, reject, timer };
      this.#kaPending.push(entry);
      const client = this.#client;
      this.#keepAliveStream().then(
        (s) => {
          if (this.#kaPending.includes(entry)) s.write({ ID: id });
        },
        (err: Error) => {
          this.#resetKeepAlive(err);
          if (client === this.#client) this.#reconnect(); // that member: the next one
        },
      );
    });
  }

  #keepAliveStream(): Promise<KeepAliveStream> {
    if (this.#ka) return Promise.resolve(this.#ka);
    if (this.#kaOpening) return this.#kaOpening;
    const opening = this.#client.leaseClient.leaseKeepAlive().then((s) => {
      if (this.#kaOpening !== opening) {
        s.end();
        throw new ClosedError('keep-alive stream replaced');
      }
      this.#kaOpening = undefined;
      this.#ka = s;
      s.on('data', (res: ILeaseKeepAliveResponse) => {
        if (this.#ka !== s) return;
        const p = this.#kaPending.shift();
        if (!p) return;
        p.timer.cancel();
        p.resolve(Number(res.TTL));
      });
      const client = this.#client;
      const fail = (err?: Error): void => {
        if (this.#ka !== s) return;
        this.#resetKeepAlive(err ?? new Error('etcd keep-alive stream ended'));
        // The member went away (or closed the stream): talk to the next one.
        if (client === this.#client) this.#reconnect();
      };
      s.on('error', fail);
      s.on('end', () => fail());
      return s;
    });
    this.#kaOpening = opening;
    return opening;
  }

  #resetKeepAlive(err: Error): void {
    const s = this.#ka;
    this.#ka = undefined;
    this.#kaOpening = undefined;
    if (s) {
      s.on('error', () => undefined);
      s.end();
      s.cancel(); // ends the call: a half-closed stream would keep the connection open
    }
    for (const p of this.#kaPending.splice(0)) {
      p.timer.cancel();
      p.reject(err);
    }
  }

  /**
   * Drops every connection and opens new ones, to the next endpoint (open watches end with
   * an error).
   */
  #reconnect(): void {
    if (this.#closed) return;
    const old = this.#client;
    const eps = this.#opts.endpoints;
    this.#current = (this.#current + 1) % eps.length;
    this.#client = buildClient(this.#opts, eps[this.#current]!);
    old.close();
  }

  /** A unary call; a deadline or an unavailable member moves to the next endpoint. */
  async #unary<T>(fn: (c: Etcd3) => Promise<T>): Promise<T> {
    const c = this.#client;
    try {
      return await fn(c);
    } catch (err) {
      const text = String((err as Error)?.message ?? err);
      if (c === this.#client && /deadline|unavailable|ECONNREFUSED|No connection/i.test(text)) {
        this.#resetKeepAlive(new TimeoutError(`etcd: ${text}`));
        this.#reconnect();
      }
      throw err;
    }
  }

  async revokeLease(id: string): Promise<void> {
    try {
      await this.#unary((c) => c.leaseClient.leaseRevoke({ ID: id }, this.#deadline()));
    } catch (err) {
      if (/requested lease not found/.test(String((err as Error).message))) return;
      throw err;
    }
  }

  async getPrefix(prefix: string): Promise<{ revision: number; kvs: StoredKv[] }> {
    const key = Buffer.from(prefix);
    const res = await this.#unary((c) =>
      c.kv.range({ key, range_end: prefixEnd(key) }, this.#deadline()),
    );
    return { revision: Number(res.header.revision), kvs: res.kvs.map(kvOf) };
  }

  async #txnOnLease(
    key: string,
    lease: string,
    op: 'put' | 'delete',
    value = '',
    toLease = lease,
  ): Promise<number> {
    const k = Buffer.from(key);
    const res = await this.#unary((c) =>
      c.kv.txn(
        {
          compare: [{ key: k, target: 'Lease', result: 'Equal', lease }],
          success: [
            op === 'put'
              ? { request_put: { key: k, value: Buffer.from(value), lease: toLease } }
              : { request_delete_range: { key: k } },
          ],
          failure: [],
        },
        this.#deadline(),
      ),
    );
    return res.succeeded ? Number(res.header.revision) : 0;
  }

  async createIfAbsent(key: string, value: string, lease: string): Promise<number> {
    const k = Buffer.from(key);
    const res = await this.#unary((c) =>
      c.kv.txn(
        {
          compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }],
          success: [{ request_put: { key: k, value: Buffer.from(value), lease } }],
          failure: [],
        },
        this.#deadline(),
      ),
    );
    return res.succeeded ? Number(res.header.revision) : 0;
  }

  replaceIfLease(key: string, value: string, lease: string): Promise<number> {
    return this.#txnOnLease(key, lease, 'put', value);
  }

  moveIfLease(key: string, value: string, fromLease: string, toLease: string): Promise<number> {
    return this.#txnOnLease(key, fromLease, 'put', value, toLease);
  }

  deleteIfLease(key: string, lease: string): Promise<number> {
    return this.#txnOnLease(key, lease, 'delete');
  }

  async put(key: string, value: string): Promise<number> {
    const res = await this.#unary((c) =>
      c.kv.put({ key: Buffer.from(key), value: Buffer.from(value) }, this.#deadline()),
    );
    return Number(res.header.revision);
  }

  async delete(key: string): Promise<boolean> {
    const res = await this.#unary((c) =>
      c.kv.deleteRange({ key: Buffer.from(key) }, this.#deadline()),
    );
    return Number(res.deleted) > 0;
  }

  async compact(revision: number): Promise<void> {
    await this.#unary((c) => c.kv.compact({ revision, physical: true }, this.#deadline()));
  }

  watchPrefix(prefix: string, fromRevision: number, handlers: WatchHandlers): WatchHandle {
    let stream: IDuplexStream<IWatchRequest, IWatchResponse> | undefined;
    let done = false;
    // etcd keeps a watch stream that the client only half-closed: cancel the call.
    const stop = (): void => {
      this.#watches.delete(stop);
      if (!stream) return;
      stream.on('error', () => undefined);
      stream.end();
      stream.cancel();
    };
    const end = (err: Error): void => {
      if (done) return;
      done = true;
      stop();
      handlers.onEnd(err);
    };
    this.#watches.add(stop);
    const key = Buffer.from(prefix);
    this.#client.watchClient.watch().then(
      (s) => {
        stream = s;
        if (done) {
          stop();
          return;
        }
        s.on('data', (res: IWatchResponse) => {
          if (done) return;
          if (Number(res.compact_revision) > 0) {
            end(new CompactedError(Number(res.compact_revision)));
            return;
          }
          if (res.canceled) {
            end(new Error(`etcd watch canceled: ${res.cancel_reason || 'no reason given'}`));
            return;
          }
          if (res.events.length === 0) return;
          const events: WatchEvent[] = res.events.map((e) => ({
            type: e.type === 'Delete' ? 'delete' : 'put',
            key: e.kv.key.toString(),
            value: e.type === 'Delete' ? '' : e.kv.value.toString(),
            lease: String(e.kv.lease ?? '0'),
            modRevision: Number(e.kv.mod_revision),
          }));
          handlers.onEvents(events, Number(res.header.revision));
        });
        s.on('error', (err: Error) => end(err));
        s.on('end', () => end(new Error('etcd watch stream ended')));
        s.write({
          create_request: { key, range_end: prefixEnd(key), start_revision: fromRevision },
        });
      },
      (err: Error) => end(err),
    );
    return {
      cancel: () => {
        if (done) return;
        done = true;
        stop();
      },
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#resetKeepAlive(new ClosedError('etcd store closed'));
    this.#closed = true;
    for (const stop of [...this.#watches]) stop();
    this.#client.close();
  }
}
