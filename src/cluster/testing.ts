// An in-memory etcd for the root-free tests of cluster mode: revisions, leases that expire
// on a clock (revoked by a loop every `revokeIntervalMs`, as etcd's lessor does), the
// transactions ClusterStore needs, prefix watches with history and compaction, and faults
// (a partitioned client, latency) per client. Several FakeStoreClients share one FakeEtcd.
import { ClosedError, TimeoutError } from '../errors/index.js';
import { FakeClock } from '../sched/testing.js';
import { ClusterAdmin } from './admin.js';
import type { HoldRecord } from './history.js';
import type { HoldSet } from './hold.js';
import { ClusterMember } from './member.js';
import type { ClusterOptions } from './options.js';
import type { PeerTransport, PeerTransportHandlers } from './peers.js';
import { Timer, type Clock } from '../sched/index.js';
import {
  CompactedError,
  type ClusterStore,
  type StoredKv,
  type WatchEvent,
  type WatchHandle,
  type WatchHandlers,
} from './store.js';

interface Entry {
  value: string;
  lease: string;
  createRevision: number;
  modRevision: number;
}

interface Lease {
  ttlSeconds: number;
  expiresAt: number;
}

interface Watcher {
  prefix: string;
  next: number;
  handlers: WatchHandlers;
  client: FakeStoreClient;
}

/** Runs `fn` in `ms` on `clock`; the Timer cancels it. */
function after(clock: Clock, ms: number, fn: () => void): Timer {
  const t = new Timer(clock);
  t.start(ms, fn);
  return t;
}

/** One clock-driven etcd. */
export class FakeEtcd {
  readonly clock: Clock;
  revision = 1;
  compacted = 0;
  readonly data = new Map<string, Entry>();
  readonly leases = new Map<string, Lease>();
  readonly history: { revision: number; events: WatchEvent[] }[] = [];
  readonly watchers = new Set<Watcher>();
  /** Shortest TTL granted (etcd: ceil(1.5 × election timeout)). */
  minTtlSeconds = 1;
  #nextLease = 0x1000;
  readonly #loop: Timer;
  readonly revokeIntervalMs: number;
  /** While true the server answers nothing (everyone's outage). */
  down = false;

  constructor(clock: Clock, opts: { revokeIntervalMs?: number } = {}) {
    this.clock = clock;
    this.#loop = new Timer(clock);
    this.revokeIntervalMs = opts.revokeIntervalMs ?? 500;
    this.#schedule();
  }

  #schedule(): void {
    this.#loop.start(this.revokeIntervalMs, () => {
      this.expireLeases();
      this.#schedule();
    });
  }

  stop(): void {
    this.#loop.cancel();
  }

  /** Revokes every lease whose expiry has passed (etcd's lessor loop). */
  expireLeases(): void {
    if (this.down) return;
    const now = this.clock.now();
    for (const [id, l] of this.leases) if (l.expiresAt <= now) this.revoke(id);
  }

  client(): FakeStoreClient {
    return new FakeStoreClient(this);
  }

  grant(ttlSeconds: number): { id: string; ttlSeconds: number } {
    const ttl = Math.max(this.minTtlSeconds, ttlSeconds);
    const id = String(this.#nextLease++);
    this.leases.set(id, { ttlSeconds: ttl, expiresAt: this.clock.now() + ttl * 1000 });
    return { id, ttlSeconds: ttl };
  }

  renew(id: string): number {
    const l = this.leases.get(id);
    if (!l || l.expiresAt <= this.clock.now()) return 0;
    l.expiresAt = this.clock.now() + l.ttlSeconds * 1000;
    return l.ttlSeconds;
  }

  revoke(id: string): void {
    if (!this.leases.delete(id)) return;
    const events: WatchEvent[] = [];
    const rev = this.revision + 1;
    for (const [key, e] of this.data) {
      if (e.lease !== id) continue;
      this.data.delete(key);
      events.push({ type: 'delete', key, value: '', lease: '0', modRevision: rev });
    }
    if (events.length > 0) this.#commit(events);
  }

  /** Applies one write transaction's events at the next revision. */
  write(
    ops: ({ key: string; value: string; lease: string } | { key: string; del: true })[],
  ): number {
    const rev = this.revision + 1;
    const events: WatchEvent[] = [];
    for (const op of ops) {
      if ('del' in op) {
        if (!this.data.delete(op.key)) continue;
        events.push({ type: 'delete', key: op.key, value: '', lease: '0', modRevision: rev });
      } else {
        const old = this.data.get(op.key);
        this.data.set(op.key, {
          value: op.value,
          lease: op.lease,
          createRevision: old?.createRevision ?? rev,
          modRevision: rev,
        });
        events.push({
          type: 'put',
          key: op.key,
          value: op.value,
          lease: op.lease,
          modRevision: rev,
        });
      }
    }
    if (events.length > 0) this.#commit(events);
    return this.revision;
  }

  #commit(events: WatchEvent[]): void {
    this.revision += 1;
    this.history.push({ revision: this.revision, events });
    for (const w of this.watchers) this.deliver(w);
  }

  deliver(w: Watcher): void {
    if (w.client.partitioned || this.down) return;
    if (w.next <= this.compacted) {
      this.watchers.delete(w);
      const err = new CompactedError(this.compacted);
      queueMicrotask(() => w.handlers.onEnd(err));
      return;
    }
    const batch: WatchEvent[] = [];
    let last = 0;
    for (const h of this.history) {
      if (h.revision < w.next) continue;
      for (const e of h.events) if (e.key.startsWith(w.prefix)) batch.push(e);
      last = h.revision;
    }
    if (last === 0) return;
    w.next = last + 1;
    if (batch.length > 0)
      queueMicrotask(() => this.watchers.has(w) && w.handlers.onEvents(batch, last));
  }

  compact(revision: number): void {
    this.compacted = Math.max(this.compacted, revision);
    while (this.history.length > 0 && this.history[0]!.revision <= revision) this.history.shift();
    for (const w of this.watchers) this.deliver(w);
  }

  /** Ends every watch with an error (a server restart). */
  dropWatches(reason = 'server restarted'): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      queueMicrotask(() => w.handlers.onEnd(new Error(`etcd watch: ${reason}`)));
    }
  }

  /** The server comes back: leases live a TTL (plus `extendMs`) from now, like etcd's Promote. */
  recover(extendMs: number): void {
    this.down = false;
    const now = this.clock.now();
    for (const l of this.leases.values()) l.expiresAt = now + extendMs + l.ttlSeconds * 1000;
    this.dropWatches();
  }

  snapshot(prefix: string): StoredKv[] {
    const out: StoredKv[] = [];
    for (const [key, e] of this.data) if (key.startsWith(prefix)) out.push({ key, ...e });
    return out.sort((a, b) => (a.key < b.key ? -1 : 1));
  }
}

/** One node's connection to a FakeEtcd, with its own faults and an operation log. */
export class FakeStoreClient implements ClusterStore {
  readonly etcd: FakeEtcd;
  /** This client's requests and watches go nowhere (a partition between it and etcd). */
  partitioned = false;
  /** Clock ms a request takes to reach the server, and its answer to come back. */
  latencyMs = 0;
  requestTimeoutMs = 500;
  /** Requests are carried out, but their answers never come back (they time out). */
  loseAnswers = false;
  readonly ops: string[] = [];
  #closed = false;

  constructor(etcd: FakeEtcd) {
    this.etcd = etcd;
  }

  #call<T>(name: string, fn: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new ClosedError('fake store closed'));
    const clock = this.etcd.clock;
    return new Promise<T>((resolve, reject) => {
      const fail = (): void => {
        this.ops.push(`${name} timeout`);
        reject(new TimeoutError(`${name}: no answer within ${this.requestTimeoutMs} ms`));
      };
      if (this.partitioned || this.etcd.down) {
        after(clock, this.requestTimeoutMs, fail);
        return;
      }
      const run = (): void => {
        if (this.partitioned || this.etcd.down) {
          fail();
          return;
        }
        let result: T;
        try {
          result = fn();
        } catch (err) {
          reject(err as Error);
          return;
        }
        this.ops.push(`${name} ok`);
        if (this.loseAnswers) after(clock, this.requestTimeoutMs, fail);
        else if (this.latencyMs > 0) after(clock, this.latencyMs, () => resolve(result));
        else queueMicrotask(() => resolve(result));
      };
      if (this.latencyMs > 0) after(clock, this.latencyMs, run);
      else run();
    });
  }

  grantLease(ttlSeconds: number): Promise<{ id: string; ttlSeconds: number }> {
    return this.#call('grant', () => this.etcd.grant(ttlSeconds));
  }

  keepAlive(id: string): Promise<number> {
    return this.#call(`keepalive ${id}`, () => this.etcd.renew(id));
  }

  revokeLease(id: string): Promise<void> {
    return this.#call(`revoke ${id}`, () => this.etcd.revoke(id));
  }

  getPrefix(prefix: string): Promise<{ revision: number; kvs: StoredKv[] }> {
    return this.#call(`get ${prefix}`, () => ({
      revision: this.etcd.revision,
      kvs: this.etcd.snapshot(prefix),
    }));
  }

  #leaseOk(lease: string): void {
    if (lease !== '0' && !this.etcd.leases.has(lease))
      throw new Error('etcdserver: requested lease not found');
  }

  createIfAbsent(key: string, value: string, lease: string): Promise<number> {
    return this.#call(`create ${key}`, () => {
      if (this.etcd.data.has(key)) return 0;
      this.#leaseOk(lease);
      return this.etcd.write([{ key, value, lease }]);
    });
  }

  replaceIfLease(key: string, value: string, lease: string): Promise<number> {
    return this.#call(`replace ${key}`, () => {
      if (this.etcd.data.get(key)?.lease !== lease) return 0;
      return this.etcd.write([{ key, value, lease }]);
    });
  }

  moveIfLease(key: string, value: string, fromLease: string, toLease: string): Promise<number> {
    return this.#call(`move ${key}`, () => {
      if (this.etcd.data.get(key)?.lease !== fromLease) return 0;
      if (!this.etcd.leases.has(toLease)) throw new Error('etcdserver: requested lease not found');
      return this.etcd.write([{ key, value, lease: toLease }]);
    });
  }

  deleteIfLease(key: string, lease: string): Promise<number> {
    return this.#call(`release ${key}`, () => {
      if (this.etcd.data.get(key)?.lease !== lease) return 0;
      return this.etcd.write([{ key, del: true }]);
    });
  }

  put(key: string, value: string): Promise<number> {
    return this.#call(`put ${key}`, () => this.etcd.write([{ key, value, lease: '0' }]));
  }

  delete(key: string): Promise<boolean> {
    return this.#call(`delete ${key}`, () => {
      const had = this.etcd.data.has(key);
      this.etcd.write([{ key, del: true }]);
      return had;
    });
  }

  compact(revision: number): Promise<void> {
    return this.#call('compact', () => this.etcd.compact(revision));
  }

  watchPrefix(prefix: string, fromRevision: number, handlers: WatchHandlers): WatchHandle {
    const w: Watcher = { prefix, next: fromRevision, handlers, client: this };
    if (this.partitioned || this.etcd.down || this.#closed) {
      const clock = this.etcd.clock;
      const t = after(clock, this.requestTimeoutMs, () =>
        handlers.onEnd(new TimeoutError('watch: no connection')),
      );
      return { cancel: () => t.cancel() };
    }
    this.etcd.watchers.add(w);
    this.etcd.deliver(w);
    return { cancel: () => void this.etcd.watchers.delete(w) };
  }

  /** Cuts (true) or heals (false) this client's path to etcd; cutting ends its watches. */
  setPartitioned(on: boolean): void {
    this.partitioned = on;
    if (!on) return;
    for (const w of [...this.etcd.watchers]) {
      if (w.client !== this) continue;
      this.etcd.watchers.delete(w);
      queueMicrotask(() => w.handlers.onEnd(new Error('watch: connection lost')));
    }
  }

  close(): void {
    this.#closed = true;
    for (const w of [...this.etcd.watchers]) if (w.client === this) this.etcd.watchers.delete(w);
  }
}

/**
 * The segment for the peer heartbeat, in memory: each node's transport sends datagrams that
 * arrive in a microtask. Faults: `kill(node)` (its sockets are gone: the kernel refuses what
 * is sent to it), `cut(node)` (nothing reaches it or leaves it: a lost link, a hung process
 * as seen from outside), `heal(node)`.
 */
export class FakePeerNet {
  readonly #listeners = new Map<string, PeerTransportHandlers>();
  readonly #dead = new Set<string>();
  readonly #cut = new Set<string>();
  readonly #rejecting = new Set<string>();
  #port = 7000;

  transport(node: string): PeerTransport {
    const net = this;
    const local = { ip: `10.9.9.${this.#port - 6999}`, port: this.#port++ };
    const peers = new Map<string, string>(); // node → its address key
    return {
      local,
      open(handlers) {
        net.#listeners.set(node, handlers);
        net.#dead.delete(node);
        return Promise.resolve();
      },
      connect(peer) {
        peers.set(peer, peer);
      },
      disconnect(peer) {
        peers.delete(peer);
      },
      send(peer, msg) {
        if (!peers.has(peer) || net.#dead.has(node)) return;
        queueMicrotask(() => {
          if (net.#cut.has(node) || net.#cut.has(peer)) return;
          const to = net.#listeners.get(peer);
          if (to === undefined || net.#dead.has(peer) || net.#rejecting.has(peer)) {
            net.#listeners.get(node)?.onRefused(peer);
            return;
          }
          to.onMessage(Buffer.from(msg));
        });
      },
      close() {
        if (net.#listeners.get(node) !== undefined) net.#dead.add(node);
        net.#listeners.delete(node);
      },
    };
  }

  /** The node's process died: its port refuses from now on. */
  kill(node: string): void {
    this.#dead.add(node);
    this.#listeners.delete(node);
  }

  cut(node: string): void {
    this.#cut.add(node);
  }

  /** A firewall on the node rejects the heartbeat port: refused, while it goes on sending. */
  reject(node: string): void {
    this.#rejecting.add(node);
  }

  heal(node: string): void {
    this.#cut.delete(node);
  }
}

export interface LabNode {
  name: string;
  store: FakeStoreClient;
  member: ClusterMember;
  /** The hold sets the member handed to its listener. */
  sets: HoldSet[];
  /** The active-active IPs it was told to withdraw, in order. */
  withdrawn: string[][];
}

/**
 * Members named `names` over one FakeEtcd on a FakeClock (rebalanceDelay 0 unless `opts`
 * say), each recording its hold sets; `add` joins another; `stop` ends them all.
 */
export function memberLab(names: string[], opts: Partial<ClusterOptions> = {}) {
  const clock = new FakeClock();
  const etcd = new FakeEtcd(clock);
  const records: HoldRecord[] = [];
  const nodes: LabNode[] = [];
  const add = (name: string, extra: Partial<ClusterOptions> = {}): LabNode => {
    const store = etcd.client();
    const sets: HoldSet[] = [];
    const withdrawn: string[][] = [];
    const member = new ClusterMember({
      store,
      clock,
      options: {
        nodeName: name,
        nodeIPs: [`10.9.0.${nodes.length + 1}`],
        rebalanceDelay: 0,
        ...opts,
        ...extra,
      },
      onHold: (s) => {
        sets.push(s);
        records.push({ node: name, at: clock.now(), ips: s.ips, deadline: s.deadline });
      },
      onWithdraw: (ips) => withdrawn.push([...ips]),
    });
    const n = { name, store, member, sets, withdrawn };
    nodes.push(n);
    return n;
  };
  for (const name of names) add(name);
  const admin = new ClusterAdmin(etcd.client());
  const holders = (ip: string) => nodes.filter((n) => n.member.mayHold(ip)).map((n) => n.name);
  const held = (n: LabNode) => n.member.holdSet().ips;
  const stop = (): void => {
    for (const n of nodes) void n.member.stop();
    etcd.stop();
  };
  return { clock, etcd, nodes, records, admin, add, holders, held, stop };
}
