// DeviceSync: the subsystem's listener on the device feed. It routes link and address
// events to whoever owns what they touch (the holder's addresses to the assigner, the
// cluster holder's to the cluster IPs, the external interface's link to its watch, every
// other address to the node's addresses), hands holder changes to the repair, and runs the
// check that compares the feed's fresh dump with what the subsystem believes (periodic, and
// after lost notifications). Events that come before start-up is done are held and replayed.
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import {
  IFF_UP,
  type Address,
  type DeviceFeed,
  type Link,
  type RtEvent,
} from '../netlink/index.js';
import { Timer, type Clock } from '../sched/index.js';
import type { Assigner } from './assigner.js';
import type { ClusterIps } from './cluster.js';
import type { ExternalWatch } from './external-watch.js';
import { observe, type Holder } from './holder.js';
import type { ExtipMetrics } from './metrics.js';
import type { NodeAddresses } from './node-addresses.js';
import type { HolderRepair } from './repair.js';
import type { ObservedAddress } from './types.js';

export interface DeviceSyncParams {
  feed: DeviceFeed;
  /** The node's addresses on devices other than the holder (written here). */
  node: NodeAddresses;
  metrics: ExtipMetrics;
  log: Logger;
  clock: Clock;
  /** extip.checkInterval, ms; 0: no periodic check. */
  checkIntervalMs: number;
}

/** What the events go to, once start-up has made it. */
export interface DeviceSyncParts {
  holder: Holder;
  assigner: Assigner;
  ext: ExternalWatch;
  cluster: ClusterIps | undefined;
  repair: HolderRepair;
}

export type CheckReason = 'overflow' | 'periodic';

export class DeviceSync {
  readonly #p: DeviceSyncParams;
  readonly #unlisten: () => void;
  #parts: DeviceSyncParts | undefined;
  /** Events that arrive before begin(), replayed by it. */
  #queued: RtEvent[] = [];
  #stopped = false;
  readonly #checkTimer: Timer;
  #checking: Promise<void> | undefined;
  /** Notifications were lost before begin(): check once begun. */
  #overflowAtStart = false;
  /** The feed's subscription overflowed; its next dump answers it. */
  #lost = false;

  /** Listens at once (before the feed's first dump is awaited): nothing is missed. */
  constructor(p: DeviceSyncParams) {
    this.#p = p;
    this.#checkTimer = new Timer(p.clock, { unref: true });
    this.#unlisten = p.feed.listen({
      resyncing: (reason) => {
        if (reason === 'overflow') this.#lost = true;
      },
      loaded: () => this.#onLoaded(),
      link: (kind, msg) => this.#onEvent({ kind, object: 'link', msg }),
      address: (kind, msg) => this.#onEvent({ kind, object: 'address', msg }),
    });
  }

  /**
   * Start-up is done: takes the feed's view (links, node addresses, the holder's addresses:
   * adopted), replays the events held meanwhile and starts the periodic check.
   */
  begin(parts: DeviceSyncParts): void {
    this.#parts = parts;
    const feed = this.#p.feed;
    this.#p.node.resetLinks(feed.links());
    parts.assigner.adopt(this.#takeAddresses(feed.addresses()));
    const queued = this.#queued;
    this.#queued = [];
    for (const ev of queued) this.#onEvent(ev);
    this.#scheduleCheck();
    // lost notifications may be newer than the first dump: compare once more
    if (this.#overflowAtStart) void this.check('overflow');
  }

  /** Stops the periodic check and the listener; resolves when no check runs. Idempotent. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#checkTimer.cancel();
    this.#unlisten();
    return Promise.allSettled([this.#checking]).then(() => undefined);
  }

  /**
   * Compares the kernel with what the subsystem believes: holder present and up, its
   * addresses, the node's addresses, the external interface. One at a time.
   */
  check(reason: CheckReason): Promise<void> {
    this.#checking ??= this.#checkOnce(reason).finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  /** Records the node's addresses from a dump; returns the holder's (external IPs). */
  #takeAddresses(addrs: readonly Address[]): ObservedAddress[] {
    const { holder, cluster } = this.#parts!;
    const onHolder: ObservedAddress[] = [];
    const clusterIndex = cluster?.holderIfindex ?? 0;
    for (const a of addrs) {
      if (clusterIndex !== 0 && a.index === clusterIndex) continue; // not the node's
      const o = a.index === holder.ifindex ? observe(a) : undefined;
      if (o !== undefined) onHolder.push(o);
      else if (a.index !== holder.ifindex) this.#p.node.address('new', a);
    }
    return onHolder;
  }

  /** The feed loaded a dump: if it answered lost notifications, compare once more. */
  #onLoaded(): void {
    if (this.#stopped || !this.#lost) return;
    this.#lost = false;
    if (this.#parts === undefined) {
      this.#overflowAtStart = true;
      return;
    }
    this.#p.log.warn('extip: netlink notifications lost; resynchronizing');
    void this.check('overflow');
  }

  #onEvent(ev: RtEvent): void {
    if (this.#stopped) return;
    if (this.#parts === undefined) {
      this.#queued.push(ev);
      return;
    }
    if (ev.object === 'link') this.#onLink(ev.kind, ev.msg);
    else if (ev.object === 'address') this.#onAddress(ev.kind, ev.msg);
  }

  #onLink(kind: 'new' | 'del', l: Link): void {
    const { holder, repair, ext, cluster } = this.#parts!;
    this.#p.node.link(kind, l);
    if (l.index === holder.ifindex) {
      if (kind === 'del') repair.deleted();
      else if ((l.flags & IFF_UP) === 0) void repair.setUp(l.index);
    } else if (kind === 'new' && l.name === holder.name && holder.ifindex === 0) {
      void repair.recreate(); // someone else created it meanwhile: adopt it
    }
    ext.onLink(kind, l);
    cluster?.onLink(kind, l, ext.present ? ext.link.ifindex : 0);
  }

  #onAddress(kind: 'new' | 'del', a: Address): void {
    const { holder, assigner, cluster } = this.#parts!;
    if (cluster !== undefined && a.index === cluster.holderIfindex && a.index !== 0) {
      cluster.onAddress(kind, a);
      return;
    }
    if (a.index === holder.ifindex && a.index !== 0) {
      const o = observe(a);
      if (o !== undefined) assigner.onAddress(kind, o);
      return;
    }
    this.#p.node.address(kind, a);
  }

  #scheduleCheck(): void {
    if (this.#p.checkIntervalMs === 0 || this.#stopped) return;
    this.#checkTimer.start(this.#p.checkIntervalMs, () => {
      void this.check('periodic').finally(() => this.#scheduleCheck());
    });
  }

  async #checkOnce(reason: CheckReason): Promise<void> {
    const feed = this.#p.feed;
    const { holder, assigner, ext, cluster, repair } = this.#parts!;
    this.#p.metrics.resync(reason);
    try {
      const since = assigner.epoch();
      const clusterSince = cluster?.epoch() ?? 0;
      await feed.refresh();
      if (this.#stopped) return;
      const [links, addrs] = [feed.links(), feed.addresses()];
      this.#p.node.resetLinks(links);
      const h = links.find((l) => l.name === holder.name);
      if (h === undefined || h.index !== holder.ifindex) {
        if (holder.ifindex !== 0) repair.deleted();
        else void repair.recreate();
        return;
      }
      if ((h.flags & IFF_UP) === 0) this.#onLink('new', h);
      this.#p.node.clearAddresses();
      const onHolder = this.#takeAddresses(addrs);
      ext.resync(links);
      assigner.reconcile(onHolder, since);
      cluster?.reconcile(addrs, clusterSince);
      if (ext.present) cluster?.externalAt(ext.link.ifindex);
    } catch (err) {
      if (this.#stopped) return;
      this.#p.metrics.error('resync');
      this.#p.log.warn({ err: describeError(err), reason }, 'extip: check failed');
    }
  }
}
