// The cluster member's wiring list: every part, one sentence each (who owns the table, who
// writes etcd or the wire, which feed it reads), built by wireMember(). member.ts is the
// facade: start/stop, the reconcile that decides what to claim and release, and the hold set
// it publishes from what the parts say.
import type { Logger } from 'pino';
import { describeError } from '../errors/index.js';
import type { Clock } from '../sched/index.js';
import { ActiveHold } from './active.js';
import { ClaimGate, ClaimProber } from './claims.js';
import { HoldPublisher, type HoldReason, type HoldSet } from './hold.js';
import { KeyLayout } from './keys.js';
import { LeaseKeeper, type LeaseChange } from './lease.js';
import type { ClusterMetrics } from './metrics.js';
import type { ClusterOptions } from './options.js';
import { Ownership } from './ownership.js';
import { PeerMonitor, type PeerTransport } from './peers.js';
import { Registration } from './registration.js';
import type { ClusterStore } from './store.js';
import { ViewSync } from './sync.js';
import { Takeover, type Move } from './takeover.js';
import { ClusterView } from './view.js';

export interface MemberParts {
  /** The key names under the cluster prefix (members, desired, owners, fenced, cordon). */
  layout: KeyLayout;
  /** Owns the mirror of the cluster's keys; written by `sync` and by our writes' answers. */
  view: ClusterView;
  /** Reads etcd into the view: one watch on the prefix, a full read after compaction or an outage. */
  sync: ViewSync;
  /** Owns this node's lease: grants, keeps alive and revokes it; proves it by the clock. */
  lease: LeaseKeeper;
  /** Writes this node's member key, bound to each new lease, again when it changes. */
  reg: Registration;
  /** Owns the hold set (the IPs this node may hold now, and until when); calls its listeners. */
  hold: HoldPublisher;
  /** Writes owner keys: claims an IP, hands it over or deletes it on release. */
  ownership: Ownership;
  /** Decides when an unowned IP may be claimed (cool-downs after a fence, DAD conflicts). */
  claims: ClaimGate;
  /** Runs duplicate address detection on the wire before a claim that needs one. */
  prober: ClaimProber;
  /** Hears the peers (UDP heartbeat on the wire); absent without a transport. */
  heard: PeerMonitor | undefined;
  /** Writes the fence and revokes the lease of a dead or silent peer, once the others agree. */
  takeover: Takeover;
  /** Decides the active-active IPs this node holds, and how long a withdrawn one lingers. */
  active: ActiveHold;
}

/** What the parts call back into the member. */
export interface MemberHost {
  onLease(change: LeaseChange): void;
  /** The view changed (sync read or heard something). */
  onViewChange(): void;
  onRegistered(registered: boolean): void;
  /** A peer's promise (or its end) changed. */
  onPeersChange(): void;
  /** Cut off from every peer, or heard again. */
  onIsolated(): void;
  publish(reason: HoldReason): void;
  /** Reconcile again soon. */
  kick(): void;
  later(ms: number, fn: () => void): void;
  backoff(attempt: number): number;
  timed<T>(op: 'get' | 'txn', fn: () => Promise<T>): Promise<T>;
  moves(ips: readonly string[], without: string): Move[];
  memberValue(): string;
  /** etcd has not answered for a while: this node promises its peers. */
  promising(): boolean;
  stopping(): boolean;
}

export interface MemberContext {
  node: string;
  options: ClusterOptions;
  store: ClusterStore;
  clock: Clock;
  metrics: ClusterMetrics;
  log: Logger | undefined;
  peers: PeerTransport | undefined;
  probe: ((ip: string) => Promise<void>) | undefined;
  defer: ((fn: () => void) => void) | undefined;
  onWithdraw: ((ips: readonly string[]) => void) | undefined;
}

/** A claim refused by duplicate address detection is tried again after this, ms. */
const CONFLICT_RETRY_MS = 10_000;

/** Builds every part: the etcd side first, then the peers' side over it. */
export function wireMember(ctx: MemberContext, host: MemberHost): MemberParts {
  const keys = wireKeys(ctx, host);
  const active = new ActiveHold({
    node: ctx.node,
    bgp: ctx.options.bgp,
    lingerMs: ctx.options.withdrawLinger,
    later: (ms, fn) => host.later(ms, fn),
    republish: () => host.publish('sync'),
    ...(ctx.onWithdraw ? { onWithdraw: ctx.onWithdraw } : {}),
  });
  return { ...keys, ...wirePeers(ctx, host, keys), active };
}

type KeyParts = Pick<
  MemberParts,
  'layout' | 'view' | 'sync' | 'lease' | 'reg' | 'hold' | 'ownership'
>;

/** The etcd side: the view and its sync, the lease, the member key, the hold set, owner keys. */
function wireKeys(ctx: MemberContext, host: MemberHost): KeyParts {
  const { options: o, store, clock, metrics, log } = ctx;
  const layout = new KeyLayout(o.prefix);
  const view = new ClusterView(layout);
  const lease = new LeaseKeeper({
    store,
    clock,
    ttlSeconds: o.leaseTTL / 1000,
    renewIntervalMs: o.renewInterval,
    fenceMarginMs: o.fenceMargin,
    retryMinMs: o.retryMinMs,
    retryMaxMs: o.retryMaxMs,
    metrics,
    onChange: (c) => host.onLease(c),
    log: (msg, err) => log?.debug({ err: describeError(err) }, msg),
  });
  const sync = new ViewSync({
    store,
    view,
    prefix: layout.prefix,
    clock,
    metrics,
    retryMinMs: o.retryMinMs,
    retryMaxMs: o.retryMaxMs,
    onChange: () => host.onViewChange(),
    timed: (op, fn) => host.timed(op, fn),
    ...(log ? { log } : {}),
  });
  const empty: HoldSet = { ips: [], deadline: -Infinity, reason: 'start', at: clock.now() };
  const hold = new HoldPublisher(empty, (err) =>
    log?.error({ err: describeError(err) }, 'cluster hold listener failed'),
  );
  const reg = new Registration({
    node: ctx.node,
    store,
    layout,
    view,
    lease,
    clock,
    log,
    value: () => host.memberValue(),
    stopping: () => host.stopping(),
    later: (ms, fn) => host.later(ms, fn),
    backoff: (a) => host.backoff(a),
    timed: (fn) => host.timed('txn', fn),
    onChange: (registered) => host.onRegistered(registered),
  });
  const ownership = new Ownership({
    node: ctx.node,
    store,
    layout,
    view,
    hold,
    clock,
    metrics,
    log,
    retryMinMs: o.retryMinMs,
    timed: (op, fn) => host.timed(op, fn),
    moves: (ips, without) => host.moves(ips, without),
    publish: (reason) => host.publish(reason),
    kick: () => host.kick(),
    later: (ms, fn) => host.later(ms, fn),
  });
  return { layout, view, sync, lease, reg, hold, ownership };
}

/** The peers' side: the heartbeat, the takeover of dead or silent peers, the claim gate. */
function wirePeers(
  ctx: MemberContext,
  host: MemberHost,
  { layout, view, lease, hold }: KeyParts,
): Pick<MemberParts, 'takeover' | 'heard' | 'claims' | 'prober'> {
  const { options: o, store, clock, metrics, log } = ctx;
  let heard: PeerMonitor | undefined;
  const takeover = new Takeover({
    store,
    layout,
    clock,
    // the silent node's fence (TTL − margin) or its grace (a promise lasts as long)
    coolMs: o.leaseTTL - o.fenceMargin + 50,
    log: (msg, fields) => log?.info(fields, msg),
    view,
    metrics,
    mayAct: () => !host.stopping() && lease.mayHold(),
    hearsMostBesides: (node) => heard?.hearsMostBesides(node) ?? false,
    moves: (ips, without) => host.moves(ips, without),
  });
  heard =
    ctx.peers &&
    new PeerMonitor({
      node: ctx.node,
      transport: ctx.peers,
      clock,
      intervalMs: o.heartbeatInterval,
      timeoutMs: o.peerTimeout,
      graceMs: o.leaseTTL - o.fenceMargin,
      local: () => ({
        lease: lease.id,
        promising: host.promising(),
        grace: hold.current.reason === 'grace',
      }),
      events: {
        onDead: (node, l) => takeover.onDead(node, l),
        onSilent: (node, l) => takeover.onSilent(node, l),
        onChange: () => host.onPeersChange(),
        onIsolated: () => host.onIsolated(),
      },
      ...(ctx.defer ? { defer: ctx.defer } : {}),
      log: (msg, fields) => log?.info(fields ?? {}, msg),
    });
  const claims = new ClaimGate({ conflictRetryMs: CONFLICT_RETRY_MS });
  const prober = new ClaimProber({
    gate: claims,
    probe: ctx.probe,
    now: () => clock.now(),
    onConflict: () => metrics.conflict(),
    kick: (ms) => (ms === undefined ? host.kick() : host.later(ms, () => host.kick())),
    retryMs: o.retryMaxMs,
    log,
  });
  return { takeover, heard, claims, prober };
}
