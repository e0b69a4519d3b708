// The external interface on the wire: announcements and duplicate-address probes out of a
// send-only packet socket, and two listeners. The ARP listener detects conflicts (another MAC
// claiming one of our IPs, or one being probed for) and, when arp_ignore keeps the kernel
// quiet, answers ARP requests for our IPs. The IPv6 listener (a socket filter passes it only
// neighbor solicitations and advertisements) detects conflicting advertisements and probes,
// and answers neighbor solicitations for our IPs, which the kernel never does for addresses
// on another device; it joins the solicited-node group of every IPv6 IP it listens for, so
// that a NIC's multicast filter lets those solicitations in. Advertisements carry the flags
// the kernel would set on this interface (router flag from its forwarding setting).
//
// No socket stays broken: a receive error other than ENETDOWN (the interface went down; the
// socket works again once it is up) and a send error that says the socket no longer works
// close every socket and open them again (listeners, groups and filter included), once,
// logged and counted (onReopen); a reopen that fails is tried again at the next check.
import { describeError, FibkeeperError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { ExtipMetrics } from './metrics.js';
import {
  ETH_P_ARP,
  ETH_P_IPV6,
  PacketSocket,
  bpfInsn,
  type PacketReceiver,
  type PacketSocketOptions,
  type SystemError,
} from '../native/index.js';
import { arpMayConcern, type ArpInterest } from './arp-filter.js';
import type { ExternalLink } from './external.js';
import {
  ALL_NODES_IP,
  ARPOP_REQUEST,
  buildArpProbe,
  buildArpReply,
  buildGratuitousArp,
  buildNeighborAdvert,
  buildUnsolicitedNa,
  decodeFrame,
} from './frames.js';
import {
  buildDadSolicit,
  decodeNeighborSolicit,
  icmpv6Type,
  ND_NEIGHBOR_ADVERT,
  ND_NEIGHBOR_SOLICIT,
  solicitedNodeMac,
  type NeighborSolicit,
} from './ndp.js';

/** What LinkIo needs of a packet socket; the native PacketSocket fits, tests pass fakes. */
export interface FrameSocket {
  send(frame: Buffer): number;
  receive(receiver: PacketReceiver): void;
  unref(): void;
  close(): void;
  /** Joins or leaves a link-layer multicast group (for as long as the socket lives). */
  membership?(mac: Buffer, join: boolean): void;
  /** Narrows what the socket receives with a classic BPF program. */
  attachFilter?(program: Buffer): void;
}

/** How the kernel would flag neighbor advertisements on this interface. */
export interface NdpFlags {
  /** The interface forwards IPv6 (net.ipv6.conf.IFACE.forwarding): the router flag. */
  router: boolean;
  /** net.ipv6.conf.IFACE.force_tllao: the target link-layer option in every NA. */
  forceTllao: boolean;
}

/** What the listeners tell duplicate address detection (DadProber). */
export interface DadListener {
  probing(ip: string): boolean;
  claim(ip: string, mac: string, what: string, nonce?: Uint8Array): boolean;
}

/** Why the IPv6 listener listens for an IP's solicitations. */
export type ListenReason = 'dad' | 'owned';
const REASON_BIT: Record<ListenReason, number> = { dad: 1, owned: 2 };

/**
 * Ethernet, IPv6 with ICMPv6 as the next header (neighbor discovery carries no extension
 * header), ICMPv6 type 135 or 136; everything else stays in the kernel.
 */
export const NDP_FILTER = Buffer.concat([
  bpfInsn(0x28, 0, 0, 12), // ldh [12]            (EtherType)
  bpfInsn(0x15, 0, 6, 0x86dd), // jeq #0x86dd, next, drop
  bpfInsn(0x30, 0, 0, 20), // ldb [20]            (next header)
  bpfInsn(0x15, 0, 4, 58), // jeq #58, next, drop
  bpfInsn(0x30, 0, 0, 54), // ldb [54]            (ICMPv6 type)
  bpfInsn(0x35, 0, 2, 135), // jge #135, next, drop
  bpfInsn(0x25, 1, 0, 136), // jgt #136, drop, accept
  bpfInsn(0x06, 0, 0, 0x40000), // accept: ret #262144
  bpfInsn(0x06, 0, 0, 0), // drop: ret #0
]);

export interface Conflict {
  ip: string;
  family: 4 | 6;
  /** The MAC that claims it. */
  mac: string;
  /** "ARP reply", "ARP request", "neighbor advertisement". */
  what: string;
}

/** What LinkIo is told about the interface; set again when it changes. */
export interface LinkIoSettings {
  ext: ExternalLink;
  /** Answer ARP requests for our IPs (arp_ignore > 0, or configured so). */
  respondArp: boolean;
  /** Listen for IPv6 neighbor discovery (IPv6 is enabled on the interface). */
  ipv6: boolean;
  ndp: NdpFlags;
}

export interface LinkIoParams extends LinkIoSettings {
  netns: string | undefined;
  log: Logger;
  metrics: ExtipMetrics;
  /** True for an external IP that is assigned: we answer for it and defend it. */
  owns(ip: string): boolean;
  onConflict(c: Conflict): void;
  dad: DadListener;
  /** Opens the sockets; default the native PacketSocket. */
  openSocket?: (o: PacketSocketOptions) => FrameSocket;
  /** The sockets were replaced after `cause` (an errno name), or could not be (`err`). */
  onReopen?: (cause: string, err?: unknown) => void;
}

/** Receive errors after which a packet socket works on: the interface went down. */
const RECEIVE_TRANSIENT = new Set(['ENETDOWN']);
/**
 * Send errors of the moment or of the interface (down, gone: the link watcher acts on that),
 * after which the socket works on. Any other (EBADF, EINVAL, ...) replaces the sockets.
 */
const SEND_TRANSIENT = new Set([
  'ENETDOWN',
  'ENXIO',
  'ENODEV',
  'EAGAIN',
  'ENOBUFS',
  'ENOMEM',
  'EBUSY',
  'EINTR',
  'EMSGSIZE',
]);

/** Any unicast IPv4 address: the templates are built for it, then every IP is stamped in. */
const TEMPLATE_IP = '192.0.2.1';
/** Where the sender and target IPs sit in an Ethernet + ARP (IPv4 over Ethernet) frame. */
const ARP_SPA = 28;
const ARP_TPA = 38;

function stampArp(frame: Buffer, ip: Buffer): void {
  ip.copy(frame, ARP_SPA, 0, 4);
  ip.copy(frame, ARP_TPA, 0, 4);
}

export class LinkIo {
  readonly #p: LinkIoParams;
  readonly #arpInterest: ArpInterest;
  #s: LinkIoSettings;
  #tx: FrameSocket | undefined;
  #rx: FrameSocket[] = [];
  #v6: FrameSocket | undefined;
  /** Gratuitous ARP request and reply for the current MAC; the IP is stamped in per send. */
  #arp: [Buffer, Buffer] | undefined;
  #arpMac = '';
  /** Unsolicited NA per IPv6 external IP, for the current MAC and flags. */
  readonly #naFrames = new Map<string, Buffer>();
  /** IPv6 IPs whose solicitations we listen for, with why (REASON_BIT), and their groups. */
  readonly #listening = new Map<string, number>();
  readonly #groups = new Map<string, number>();
  #closed = true;
  /** The sockets are wanted open (open() was called, close() not since). */
  #wanted = false;
  #reopening = false;
  /** The last receive error, for health(). */
  lastError: string | undefined;
  /** Why the sockets are closed although wanted: a reopen that failed. */
  reopenError: string | undefined;

  constructor(p: LinkIoParams) {
    this.#p = p;
    this.#s = { ext: p.ext, respondArp: p.respondArp, ipv6: p.ipv6, ndp: p.ndp };
    const settings = (): LinkIoSettings => this.#s;
    this.#arpInterest = {
      owns: (ip) => p.owns(ip),
      probing: (ip) => p.dad.probing(ip),
      get respondArp() {
        return settings().respondArp;
      },
    };
  }

  get ext(): ExternalLink {
    return this.#s.ext;
  }

  /**
   * Opens the send socket and the listeners, and joins the groups of the IPs listened for.
   * Throws FibkeeperError (ENODEV, EPERM in its cause). Again after close(): reopens.
   */
  open(): void {
    const open = this.#p.openSocket ?? ((o: PacketSocketOptions) => PacketSocket.open(o));
    const base = { ifindex: this.#s.ext.ifindex, netns: this.#p.netns };
    try {
      // Protocol 0: a socket that only sends (it receives nothing).
      this.#tx = open({ ...base, protocol: 0 });
      this.#listen(open({ ...base, protocol: ETH_P_ARP, ignoreOutgoing: true }), 'arp');
      if (this.#s.ipv6) {
        const v6 = open({ ...base, protocol: ETH_P_IPV6, ignoreOutgoing: true });
        v6.attachFilter?.(NDP_FILTER);
        this.#listen(v6, 'ipv6');
        this.#v6 = v6;
        for (const mac of this.#groups.keys()) v6.membership?.(Buffer.from(mac, 'hex'), true);
      }
    } catch (err) {
      this.close();
      throw new FibkeeperError(`extip: open packet sockets on ${this.#s.ext.name}`, {
        cause: err,
      });
    }
    this.#closed = false;
    this.#wanted = true;
    this.reopenError = undefined;
  }

  /**
   * Closes every socket and opens them again after `cause` (an errno name), on the next
   * turn (not inside the callback that reported it). Once per turn however many sockets
   * failed; a failure is kept in reopenError and tried again by retryReopen().
   */
  #reopen(cause: string): void {
    if (this.#reopening || !this.#wanted) return;
    this.#reopening = true;
    setImmediate(() => {
      this.#reopening = false;
      if (!this.#wanted) return;
      this.close();
      try {
        this.open();
        this.lastError = undefined; // healed
        this.#p.log.warn(
          { interface: this.#s.ext.name, cause },
          'extip: packet sockets reopened after an error',
        );
        this.#p.onReopen?.(cause);
      } catch (err) {
        this.#wanted = true;
        this.reopenError = `packet sockets could not be reopened after ${cause}: ${describeError(err)}`;
        this.#p.log.error({ interface: this.#s.ext.name, err: this.reopenError }, 'extip');
        this.#p.onReopen?.(cause, err);
      }
    });
  }

  /** Opens the sockets again when an earlier reopen failed (the periodic check calls this). */
  retryReopen(): void {
    if (this.#wanted && this.#closed && this.reopenError !== undefined) {
      this.#reopen('retry');
    }
  }

  /** Sends `frame` on `tx`; a send error that says the socket no longer works reopens. */
  #send(tx: FrameSocket, frame: Buffer): void {
    try {
      tx.send(frame);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && !SEND_TRANSIENT.has(code)) this.#reopen(code);
      throw err;
    }
  }

  #listen(sock: FrameSocket, what: 'arp' | 'ipv6'): void {
    this.#rx.push(sock);
    sock.unref(); // the agent's other handles keep the process alive, not a listener
    sock.receive({
      onFrame: (frame) => (what === 'arp' ? this.#onArp(frame) : this.#onIpv6(frame)),
      onError: (err: SystemError) => {
        // The interface went down (the socket reports it once): the link watcher sees that.
        if (RECEIVE_TRANSIENT.has(err.code)) return;
        this.lastError = `${what} listener: ${describeError(err)}`;
        this.#p.metrics.error('listen');
        this.#p.log.warn({ err: this.lastError }, 'extip: listener error');
        this.#reopen(err.code);
      },
    });
  }

  /** New settings (the MAC, the sysctls); frames are rebuilt. Sockets: close() and open(). */
  configure(s: Partial<LinkIoSettings>): void {
    const next = { ...this.#s, ...s };
    const ndp = next.ndp;
    if (
      next.ext.mac !== this.#s.ext.mac ||
      ndp.router !== this.#s.ndp.router ||
      ndp.forceTllao !== this.#s.ndp.forceTllao
    ) {
      this.#naFrames.clear();
    }
    this.#s = next;
  }

  /**
   * Listens (or stops listening, for this reason) for solicitations of the IPv6 `ip`: joins
   * its solicited-node group while any reason holds. IPv4: nothing to do (ARP is broadcast).
   * Throws when the group cannot be joined.
   */
  listenFor(ip: ParsedIp, reason: ListenReason, on: boolean): void {
    if (ip.family !== 6) return;
    const before = this.#listening.get(ip.address) ?? 0;
    const after = on ? before | REASON_BIT[reason] : before & ~REASON_BIT[reason];
    if (after === before) return;
    if (after === 0) this.#listening.delete(ip.address);
    else this.#listening.set(ip.address, after);
    if (before !== 0 && after !== 0) return;
    const mac = solicitedNodeMac(ip.bytes);
    const key = mac.toString('hex');
    const n = this.#groups.get(key) ?? 0;
    if (on) {
      this.#groups.set(key, n + 1);
      if (n === 0 && !this.#closed) this.#v6?.membership?.(mac, true);
    } else if (n <= 1) {
      this.#groups.delete(key);
      if (!this.#closed) this.#v6?.membership?.(mac, false);
    } else {
      this.#groups.set(key, n - 1);
    }
  }

  /**
   * One announcement: gratuitous ARP request and reply (IPv4), or an unsolicited NA (IPv6).
   * IPv4 frames are two templates (built by frames.ts for the current MAC) with the IP
   * stamped in; NA frames (their checksum covers the target) are built once per IP.
   */
  announce(ip: ParsedIp): void {
    const tx = this.#sender();
    if (ip.family === 4) {
      const [req, rep] = this.#arpTemplates();
      stampArp(req, ip.bytes);
      this.#send(tx, req);
      stampArp(rep, ip.bytes);
      this.#send(tx, rep);
      this.#p.metrics.framesSent('ipv4', 2);
      return;
    }
    let na = this.#naFrames.get(ip.address);
    if (na === undefined) {
      const { ext, ndp } = this.#s;
      na = buildUnsolicitedNa({ ip: ip.address, mac: ext.macBytes, router: ndp.router });
      this.#naFrames.set(ip.address, na);
    }
    this.#send(tx, na);
    this.#p.metrics.framesSent('ipv6', 1);
  }

  /** One duplicate-address probe: an ARP probe, or an NS from :: with `nonce`. */
  sendProbe(ip: ParsedIp, nonce: Buffer): void {
    const tx = this.#sender();
    const mac = this.#s.ext.macBytes;
    if (ip.family === 4) this.#send(tx, buildArpProbe({ ip: ip.address, mac }));
    else this.#send(tx, buildDadSolicit({ ip, mac, nonce }));
    this.#p.metrics.framesSent(ip.family === 4 ? 'ipv4' : 'ipv6', 1);
  }

  #sender(): FrameSocket {
    const tx = this.#tx;
    if (tx === undefined || this.#closed) {
      throw new FibkeeperError(`external interface ${this.#s.ext.name} is not available`);
    }
    return tx;
  }

  /** Forgets what was built for an IP that is no longer ours. */
  forget(ip: string): void {
    this.#naFrames.delete(ip);
  }

  #arpTemplates(): [Buffer, Buffer] {
    const ext = this.#s.ext;
    if (this.#arp === undefined || this.#arpMac !== ext.mac) {
      const mac = ext.macBytes;
      const ip = TEMPLATE_IP;
      this.#arp = [
        buildGratuitousArp({ ip, mac, form: 'request' }),
        buildGratuitousArp({ ip, mac, form: 'reply' }),
      ];
      this.#arpMac = ext.mac;
    }
    return this.#arp;
  }

  #onArp(frame: Buffer): void {
    // Most ARP is about other hosts (arp-filter.ts): looked at through its IPs, not decoded.
    if (!arpMayConcern(frame, this.#arpInterest)) return;
    const d = decodeFrame(frame);
    const ours = this.#s.ext.mac;
    if (d.kind !== 'arp' || d.senderMac === ours) return;
    const dad = this.#p.dad;
    const what = d.op === ARPOP_REQUEST ? 'ARP request' : 'ARP reply';
    if (d.senderIp === '0.0.0.0') {
      // RFC 5227 2.1.1: another host probing for an address we probe for is a conflict
      if (d.op === ARPOP_REQUEST && dad.claim(d.targetIp, d.senderMac, 'ARP probe')) return;
    } else if (dad.claim(d.senderIp, d.senderMac, what)) {
      return;
    } else if (this.#p.owns(d.senderIp)) {
      this.#p.onConflict({ ip: d.senderIp, family: 4, mac: d.senderMac, what });
      return;
    }
    if (!this.#s.respondArp || d.op !== ARPOP_REQUEST || !this.#p.owns(d.targetIp)) return;
    if (d.gratuitous) return; // an announcement, not a question
    this.#respond(
      4,
      buildArpReply({
        senderMac: this.#s.ext.macBytes,
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
      if (mac === this.#s.ext.mac) return;
      const what = 'neighbor advertisement';
      if (this.#p.dad.claim(d.target, mac, what)) return;
      if (this.#p.owns(d.target)) this.#p.onConflict({ ip: d.target, family: 6, mac, what });
    } else if (type === ND_NEIGHBOR_SOLICIT) {
      const ns = decodeNeighborSolicit(frame);
      if (ns === undefined) return;
      // RFC 4862 5.4.3: another host's DAD for an address we probe for (unless it is ours)
      const what = 'neighbor solicitation from :: (duplicate address detection)';
      if (ns.srcIp === '::' && this.#p.dad.claim(ns.target, ns.ethSrc, what, ns.nonce)) return;
      if (ns.ethSrc === this.#s.ext.mac || !this.#p.owns(ns.target)) return;
      this.#respond(6, this.#advertFor(ns));
    }
  }

  /**
   * The NA the kernel would send for an address of its own (ndisc_recv_ns): to all nodes
   * for a DAD probe (solicited clear), else to the soliciting node (solicited set); override
   * and the target link-layer option only when the solicitation was multicast (or force_tllao
   * asks for the option), router flag from the forwarding setting.
   */
  #advertFor(ns: NeighborSolicit): Buffer {
    const { ext, ndp } = this.#s;
    const dad = ns.srcIp === '::';
    const multicast = dad || ns.dstIp.startsWith('ff');
    return buildNeighborAdvert({
      ethSrc: ext.macBytes,
      // RFC 4861 §7.2.4: to the soliciting node, or to all nodes when it has no address
      ethDst: dad ? undefined : (ns.sourceMac ?? ns.ethSrc),
      srcIp: ns.target,
      dstIp: dad ? ALL_NODES_IP : ns.srcIp,
      target: ns.target,
      router: ndp.router,
      solicited: !dad,
      override: multicast,
      targetMac: multicast || ndp.forceTllao ? ext.macBytes : null,
    });
  }

  #respond(family: 4 | 6, frame: Buffer): void {
    const label = family === 4 ? 'ipv4' : 'ipv6';
    try {
      if (this.#tx !== undefined) this.#send(this.#tx, frame);
      this.#p.metrics.responded(label);
      this.#p.metrics.framesSent(label);
    } catch (err) {
      this.#p.metrics.error('respond');
      this.#p.log.debug({ err: describeError(err) }, 'extip: response not sent');
    }
  }

  /** Closes every socket (the kernel leaves their groups). Idempotent; open() reopens. */
  close(): void {
    this.#closed = true;
    this.#wanted = false;
    this.#tx?.close();
    this.#tx = undefined;
    for (const s of this.#rx) s.close();
    this.#rx = [];
    this.#v6 = undefined;
    this.#naFrames.clear();
  }
}
