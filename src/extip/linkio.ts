// The external interface on the wire: announcements out of a send-only packet socket, and
// two listeners. The ARP listener detects conflicts (another MAC claiming one of our IPs)
// and, when arp_ignore keeps the kernel quiet, answers ARP requests for our IPs. The IPv6
// listener detects conflicting neighbor advertisements and answers neighbor solicitations
// for our IPs, which the kernel never does for addresses on another device.
import { describeError, FibkeeperError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { ExtipMetrics } from '../metrics/extip.js';
import {
  ETH_P_ARP,
  ETH_P_IPV6,
  PacketSocket,
  type PacketReceiver,
  type PacketSocketOptions,
  type SystemError,
} from '../native/index.js';
import type { AnnounceSink } from './announcer.js';
import type { ExternalLink } from './external.js';
import {
  ALL_NODES_IP,
  ARPOP_REQUEST,
  buildArpReply,
  buildGratuitousArp,
  buildNeighborAdvert,
  buildUnsolicitedNa,
  decodeFrame,
} from './frames.js';
import {
  decodeNeighborSolicit,
  icmpv6Type,
  ND_NEIGHBOR_ADVERT,
  ND_NEIGHBOR_SOLICIT,
} from './ndp.js';

/** What LinkIo needs of a packet socket; the native PacketSocket fits, tests pass fakes. */
export interface FrameSocket {
  send(frame: Buffer): number;
  receive(receiver: PacketReceiver): void;
  unref(): void;
  close(): void;
}

export interface Conflict {
  ip: string;
  family: 4 | 6;
  /** The MAC that claims it. */
  mac: string;
  /** "ARP reply", "ARP request", "neighbor advertisement". */
  what: string;
}

export interface LinkIoParams {
  netns: string | undefined;
  ext: ExternalLink;
  /** A link-local address of the external interface: the source of unsolicited NAs. */
  linkLocal: string | undefined;
  /** Answer ARP requests for our IPs (arp_ignore > 0, or configured so). */
  respondArp: boolean;
  /** Listen for IPv6 neighbor discovery (IPv6 is enabled on the interface). */
  ipv6: boolean;
  log: Logger;
  metrics: ExtipMetrics;
  /** True for an external IP that is assigned: we answer for it and defend it. */
  owns(ip: string): boolean;
  onConflict(c: Conflict): void;
  /** Opens the sockets; default the native PacketSocket. */
  openSocket?: (o: PacketSocketOptions) => FrameSocket;
}

/** Any unicast IPv4 address: the templates are built for it, then every IP is stamped in. */
const TEMPLATE_IP = '192.0.2.1';
/** Where the sender and target IPs sit in an Ethernet + ARP (IPv4 over Ethernet) frame. */
const ARP_SPA = 28;
const ARP_TPA = 38;

function stampArp(frame: Buffer, ip: Buffer): void {
  ip.copy(frame, ARP_SPA, 0, 4);
  ip.copy(frame, ARP_TPA, 0, 4);
}

export class LinkIo implements AnnounceSink {
  readonly #p: LinkIoParams;
  #ext: ExternalLink;
  #linkLocal: string | undefined;
  #respondArp: boolean;
  #tx: FrameSocket | undefined;
  #rx: FrameSocket[] = [];
  /** Gratuitous ARP request and reply for the current MAC; the IP is stamped in per send. */
  #arp: [Buffer, Buffer] | undefined;
  #arpMac = '';
  /** Unsolicited NA per IPv6 external IP, for the current MAC and link-local source. */
  readonly #naFrames = new Map<string, Buffer>();
  #closed = false;
  /** The last receive error, for health(). */
  lastError: string | undefined;

  constructor(p: LinkIoParams) {
    this.#p = p;
    this.#ext = p.ext;
    this.#linkLocal = p.linkLocal;
    this.#respondArp = p.respondArp;
  }

  get ext(): ExternalLink {
    return this.#ext;
  }

  /** Opens the send socket and the listeners. Throws SystemError (ENODEV, EPERM). */
  open(): void {
    const open = this.#p.openSocket ?? ((o: PacketSocketOptions) => PacketSocket.open(o));
    const base = { ifindex: this.#ext.ifindex, netns: this.#p.netns };
    try {
      // Protocol 0: a socket that only sends (it receives nothing).
      this.#tx = open({ ...base, protocol: 0 });
      this.#listen(open({ ...base, protocol: ETH_P_ARP, ignoreOutgoing: true }), 'arp');
      if (this.#p.ipv6) {
        this.#listen(open({ ...base, protocol: ETH_P_IPV6, ignoreOutgoing: true }), 'ipv6');
      }
    } catch (err) {
      this.close();
      throw new FibkeeperError(`extip: open packet sockets on ${this.#ext.name}`, { cause: err });
    }
    this.#closed = false;
  }

  #listen(sock: FrameSocket, what: 'arp' | 'ipv6'): void {
    this.#rx.push(sock);
    sock.unref(); // the agent's other handles keep the process alive, not a listener
    sock.receive({
      onFrame: (frame) => (what === 'arp' ? this.#onArp(frame) : this.#onIpv6(frame)),
      onError: (err: SystemError) => {
        // The interface went down (the socket reports it once): the link watcher sees that.
        if (err.code === 'ENETDOWN') return;
        this.lastError = `${what} listener: ${describeError(err)}`;
        this.#p.metrics.error('listen');
        this.#p.log.warn({ err: this.lastError }, 'extip: listener error');
      },
    });
  }

  /** The interface changed its MAC: frames are rebuilt. */
  setExternal(ext: ExternalLink): void {
    if (ext.mac !== this.#ext.mac) this.#naFrames.clear();
    this.#ext = ext;
  }

  setLinkLocal(ip: string | undefined): void {
    if (ip === this.#linkLocal) return;
    this.#linkLocal = ip;
    this.#naFrames.clear();
  }

  get linkLocal(): string | undefined {
    return this.#linkLocal;
  }

  setRespondArp(on: boolean): void {
    this.#respondArp = on;
  }

  /**
   * One announcement: gratuitous ARP request and reply (IPv4), or an unsolicited NA (IPv6).
   * IPv4 frames are two templates (built by frames.ts for the current MAC) with the IP
   * stamped in; NA frames (their checksum covers the target) are built once per IP.
   */
  announce(ip: ParsedIp): void {
    const tx = this.#tx;
    if (tx === undefined || this.#closed) {
      throw new FibkeeperError(`external interface ${this.#ext.name} is not available`);
    }
    if (ip.family === 4) {
      const [req, rep] = this.#arpTemplates();
      stampArp(req, ip.bytes);
      tx.send(req);
      stampArp(rep, ip.bytes);
      tx.send(rep);
      this.#p.metrics.framesSent('ipv4', 2);
      return;
    }
    let na = this.#naFrames.get(ip.address);
    if (na === undefined) {
      na = this.#buildNa(ip);
      this.#naFrames.set(ip.address, na);
    }
    tx.send(na);
    this.#p.metrics.framesSent('ipv6', 1);
  }

  /** Forgets what was built for an IP that is no longer ours. */
  forget(ip: string): void {
    this.#naFrames.delete(ip);
  }

  #arpTemplates(): [Buffer, Buffer] {
    if (this.#arp === undefined || this.#arpMac !== this.#ext.mac) {
      const mac = this.#ext.macBytes;
      const ip = TEMPLATE_IP;
      this.#arp = [
        buildGratuitousArp({ ip, mac, form: 'request' }),
        buildGratuitousArp({ ip, mac, form: 'reply' }),
      ];
      this.#arpMac = this.#ext.mac;
    }
    return this.#arp;
  }

  #buildNa(ip: ParsedIp): Buffer {
    if (this.#linkLocal === undefined) {
      throw new FibkeeperError(
        `external interface ${this.#ext.name} has no usable IPv6 link-local address to send the neighbor advertisement from (IPv6 disabled, link down, or DAD still running)`,
      );
    }
    const mac = this.#ext.macBytes;
    return buildUnsolicitedNa({ ip: ip.address, mac, sourceIp: this.#linkLocal });
  }

  #onArp(frame: Buffer): void {
    const d = decodeFrame(frame);
    if (d.kind !== 'arp' || d.senderMac === this.#ext.mac) return;
    if (d.senderIp !== '0.0.0.0' && this.#p.owns(d.senderIp)) {
      const what = d.op === ARPOP_REQUEST ? 'ARP request' : 'ARP reply';
      this.#p.onConflict({ ip: d.senderIp, family: 4, mac: d.senderMac, what });
      return;
    }
    if (!this.#respondArp || d.op !== ARPOP_REQUEST || !this.#p.owns(d.targetIp)) return;
    if (d.gratuitous) return; // an announcement, not a question
    this.#respond(
      4,
      buildArpReply({
        senderMac: this.#ext.macBytes,
        senderIp: d.targetIp,
        targetMac: d.senderMac,
        targetIp: d.senderIp, // 0.0.0.0 for a probe: the reply defends the address
      }),
    );
  }

  #onIpv6(frame: Buffer): void {
    const type = icmpv6Type(frame);
    if (type === ND_NEIGHBOR_ADVERT) {
      const d = decodeFrame(frame);
      if (d.kind !== 'na' || d.hopLimit !== 255 || !d.checksumValid) return;
      const mac = d.targetMac ?? d.eth.src;
      if (mac !== this.#ext.mac && this.#p.owns(d.target)) {
        this.#p.onConflict({ ip: d.target, family: 6, mac, what: 'neighbor advertisement' });
      }
    } else if (type === ND_NEIGHBOR_SOLICIT) {
      const ns = decodeNeighborSolicit(frame);
      if (ns === undefined || ns.ethSrc === this.#ext.mac || !this.#p.owns(ns.target)) return;
      const dad = ns.srcIp === '::';
      this.#respond(
        6,
        buildNeighborAdvert({
          ethSrc: this.#ext.macBytes,
          // RFC 4861 §7.2.4: to the soliciting node, or to all nodes when it has no address
          ethDst: dad ? undefined : (ns.sourceMac ?? ns.ethSrc),
          srcIp: ns.target,
          dstIp: dad ? ALL_NODES_IP : ns.srcIp,
          target: ns.target,
          solicited: !dad,
          override: true,
          targetMac: this.#ext.macBytes,
        }),
      );
    }
  }

  #respond(family: 4 | 6, frame: Buffer): void {
    const label = family === 4 ? 'ipv4' : 'ipv6';
    try {
      this.#tx?.send(frame);
      this.#p.metrics.responded(label);
      this.#p.metrics.framesSent(label);
    } catch (err) {
      this.#p.metrics.error('respond');
      this.#p.log.debug({ err: describeError(err) }, 'extip: response not sent');
    }
  }

  /** Closes every socket. Idempotent; open() may be called again. */
  close(): void {
    this.#closed = true;
    this.#tx?.close();
    this.#tx = undefined;
    for (const s of this.#rx) s.close();
    this.#rx = [];
    this.#naFrames.clear();
  }
}
