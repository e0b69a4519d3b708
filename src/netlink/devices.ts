// DeviceFeed: the namespace's links and addresses, kept in step with the kernel by one
// subscription and one dump (feed.ts: subscribe first, dump, replay the held events; a fresh
// socket and a dump after an overflow; an interrupted dump tried again). The neighbor,
// external-IP and XDP subsystems read its snapshot and hear its changes, instead of each
// subscribing and dumping on its own socket. Created and started once per namespace by its
// owner (the agent; a subsystem run alone makes its own), which alone stops it.
import type { Logger } from '../log/index.js';
import { AF_UNSPEC, type Address, type Link, type RawAttr } from './codec/index.js';
import { systemClock, type Clock } from '../sched/index.js';
import { Feed, type FeedReason } from './feed.js';
import type { NetlinkHandle } from './handle.js';

/** Why the feed dumps: its own reasons, or `refresh` (a user asked for a fresh view). */
export type DeviceFeedReason = FeedReason<'refresh'>;

/**
 * What a user of the feed hears. Each callback runs after the snapshot took the change.
 * Exceptions are logged by the feed, never passed on.
 */
export interface DeviceFeedListener {
  /** A dump starts (counted by users that count resyncs). */
  resyncing?(reason: DeviceFeedReason): void;
  /**
   * The snapshot was replaced by a dump (`changed`: it differs from the one before); the
   * events held during the dump follow as link()/address() calls.
   */
  loaded?(reason: DeviceFeedReason, changed: boolean): void;
  link?(kind: 'new' | 'del', link: Link): void;
  address?(kind: 'new' | 'del', address: Address): void;
}

export interface DeviceFeedParams {
  /** The handle whose namespace the feed follows (dumps and the subscription socket). */
  nl: Pick<NetlinkHandle, 'subscribe' | 'linkList' | 'addrList'>;
  log: Logger;
  /** Default: the process timers. */
  clock?: Clock;
  /** Receive buffer of the subscription socket; default 4 MiB. */
  rcvbuf?: number;
  /** Delay before a failed dump is tried again, ms; default 1000. */
  retryMs?: number;
}

type Snapshot = [Link[], Address[]];

/**
 * The identity of an address on a link, as the kernel keys it: local and peer address and
 * prefix length (a second address with another prefix length is another address).
 */
export function addressKey(a: Address): string {
  return `${a.index}|${a.family}|${a.local ?? ''}|${a.address ?? ''}|${a.prefixlen}`;
}

/** Same address of the same link and local address: same peer, prefix length and family. */
function sameAddress(x: Address, a: Address): boolean {
  return x.prefixlen === a.prefixlen && x.address === a.address && x.family === a.family;
}

/**
 * The addresses by link, then by local address: an event costs two lookups of strings the
 * decoder made, no key built (the feed's hot path, one call per address event). The few that
 * share link and local address (another peer or prefix length) share its list.
 */
class AddressTable {
  readonly #byLink = new Map<number, Map<string, Address[]>>();

  set(a: Address): void {
    let m = this.#byLink.get(a.index);
    if (m === undefined) this.#byLink.set(a.index, (m = new Map()));
    const k = a.local ?? a.address ?? '';
    const list = m.get(k);
    if (list === undefined) return void m.set(k, [a]);
    const i = list.findIndex((x) => sameAddress(x, a));
    if (i < 0) list.push(a);
    else list[i] = a;
  }

  delete(a: Address): void {
    const m = this.#byLink.get(a.index);
    const k = a.local ?? a.address ?? '';
    const list = m?.get(k);
    if (m === undefined || list === undefined) return;
    const rest = list.filter((x) => !sameAddress(x, a));
    if (rest.length > 0) m.set(k, rest);
    else if (m.delete(k) && m.size === 0) this.#byLink.delete(a.index);
  }

  deleteLink(index: number): void {
    this.#byLink.delete(index);
  }

  clear(): void {
    this.#byLink.clear();
  }

  /** Every address (of one link with `ifindex`). */
  values(ifindex?: number): Address[] {
    const links =
      ifindex === undefined ? [...this.#byLink.values()] : [this.#byLink.get(ifindex) ?? new Map()];
    return links.flatMap((m) => [...m.values()].flat());
  }
}

/** A link's state for comparison: `change` (events only) and `xdp` (dumps only) left out. */
/**
 * Attributes that move without an event: a bridge's IFLA_BR_HELLO_TIMER, _TCN_TIMER,
 * _TOPOLOGY_CHANGE_TIMER, _GC_TIMER (16-19) and a bridge port's IFLA_BRPORT_MESSAGE_AGE_TIMER,
 * _FORWARD_DELAY_TIMER, _HOLD_TIMER (21-23). A dump that finds only those moved changed
 * nothing (else every periodic dump would count as a change, and make every route be dumped
 * again: the route feed's and the neighbor subsystem's redumps).
 */
const BRIDGE_TIMERS = new Set([16, 17, 18, 19]);
const BRPORT_TIMERS = new Set([21, 22, 23]);

function linkState(l: Link): string {
  const { change: _c, xdp: _x, info, ...rest } = l;
  if (info === undefined) return JSON.stringify(rest);
  const still = (a: RawAttr[] | undefined, timers: Set<number>) =>
    a?.filter((x) => !timers.has(x.type));
  const stable = {
    ...info,
    data: info.kind === 'bridge' ? still(info.data, BRIDGE_TIMERS) : info.data,
    slaveData: info.slaveKind === 'bridge' ? still(info.slaveData, BRPORT_TIMERS) : info.slaveData,
  };
  return JSON.stringify({ ...rest, info: stable });
}

export class DeviceFeed {
  readonly #p: DeviceFeedParams;
  readonly #feed: Feed<Snapshot, 'refresh'>;
  readonly #links = new Map<number, Link>();
  readonly #addrs = new AddressTable();
  readonly #listeners = new Set<DeviceFeedListener>();
  /** The refresh() calls that wait: rejected when a dump fails. */
  readonly #waiters = new Set<(err: unknown) => void>();
  #starting: Promise<void> | undefined = undefined;
  #loaded = false;
  /** The reason of the dump that runs (resynced() is called before each dump). */
  #reason: DeviceFeedReason = 'startup';

  constructor(p: DeviceFeedParams) {
    this.#p = p;
    const rcvbuf = p.rcvbuf ?? 4 << 20;
    this.#feed = new Feed<Snapshot, 'refresh'>({
      name: 'links',
      subscribe: (h) => {
        const sub = p.nl.subscribe(['link', 'address'], h, { rcvbuf, socket: 'link' });
        sub.unref(); // the feed alone keeps no process alive
        return sub;
      },
      dump: async () => [await p.nl.linkList(), await p.nl.addrList()],
      load: (d) => this.#load(d),
      apply: (ev) => {
        if (ev.object === 'link') this.#applyLink(ev.kind, ev.msg);
        else if (ev.object === 'address') this.#applyAddress(ev.kind, ev.msg);
      },
      failed: (err) => {
        for (const reject of [...this.#waiters]) reject(err);
        this.#waiters.clear();
      },
      resynced: (reason) => {
        this.#reason = reason;
        this.#emit((l) => l.resyncing?.(reason));
      },
      clock: p.clock ?? systemClock,
      log: p.log,
      retryMs: p.retryMs ?? 1000,
    });
  }

  /**
   * Subscribes, then dumps; resolves once the snapshot is loaded. An interrupted dump is
   * tried again; any other failure rejects. Idempotent (every caller gets the same promise).
   */
  start(): Promise<void> {
    this.#starting ??= (() => {
      this.#feed.open();
      return this.#feed.initial();
    })();
    return this.#starting;
  }

  /** Closes the subscription; the snapshot stays as it was. Idempotent. */
  stop(): void {
    this.#feed.stop();
    this.#listeners.clear();
  }

  /**
   * Dumps again (a periodic check that wants the kernel's view, not only the events');
   * resolves when the snapshot holds a dump requested after this call and the events held
   * during it; rejects with the error of a dump that fails meanwhile (the feed itself tries
   * again later).
   */
  refresh(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#waiters.add(reject);
      void this.#feed.resync('refresh').then(() => {
        this.#waiters.delete(reject);
        resolve();
      });
    });
  }

  /**
   * Adds a listener; returns the function that removes it. A listener added after the first
   * dump hears that dump at once (resyncing and loaded 'startup'), as though it had been
   * there: it reads the snapshot in loaded() either way.
   */
  listen(l: DeviceFeedListener): () => void {
    this.#listeners.add(l);
    if (this.#loaded) {
      this.#call(() => l.resyncing?.('startup'));
      this.#call(() => l.loaded?.('startup', true));
    }
    return () => this.#listeners.delete(l);
  }

  /** The first dump is loaded. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** The last dump failure, cleared by a successful dump. */
  get lastError(): string | undefined {
    return this.#feed.lastError;
  }

  /** Resolves when no dump (a resync after an overflow, a refresh) is running. */
  idle(): Promise<void> {
    return this.#feed.idle();
  }

  /** Overflows of the subscription (each answered by a fresh socket and a dump). */
  get overflows(): number {
    return this.#feed.overflows;
  }

  /** The links (family AF_UNSPEC: bridge port entries are not links), by ifindex. */
  links(): Link[] {
    return [...this.#links.values()];
  }

  link(ifindex: number): Link | undefined {
    return this.#links.get(ifindex);
  }

  linkByName(name: string): Link | undefined {
    for (const l of this.#links.values()) if (l.name === name) return l;
    return undefined;
  }

  /** The addresses of every link (of one link with `ifindex`). */
  addresses(ifindex?: number): Address[] {
    return this.#addrs.values(ifindex);
  }

  #load([links, addrs]: Snapshot): void {
    const before = this.#loaded ? this.#stateKey() : undefined;
    this.#links.clear();
    for (const l of links) if (l.family === AF_UNSPEC) this.#links.set(l.index, l);
    this.#addrs.clear();
    for (const a of addrs) this.#addrs.set(a);
    this.#loaded = true;
    const changed = before !== this.#stateKey();
    const reason = this.#reason;
    this.#emit((l) => l.loaded?.(reason, changed));
  }

  #stateKey(): string {
    const links = [...this.#links.values()].sort((a, b) => a.index - b.index).map(linkState);
    const addrs = this.#addrs.values().map(addressKey).sort();
    return JSON.stringify([links, addrs]);
  }

  #applyLink(kind: 'new' | 'del', l: Link): void {
    if (l.family !== AF_UNSPEC) return; // bridge port events (AF_BRIDGE) are not links
    if (kind === 'del') {
      this.#links.delete(l.index);
      this.#addrs.deleteLink(l.index); // the kernel reports their deletion before the link's
    } else this.#links.set(l.index, l);
    for (const x of this.#listeners) {
      try {
        x.link?.(kind, l);
      } catch (err) {
        this.#failed(err);
      }
    }
  }

  #applyAddress(kind: 'new' | 'del', a: Address): void {
    if (kind === 'del') this.#addrs.delete(a);
    else this.#addrs.set(a);
    // The hot path (one call per address event): no closure, no copy of the listener set
    // (a listener removed meanwhile is skipped, one added is called: Set iteration).
    for (const x of this.#listeners) {
      try {
        x.address?.(kind, a);
      } catch (err) {
        this.#failed(err);
      }
    }
  }

  #emit(f: (l: DeviceFeedListener) => void): void {
    for (const l of [...this.#listeners]) this.#call(() => f(l));
  }

  #call(f: () => void): void {
    try {
      f();
    } catch (err) {
      this.#failed(err);
    }
  }

  #failed(err: unknown): void {
    this.#p.log.error({ err, feed: 'links' }, 'a device feed listener failed');
  }
}
