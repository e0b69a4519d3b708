// Follows the external interface: its state and MAC from link events, and what the kernel
// does on it by itself (arp_ignore, IPv6 enabled, forwarding for the router flag). Owns the
// packet sockets (LinkIo) and the duplicate address detection that runs through them, and
// tells its owner when a new burst is due: the interface came up, changed its MAC, or came
// back after being deleted. Its addresses play no part: advertisements are sent from the
// external IP itself, as the kernel sends them for its own addresses.
import { ClosedError, describeError, FibkeeperError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { ExtipMetrics } from './metrics.js';
import type { PacketSocketOptions } from '../native/index.js';
import type { Link } from '../netlink/index.js';
import type { Clock } from '../sched/index.js';
import type { AnnounceSink } from './announcer.js';
import { DadProber } from './dad.js';
import {
  externalFromLink,
  feedLookup,
  findExternal,
  type DeviceView,
  readExternalSysctls,
  type ExternalLink,
  type ExternalSysctls,
} from './external.js';
import { LinkIo, type Conflict, type FrameSocket, type LinkIoSettings } from './linkio.js';
import type { ExternalIpConfig } from './options.js';
import { enforceClusterSysctls, readClusterSysctls } from './sysctl.js';

export interface ExternalWatchParams {
  /** Where the interface is looked up (the device feed: no dump of its own). */
  devices: DeviceView;
  netns: string | undefined;
  cfg: ExternalIpConfig;
  log: Logger;
  metrics: ExtipMetrics;
  clock: Clock;
  owns(ip: string): boolean;
  onConflict(c: Conflict): void;
  /** A burst is due for every IP. */
  onLinkChange(): void;
  /** The interface gained or lost its link (up with a carrier), or was deleted. */
  onUpChange?(up: boolean): void;
  openSocket?: (o: PacketSocketOptions) => FrameSocket;
  /** The packet sockets were replaced after `cause`, or could not be (`err`). */
  onSocketReopen?: (cause: string, err?: unknown) => void;
  /** Cluster mode: the kernel must not answer for holder addresses (sysctl.ts), set and kept. */
  clusterMode?: boolean;
}

/** How old the sysctls behind the NA flags may be when a burst starts, ms. */
const SYSCTL_MAX_AGE_MS = 1000;

export class ExternalWatch implements AnnounceSink {
  readonly #p: ExternalWatchParams;
  #link: ExternalLink;
  #sysctls: ExternalSysctls;
  #sysctlsAt: number;
  readonly #io: LinkIo;
  readonly dad: DadProber;
  #sysctlError: string | undefined;
  /** The interface exists (it may have been deleted since). */
  present = true;

  private constructor(p: ExternalWatchParams, link: ExternalLink, sysctls: ExternalSysctls) {
    this.#p = p;
    this.#link = link;
    this.#sysctls = sysctls;
    this.#sysctlsAt = p.clock.now();
    this.dad = new DadProber({
      probes: p.cfg.dadProbes,
      intervalMs: p.cfg.dadInterval,
      waitMs: p.cfg.dadWait,
      sink: {
        sendProbe: (ip, nonce) => this.#io.sendProbe(ip, nonce),
        listen: (ip, on) => this.#io.listenFor(ip, 'dad', on),
      },
      clock: p.clock,
      metrics: p.metrics,
    });
    this.#io = new LinkIo({
      netns: p.netns,
      ...this.#settings(),
      log: p.log,
      metrics: p.metrics,
      owns: p.owns,
      onConflict: p.onConflict,
      dad: this.dad,
      openSocket: p.openSocket,
      onReopen: p.onSocketReopen,
    });
  }

  /** Finds the interface (extip.interface or extip.nodeIP) and opens its sockets. */
  static async open(p: ExternalWatchParams): Promise<ExternalWatch> {
    const { cfg } = p;
    const link = await findExternal(
      feedLookup(p.devices),
      cfg.interface,
      cfg.nodeIP,
      cfg.holderName,
    );
    if (p.clusterMode) {
      const set = enforceClusterSysctls(p.netns, link.name);
      p.log.info(
        { interface: link.name, set, now: readClusterSysctls(p.netns, link.name) },
        'extip: cluster mode: the kernel answers no ARP for the holder addresses',
      );
    }
    const w = new ExternalWatch(p, link, readExternalSysctls(p.netns, link.name));
    w.#io.open();
    p.log.info(
      {
        interface: link.name,
        mac: link.mac,
        arpIgnore: w.#sysctls.arpIgnore,
        arpResponder: w.#respondArp(),
        ipv6: w.#sysctls.ipv6,
        forwarding: w.#sysctls.forwarding,
      },
      'extip: external interface',
    );
    return w;
  }

  #respondArp(): boolean {
    const mode = this.#p.cfg.arpResponder;
    return mode === 'always' || (mode === 'auto' && this.#sysctls.arpIgnore > 0);
  }

  #settings(): LinkIoSettings {
    const s = this.#sysctls;
    return {
      ext: this.#link,
      respondArp: this.#respondArp(),
      ipv6: s.ipv6,
      ndp: { router: s.forwarding, forceTllao: s.forceTllao },
    };
  }

  get link(): ExternalLink {
    return this.#link;
  }

  /** IPv6 is enabled on the interface: IPv6 external IPs can be announced and answered for. */
  get ipv6(): boolean {
    return this.#sysctls.ipv6;
  }

  get lastError(): string | undefined {
    return this.#sysctlError ?? this.#io.lastError;
  }

  /** Why the packet sockets are closed although the interface is there (a failed reopen). */
  get socketError(): string | undefined {
    return this.present ? this.#io.reopenError : undefined;
  }

  announce(ip: ParsedIp): void {
    if (this.#p.clock.now() - this.#sysctlsAt > SYSCTL_MAX_AGE_MS) this.#rereadSysctls();
    this.#io.announce(ip);
  }

  /** The IP is ours: listen for its solicitations (its solicited-node group). */
  track(ip: ParsedIp): void {
    try {
      this.#io.listenFor(ip, 'owned', true);
    } catch (err) {
      this.#p.metrics.error('listen');
      this.#p.log.warn(
        { ip: ip.address, err: describeError(err) },
        'extip: cannot join the solicited-node group; solicitations may not reach the responder',
      );
    }
  }

  /** The IP is no longer ours. */
  forget(ip: ParsedIp): void {
    this.#io.listenFor(ip, 'owned', false);
    this.#io.forget(ip.address);
  }

  // --- events -----------------------------------------------------------------------------

  onLink(kind: 'new' | 'del', l: Link): void {
    if (l.index === this.#link.ifindex && this.present) {
      if (kind === 'del') {
        this.present = false;
        if (this.#link.up) this.#p.onUpChange?.(false);
        this.#io.close();
        this.dad.abortAll(new FibkeeperError(`external interface ${this.#link.name} deleted`));
        this.#p.log.warn({ interface: this.#link.name }, 'extip: external interface deleted');
        return;
      }
      this.#update(l);
    } else if (kind === 'new' && !this.present && l.name === this.#link.name) {
      this.#reattach(l);
    }
  }

  #update(l: Link): void {
    let next: ExternalLink;
    try {
      next = externalFromLink({ ...l, name: l.name ?? this.#link.name });
    } catch {
      return; // not Ethernet any more: keep the last good view
    }
    const prev = this.#link;
    this.#link = next;
    this.#io.configure({ ext: next });
    if (prev.up && !next.up) {
      // nothing can be heard while it is down: what was being probed is not proven unique
      this.dad.abortAll(new FibkeeperError(`external interface ${next.name} went down`));
    }
    if (next.up !== prev.up) this.#p.onUpChange?.(next.up);
    const macChanged = next.mac !== prev.mac;
    if (macChanged || (next.up && !prev.up)) {
      this.#p.log.info(
        { interface: next.name, mac: next.mac, macChanged },
        'extip: external interface came up or changed its MAC; announcing again',
      );
      if (next.up) {
        this.#rereadSysctls();
        this.#p.onLinkChange();
      }
    }
  }

  /** The interface was deleted and a device of the same name appeared: use it. */
  #reattach(l: Link): void {
    try {
      this.#link = externalFromLink(l);
      this.#keepClusterSysctls(); // a new device starts from net.ipv4.conf.default
      this.#sysctls = readExternalSysctls(this.#p.netns, this.#link.name);
      this.#sysctlsAt = this.#p.clock.now();
      this.#io.close();
      this.#io.configure(this.#settings());
      this.#io.open();
      this.present = true;
      if (this.#link.up) this.#p.onUpChange?.(true);
      this.#p.log.info({ interface: this.#link.name }, 'extip: external interface back');
      if (this.#link.up) this.#p.onLinkChange();
    } catch (err) {
      this.#p.log.warn({ err: describeError(err) }, 'extip: cannot use the new external interface');
    }
  }

  /** Reads the sysctls again; reopens the sockets when what they listen for changed. */
  #rereadSysctls(): void {
    let s: ExternalSysctls;
    try {
      this.#keepClusterSysctls();
      s = readExternalSysctls(this.#p.netns, this.#link.name);
    } catch (err) {
      this.#p.log.debug({ err: describeError(err) }, 'extip: cannot read the sysctls');
      return;
    }
    this.#sysctlsAt = this.#p.clock.now();
    const reopen = s.ipv6 !== this.#sysctls.ipv6 || s.arpIgnore !== this.#sysctls.arpIgnore;
    this.#sysctls = s;
    this.#io.configure(this.#settings());
    if (reopen && this.present) {
      this.#io.close();
      try {
        this.#io.open();
      } catch (err) {
        this.#p.log.warn({ err: describeError(err) }, 'extip: cannot reopen the packet sockets');
      }
    }
  }

  /** Cluster mode: sets arp_ignore/arp_announce back when someone lowered them. */
  #keepClusterSysctls(): void {
    if (!this.#p.clusterMode) return;
    try {
      const set = enforceClusterSysctls(this.#p.netns, this.#link.name);
      if (set.length === 0) {
        if (this.#sysctlError !== undefined) this.#sysctlError = undefined;
        return;
      }
      this.#sysctlError = undefined;
      this.#p.metrics.repaired('sysctl', set.length);
      this.#p.log.warn(
        { interface: this.#link.name, set },
        'extip: cluster mode: a sysctl that keeps the kernel from answering for holder addresses was lowered; set it back',
      );
    } catch (err) {
      this.#sysctlError = describeError(err);
      this.#p.metrics.error('repair');
      this.#p.log.error({ err: this.#sysctlError }, 'extip: cluster mode sysctl');
    }
  }

  /** The periodic check: the link and the sysctls read again. */
  resync(links: readonly Link[]): void {
    const l = links.find((x) => x.index === this.#link.ifindex && x.name === this.#link.name);
    if (l === undefined && this.present) this.onLink('del', { ...this.#asLink(), flags: 0 });
    if (l === undefined) {
      const again = links.find((x) => x.name === this.#link.name);
      if (again !== undefined) this.#reattach(again);
      return;
    }
    if (!this.present) return this.#reattach(l);
    this.#update(l);
    this.#rereadSysctls();
    this.#io.retryReopen();
  }

  #asLink(): Link {
    return {
      family: 0,
      type: 1,
      index: this.#link.ifindex,
      flags: 0,
      change: 0,
      name: this.#link.name,
    };
  }

  /** Ends running probes and closes the sockets; for good (stop). */
  close(): void {
    this.dad.stop(new ClosedError('extip: stopped during duplicate address detection'));
    this.#io.close();
  }
}
