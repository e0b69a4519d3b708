// NetlinkHandle: the rtnetlink calls of one network namespace over one request socket,
// plus subscriptions on sockets of their own. The namespace is an option of the handle,
// never process-wide state.
import { describeError, InvalidArgumentError } from '../errors/index.js';
import { NetlinkSocket, type NetlinkSocketOptions } from '../native/index.js';
import { systemClock, type Clock } from '../sched/index.js';
import { stripUndefined } from '../util/index.js';
import type { Address, Link, Neigh, NetlinkError, Route, Rule, TcObject } from './codec/index.js';
import * as addr from './calls-addr.js';
import * as link from './calls-link.js';
import * as neigh from './calls-neigh.js';
import * as route from './calls-route.js';
import * as rule from './calls-rule.js';
import * as tc from './calls-tc.js';
import { Client, type ClientStats, type Transport } from './client.js';
import { defaultHealth, SocketHealth, type HealthParams, type SocketName } from './health.js';
import {
  groupNumbers,
  Subscription,
  type GroupName,
  type SubscriptionHandlers,
} from './subscription.js';

export interface NetlinkHandleOptions {
  /** Network namespace: a name under /run/netns or an absolute path. Default: the caller's. */
  netns?: string;
  /** Receive buffer of the request socket, bytes (SO_RCVBUFFORCE; the kernel doubles it). */
  rcvbuf?: number;
  /** Send buffer, bytes (SO_SNDBUFFORCE). */
  sndbuf?: number;
  /** Most bulk requests unanswered at once (further bounded by the receive buffer). */
  window?: number;
  /** Most bytes per sendmsg in bulk calls. */
  maxSendBytes?: number;
  /** How often a dump flagged NLM_F_DUMP_INTR is tried before DumpInterruptedError. */
  dumpAttempts?: number;
  /** A request that hears nothing from the kernel for this long fails (TimeoutError); 0 = never. */
  timeoutMs?: number;
  /** Opens the sockets; tests pass a fake. Default: the native NetlinkSocket. */
  openSocket?: (opts: NetlinkSocketOptions) => Transport & { setReceiveBuffer?(n: number): number };
  /**
   * Probe the sockets and reopen those that stop answering (health.ts); the agent's handle
   * does, with the defaults of defaultHealth() unless given. Off by default (CLI commands).
   */
  health?: Partial<Omit<HealthParams, 'clock'>> | false;
  /** The prober's clock; default the process clock. */
  clock?: Clock;
  /**
   * A socket was closed and opened afresh after `cause` (an errno name; ETIMEDOUT: it
   * stopped answering), or could not be (`err`). For the agent's log and
   * fibkeeper_socket_reopens_total.
   */
  onReopen?: (socket: SocketName, cause: string, err?: unknown) => void;
}

/**
 * Receive-buffer bytes budgeted per unanswered request. Each reply is one skb; its
 * truesize was 832 bytes for acks, errors with an ext-ack text and route-get answers on
 * 6.18 (test/netlink/errors.netns.test.ts checks the budget holds). An ack that does not
 * fit is dropped (ENOBUFS), so the window is rcvbuf / REPLY_BUDGET at most.
 */
export const REPLY_BUDGET = 2048;

export function defaultOptions(): Required<
  Omit<NetlinkHandleOptions, 'netns' | 'openSocket' | 'health' | 'clock' | 'onReopen'>
> {
  return {
    // 8 MiB requested, 16 MiB effective: 8192 replies in flight; only used while queued.
    rcvbuf: 8 << 20,
    // Big enough that a whole batch of maxSendBytes always fits in one datagram.
    sndbuf: 4 << 20,
    // 4096 requests in flight: sendmsg calls of ~256 KiB (≈4000 neighbor entries) each.
    window: 4096,
    // 256 KiB per sendmsg: one allocation in the kernel, well inside sndbuf.
    maxSendBytes: 256 << 10,
    // A busy table may change during a dump; 10 tries, then a typed error.
    dumpAttempts: 10,
    // Long enough for a 100,000-entry dump on a slow machine.
    timeoutMs: 30_000,
  };
}

function checkPositive(name: string, v: number | undefined, min = 1): void {
  if (v !== undefined && (!Number.isInteger(v) || v < min)) {
    throw new InvalidArgumentError(`netlink option ${name} must be an integer >= ${min}, got ${v}`);
  }
}

function nativeOpen(opts: NetlinkSocketOptions): NetlinkSocket {
  return NetlinkSocket.open(opts);
}

type Opener = NonNullable<NetlinkHandleOptions['openSocket']>;

/**
 * The request socket: strict checking on (the kernel then filters dumps by ifindex and
 * table); kernels before 4.20 lack it (ENOPROTOOPT), and the calls filter in TypeScript
 * as well, so it is only an optimization.
 */
function openRequestSocket(open: Opener, opts: NetlinkSocketOptions): ReturnType<Opener> {
  const base = { ...opts, extAck: true, capAck: true };
  try {
    return open({ ...base, strictCheck: true });
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ENOPROTOOPT') throw err;
    return open(base);
  }
}

export class NetlinkHandle {
  readonly #client: Client;
  readonly #opts: NetlinkHandleOptions;
  /** Subscriptions opened through this handle and not (yet seen) closed. */
  readonly #subscriptions = new Set<Subscription>();
  readonly #health: SocketHealth | undefined;
  /** The namespace this handle works in (undefined: the caller's own). */
  readonly netns: string | undefined;

  private constructor(client: Client, opts: NetlinkHandleOptions, health?: SocketHealth) {
    this.#client = client;
    this.#opts = opts;
    this.netns = opts.netns;
    this.#health = health;
    if (health !== undefined) {
      health.watch(client);
      health.start();
    }
  }

  /** Opens the request socket (in `netns` when given). Throws SystemError/InvalidArgumentError. */
  static open(opts: NetlinkHandleOptions = {}): NetlinkHandle {
    checkPositive('rcvbuf', opts.rcvbuf, 4096);
    checkPositive('sndbuf', opts.sndbuf, 4096);
    checkPositive('window', opts.window);
    checkPositive('maxSendBytes', opts.maxSendBytes, 64);
    checkPositive('dumpAttempts', opts.dumpAttempts);
    checkPositive('timeoutMs', opts.timeoutMs, 0);
    const o = { ...defaultOptions(), ...stripUndefined(opts) };
    const open = opts.openSocket ?? nativeOpen;
    const openOne = () => {
      const sock = openRequestSocket(open, { netns: opts.netns, sndbuf: o.sndbuf });
      try {
        return { sock, effective: sock.setReceiveBuffer?.(o.rcvbuf) };
      } catch (err) {
        sock.close();
        throw err;
      }
    };
    const { sock, effective } = openOne();
    const window =
      effective === undefined
        ? o.window
        : Math.max(1, Math.min(o.window, Math.floor(effective / REPLY_BUDGET)));
    const clock = opts.clock ?? systemClock;
    const health =
      opts.health === undefined || opts.health === false
        ? undefined
        : new SocketHealth({ ...defaultHealth(), ...stripUndefined(opts.health), clock });
    let handle: NetlinkHandle | undefined = undefined;
    const client = new Client({
      transport: sock,
      window,
      maxSendBytes: o.maxSendBytes,
      dumpAttempts: o.dumpAttempts,
      timeoutMs: o.timeoutMs,
      reopen: () => openOne().sock,
      reopened: (cause, err) => handle!.#reopened('request', cause, err),
      now: () => clock.now(),
      clock,
    });
    handle = new NetlinkHandle(client, opts, health);
    return handle;
  }

  /** Sockets whose reopen failed, with why; until one of that name is reopened. */
  readonly #broken = new Map<SocketName, string>();

  #reopened(socket: SocketName, cause: string, err: unknown): void {
    if (err === undefined) this.#broken.delete(socket);
    else this.#broken.set(socket, `could not be reopened after ${cause}: ${describeError(err)}`);
    this.#opts.onReopen?.(socket, cause, err);
  }

  /** The effective bulk window (requests in flight). */
  get window(): number {
    return this.#client.params.window;
  }

  get stats(): Readonly<ClientStats> {
    return this.#client.stats;
  }

  get portId(): number {
    return this.#client.portId;
  }

  // --- links ----------------------------------------------------------------------------
  /** linkList — like `ip link show`. */
  linkList(): Promise<Link[]> {
    return link.linkList(this.#client);
  }
  /** linkGet — like `ip link show dev DEV` (ifindex or name); ENODEV when absent. */
  linkGet(dev: link.Dev): Promise<Link> {
    return link.linkGet(this.#client, dev);
  }
  /** linkAdd — like `ip link add NAME ... type KIND [peer name P [netns NS]]`. */
  linkAdd(spec: link.LinkAddSpec): Promise<void> {
    return link.linkAdd(this.#client, spec);
  }
  /** linkDel — like `ip link del DEV`. */
  linkDel(dev: link.Dev): Promise<void> {
    return link.linkDel(this.#client, dev);
  }
  /** linkSet — like `ip link set DEV [up|down] [mtu N] [address MAC] [master M] [name NEW]`. */
  linkSet(dev: link.Dev, changes: link.LinkChanges): Promise<void> {
    return link.linkSet(this.#client, dev, changes);
  }
  /** linkSetUp — like `ip link set DEV up`. */
  linkSetUp(dev: link.Dev): Promise<void> {
    return link.linkSet(this.#client, dev, { up: true });
  }
  /** linkSetDown — like `ip link set DEV down`. */
  linkSetDown(dev: link.Dev): Promise<void> {
    return link.linkSet(this.#client, dev, { up: false });
  }
  /** The ifindex of a device name (`ip link show dev NAME`). */
  async ifindex(name: string): Promise<number> {
    return (await this.linkGet(name)).index;
  }

  // --- addresses ------------------------------------------------------------------------
  /** addrList — like `ip addr show [dev DEV]`. */
  addrList(filter?: { family?: number; ifindex?: number }): Promise<Address[]> {
    return addr.addrList(this.#client, filter);
  }
  /** addrAdd — like `ip addr add ADDR/PLEN dev DEV [nodad]`. */
  addrAdd(spec: addr.AddressSpec): Promise<void> {
    return addr.addrAdd(this.#client, spec);
  }
  /** addrReplace — like `ip addr replace ADDR/PLEN dev DEV [nodad]`. */
  addrReplace(spec: addr.AddressSpec): Promise<void> {
    return addr.addrReplace(this.#client, spec);
  }
  /** addrDel — like `ip addr del ADDR/PLEN dev DEV`. */
  addrDel(spec: addr.AddressSpec): Promise<void> {
    return addr.addrDel(this.#client, spec);
  }

  // --- routes ---------------------------------------------------------------------------
  /** routeList — like `ip route show table all` (or `table N`). */
  routeList(filter?: { family?: number; table?: number }): Promise<Route[]> {
    return route.routeList(this.#client, filter);
  }
  /** routeAdd — like `ip route add ...`. */
  routeAdd(spec: route.RouteSpec): Promise<void> {
    return route.routeAdd(this.#client, spec);
  }
  /** routeReplace — like `ip route replace ...`. */
  routeReplace(spec: route.RouteSpec): Promise<void> {
    return route.routeReplace(this.#client, spec);
  }
  /** routeDel — like `ip route del ...`. */
  routeDel(spec: route.RouteSpec): Promise<void> {
    return route.routeDel(this.#client, spec);
  }
  /** routeGet — like `ip route get DST [oif DEV] [fibmatch]`. */
  routeGet(dst: string, opts?: Omit<route.RouteQuery, 'dst'>): Promise<Route> {
    return route.routeGet(this.#client, dst, opts);
  }
  /** routeGetMany — many `ip route get` in flight at once; a Route or NetlinkError each. */
  routeGetMany(queries: readonly route.RouteQuery[]): Promise<(Route | NetlinkError)[]> {
    return route.routeGetMany(this.#client, queries);
  }

  // --- rules ----------------------------------------------------------------------------
  /** ruleList — like `ip rule show` (or `ip -4 rule` / `ip -6 rule` with a family). */
  ruleList(filter?: { family?: number }): Promise<Rule[]> {
    return rule.ruleList(this.#client, filter);
  }
  /** ruleAdd — like `ip rule add [not] [from P] [to P] [iif D] [oif D] [fwmark M] [pref N] lookup T`. */
  ruleAdd(spec: rule.RuleSpec): Promise<void> {
    return rule.ruleAdd(this.#client, spec);
  }
  /** ruleDel — like `ip rule del [pref N] [selectors...]` (the first rule that matches). */
  ruleDel(spec: rule.RuleSpec): Promise<void> {
    return rule.ruleDel(this.#client, spec);
  }

  // --- traffic control (read only) -----------------------------------------------------
  /** qdiscList — like `tc qdisc show`. */
  qdiscList(): Promise<TcObject[]> {
    return tc.qdiscList(this.#client);
  }
  /** filterList — like `tc filter show dev DEV ingress` (TC_PARENT_INGRESS) or `egress`. */
  filterList(ifindex: number, parent: number): Promise<TcObject[]> {
    return tc.filterList(this.#client, ifindex, parent);
  }

  // --- neighbors ------------------------------------------------------------------------
  /** neighList — like `ip neigh show nud all [dev DEV]`. */
  neighList(filter?: { family?: number; ifindex?: number; proxy?: boolean }): Promise<Neigh[]> {
    return neigh.neighList(this.#client, filter);
  }
  /** neighEach — neighList without an object per entry (see calls-neigh.ts). */
  neighEach(
    each: (n: neigh.NeighFields) => void,
    filter?: { family?: number; ifindex?: number },
    begin?: () => void,
  ): Promise<number> {
    return neigh.neighEach(this.#client, each, filter, begin);
  }
  /** neighGet — like `ip neigh get DST dev DEV`. */
  neighGet(key: Pick<neigh.NeighSpec, 'ifindex' | 'dst'>): Promise<Neigh> {
    return neigh.neighGet(this.#client, key);
  }
  /** neighSet — like `ip neigh replace DST [lladdr MAC] dev DEV nud S [extern_learn] [managed] [protocol P]`. */
  neighSet(spec: neigh.NeighSpec): Promise<void> {
    return neigh.neighSet(this.#client, spec);
  }
  /** neighDel — like `ip neigh del DST dev DEV`. */
  neighDel(key: Pick<neigh.NeighSpec, 'ifindex' | 'dst'>): Promise<void> {
    return neigh.neighDel(this.#client, key);
  }
  /** neighSetMany — `ip -batch` of `neigh replace`, pipelined; failures per entry. */
  neighSetMany(entries: readonly neigh.NeighSpec[]): Promise<neigh.NeighBulkResult> {
    return neigh.neighSetMany(this.#client, entries);
  }
  /** neighDelMany — `ip -batch` of `neigh del`, pipelined; failures per entry. */
  neighDelMany(
    entries: readonly Pick<neigh.NeighSpec, 'ifindex' | 'dst'>[],
  ): Promise<neigh.NeighBulkResult> {
    return neigh.neighDelMany(this.#client, entries);
  }

  // --- subscriptions --------------------------------------------------------------------
  /**
   * Subscribes to change notifications (like `ip monitor`) on a socket of its own in this
   * handle's namespace. Subscribe first, then dump: nothing falls in between.
   */
  subscribe(
    groups: readonly (GroupName | number)[],
    handlers: SubscriptionHandlers,
    opts: { rcvbuf?: number; socket?: SocketName } = {},
  ): Subscription {
    const nums = groupNumbers(groups);
    if (nums.length === 0) throw new InvalidArgumentError('subscribe: no groups');
    checkPositive('rcvbuf', opts.rcvbuf, 1);
    const open = this.#opts.openSocket ?? nativeOpen;
    const openOne = () => open({ netns: this.netns, groups: nums, rcvbuf: opts.rcvbuf ?? 4 << 20 });
    const socket = opts.socket ?? 'link';
    const clock = this.#opts.clock ?? systemClock;
    const sub = new Subscription(openOne(), nums, handlers, {
      socketName: socket,
      reopen: openOne,
      reopened: (cause, err) => this.#reopened(socket, cause, err),
      now: () => clock.now(),
    });
    this.#subscriptions.add(sub);
    this.#health?.watch(sub);
    return sub;
  }

  /**
   * Whether the sockets still work, for a liveness check: the request socket is open and
   * polled, and so is every subscription that was not closed (closing is deliberate; a
   * closed one is forgotten). Overflows and other recoverable errors do not count.
   */
  liveness(): { ok: boolean; reasons: string[] } {
    const reasons: string[] = [...(this.#health?.reasons() ?? [])];
    for (const [name, why] of this.#broken) reasons.push(`netlink: the ${name} socket ${why}`);
    if (this.#client.closed) reasons.push('netlink: the request socket is closed');
    else if (this.#client.stoppedBy) {
      reasons.push(
        `netlink: the request socket stopped receiving (${this.#client.stoppedBy.code})`,
      );
    }
    for (const sub of this.#subscriptions) {
      if (sub.closed) this.#subscriptions.delete(sub);
      else if (sub.stoppedBy) {
        reasons.push(
          `netlink: the subscription to groups ${sub.groups.join(',')} stopped receiving (${sub.stoppedBy.code})`,
        );
      }
    }
    return { ok: reasons.length === 0, reasons };
  }

  /**
   * Probes every socket now (the round the prober runs every intervalMs): for tests, and for
   * a watchdog that wants a fresh answer.
   */
  probeNow(): void {
    this.#health?.round();
  }

  /** Fails pending requests with ClosedError and closes the socket. Idempotent. */
  close(): void {
    this.#health?.stop();
    this.#client.close();
  }
}
