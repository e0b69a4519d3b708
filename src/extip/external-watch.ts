// Follows the external interface: its state, MAC and IPv6 link-local address from link and
// address events, and what the kernel answers by itself (arp_ignore, IPv6 enabled). Owns
// the packet sockets (LinkIo) and tells its owner when a new burst is due: the interface
// came up, changed its MAC, came back after being deleted, or got a usable link-local.
import { describeError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { ExtipMetrics } from '../metrics/extip.js';
import type { PacketSocketOptions } from '../native/index.js';
import type { Address, Link, NetlinkHandle } from '../netlink/index.js';
import type { AnnounceSink } from './announcer.js';
import {
  externalFromLink,
  findExternal,
  pickLinkLocal,
  readExternalSysctls,
  type ExternalLink,
  type ExternalSysctls,
} from './external.js';
import { LinkIo, type Conflict, type FrameSocket } from './linkio.js';
import type { ExternalIpConfig } from './options.js';

export interface ExternalWatchParams {
  nl: NetlinkHandle;
  netns: string | undefined;
  cfg: ExternalIpConfig;
  log: Logger;
  metrics: ExtipMetrics;
  owns(ip: string): boolean;
  onConflict(c: Conflict): void;
  /** A burst is due for every IP of `family` (both when undefined). */
  onLinkChange(family?: 4 | 6): void;
  openSocket?: (o: PacketSocketOptions) => FrameSocket;
}

export class ExternalWatch implements AnnounceSink {
  readonly #p: ExternalWatchParams;
  #link: ExternalLink;
  #sysctls: ExternalSysctls;
  #io: LinkIo;
  /** The interface exists (it may have been deleted since). */
  present = true;
  /** IPv6 addresses of the interface and their flags, for the link-local source. */
  readonly #v6 = new Map<string, Address>();

  private constructor(p: ExternalWatchParams, link: ExternalLink, sysctls: ExternalSysctls) {
    this.#p = p;
    this.#link = link;
    this.#sysctls = sysctls;
    this.#io = this.#newIo();
  }

  /** Finds the interface (extip.interface or extip.nodeIP) and opens its sockets. */
  static async open(p: ExternalWatchParams): Promise<ExternalWatch> {
    const { cfg } = p;
    const link = await findExternal(p.nl, cfg.interface, cfg.nodeIP, cfg.holderName);
    const w = new ExternalWatch(p, link, readExternalSysctls(p.netns, link.name));
    w.#io.open();
    p.log.info(
      {
        interface: link.name,
        mac: link.mac,
        arpIgnore: w.#sysctls.arpIgnore,
        arpResponder: w.#respondArp(),
        ipv6: w.#sysctls.ipv6,
      },
      'extip: external interface',
    );
    return w;
  }

  #respondArp(): boolean {
    const mode = this.#p.cfg.arpResponder;
    return mode === 'always' || (mode === 'auto' && this.#sysctls.arpIgnore > 0);
  }

  #newIo(): LinkIo {
    return new LinkIo({
      netns: this.#p.netns,
      ext: this.#link,
      linkLocal: pickLinkLocal([...this.#v6.values()], this.#link.ifindex),
      respondArp: this.#respondArp(),
      ipv6: this.#sysctls.ipv6,
      log: this.#p.log,
      metrics: this.#p.metrics,
      owns: this.#p.owns,
      onConflict: this.#p.onConflict,
      openSocket: this.#p.openSocket,
    });
  }

  get link(): ExternalLink {
    return this.#link;
  }

  /** IPv6 is enabled on the interface: IPv6 external IPs can be announced and answered for. */
  get ipv6(): boolean {
    return this.#sysctls.ipv6;
  }

  get lastError(): string | undefined {
    return this.#io.lastError;
  }

  announce(ip: ParsedIp): void {
    this.#io.announce(ip);
  }

  forget(ip: string): void {
    this.#io.forget(ip);
  }

  // --- events -----------------------------------------------------------------------------

  onLink(kind: 'new' | 'del', l: Link): void {
    if (l.index === this.#link.ifindex && this.present) {
      if (kind === 'del') {
        this.present = false;
        this.#io.close();
        this.#v6.clear();
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
    this.#io.setExternal(next);
    const macChanged = next.mac !== prev.mac;
    if (macChanged || (next.up && !prev.up)) {
      this.#p.log.info(
        { interface: next.name, mac: next.mac, macChanged },
        'extip: external interface came up or changed its MAC; announcing again',
      );
      if (next.up) this.#p.onLinkChange();
    }
  }

  /** The interface was deleted and a device of the same name appeared: use it. */
  #reattach(l: Link): void {
    try {
      this.#link = externalFromLink(l);
      this.#sysctls = readExternalSysctls(this.#p.netns, this.#link.name);
      this.#io = this.#newIo();
      this.#io.open();
      this.present = true;
      this.#p.log.info({ interface: this.#link.name }, 'extip: external interface back');
      if (this.#link.up) this.#p.onLinkChange();
    } catch (err) {
      this.#p.log.warn({ err: describeError(err) }, 'extip: cannot use the new external interface');
    }
  }

  onAddress(kind: 'new' | 'del', a: Address): void {
    if (a.index !== this.#link.ifindex || a.family !== 10) return;
    const ip = a.address ?? a.local;
    if (ip === undefined) return;
    if (kind === 'new') this.#v6.set(ip, a);
    else this.#v6.delete(ip);
    this.#refreshLinkLocal();
  }

  /** The first dump: every address of the node. */
  onAddresses(addrs: readonly Address[]): void {
    this.#v6.clear();
    for (const a of addrs) this.onAddress('new', a);
  }

  #refreshLinkLocal(): void {
    const before = this.#io.linkLocal;
    const now = pickLinkLocal([...this.#v6.values()], this.#link.ifindex);
    if (now === before) return;
    this.#io.setLinkLocal(now);
    // NAs that failed for want of a source can go out now.
    if (before === undefined && now !== undefined && this.#link.up) this.#p.onLinkChange(6);
  }

  /** The periodic check: links, addresses and sysctls read again. */
  resync(links: readonly Link[], addrs: readonly Address[]): void {
    const l = links.find((x) => x.index === this.#link.ifindex && x.name === this.#link.name);
    if (l === undefined && this.present) this.onLink('del', { ...this.#asLink(), flags: 0 });
    if (l === undefined) {
      const again = links.find((x) => x.name === this.#link.name);
      if (again !== undefined) this.#reattach(again);
      return;
    }
    if (!this.present) return this.#reattach(l);
    this.#update(l);
    this.onAddresses(addrs);
    const s = readExternalSysctls(this.#p.netns, this.#link.name);
    const changed = s.ipv6 !== this.#sysctls.ipv6 || s.arpIgnore !== this.#sysctls.arpIgnore;
    this.#sysctls = s;
    if (changed) {
      this.#io.close();
      this.#io = this.#newIo();
      this.#io.open();
    }
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

  close(): void {
    this.#io.close();
  }
}
