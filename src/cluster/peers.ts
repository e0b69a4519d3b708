// The other members as this node hears them on the segment: a heartbeat to each every
// `intervalMs` (UDP, through an injected transport, like VRRP's advertisements), and three
// things learnt from theirs:
//
//  - Death, at once. A heartbeat to a process that is gone is refused by its kernel (ICMP
//    port unreachable: nothing listens on the port any more), and a restarted agent speaks
//    with a new incarnation. Either proves that the incarnation we knew is dead, and with it
//    its cluster holder (a TUN device that dies with the process): its lease may be revoked
//    and its IPs taken over at once. A refusal counts only from a peer that had been
//    answering us (it echoed our heartbeats) and has been quiet for 1.5 intervals, so a
//    firewall that rejects the port never reads as a death.
//  - Silence: no heartbeat for `timeoutMs` from a peer heard in its current lease — a hung
//    process, a lost link, a partition. The kernel fence bounds what its node can still
//    answer; the member fences it in etcd (revoke with a cool-down, takeover.ts).
//  - Promises, for etcd outages. A node that cannot reach etcd says so in every heartbeat,
//    and by saying so promises not to claim any IP for `graceMs` from that moment (its
//    noClaimUntil). Each heartbeat echoes the last token (send time) it received from its
//    recipient, so a promise received by X holds at least until X's own token + graceMs,
//    on X's own clock — timed from X's send, as a lease keep-alive is. While every other
//    member has promised, no one can take an IP over, and a holder that lost etcd may keep
//    its IPs until the earliest of those promises ends (graceUntil).
//
// Pure: the sockets are the transport's (peer-udp.ts), time is the injected clock.
import { randomBytes } from 'node:crypto';
import { Timer, type Clock } from '../sched/index.js';

export interface PeerAddress {
  readonly ip: string;
  readonly port: number;
}

export interface PeerTransportHandlers {
  onMessage(msg: Buffer): void;
  /** A heartbeat to `node` was refused (its kernel: nothing listens there). */
  onRefused(node: string): void;
}

/** The heartbeat's sockets. */
export interface PeerTransport {
  /** Where heartbeats reach this node (published in its member key). */
  readonly local: PeerAddress;
  /** Starts listening. */
  open(handlers: PeerTransportHandlers): Promise<void>;
  /** Heartbeats to `node` go to `addr` (a socket of its own); replaces an older one. */
  connect(node: string, addr: PeerAddress): void;
  disconnect(node: string): void;
  /** Sends one datagram to `node`; never throws (a failure is a lost heartbeat). */
  send(node: string, msg: Buffer): void;
  close(): void;
}

/** What this node says of itself in each heartbeat. */
export interface LocalState {
  lease: string | undefined;
  /** It cannot prove its lease (etcd out of reach): promises not to claim for graceMs. */
  promising: boolean;
  /** It holds IPs beyond its lease on the others' promises. */
  grace: boolean;
}

export interface PeerEvents {
  /** The incarnation that held `lease` is dead (refused, or a new incarnation spoke). */
  onDead(node: string, lease: string, why: 'refused' | 'restarted'): void;
  /** No heartbeat from `node` for timeoutMs, in its member lease `lease`. */
  onSilent(node: string, lease: string): void;
  /** A promise arrived, or a peer changed state: grace may have moved. */
  onChange(): void;
  /**
   * This node hears none of its (two or more) peers any more, or hears some again: cut off
   * from the segment, it should hold nothing (its peers will take its IPs over).
   */
  onIsolated?(isolated: boolean): void;
}

export interface PeerMonitorParams {
  node: string;
  transport: PeerTransport;
  clock: Clock;
  intervalMs: number;
  timeoutMs: number;
  graceMs: number;
  local: () => LocalState;
  events: PeerEvents;
  /** Runs `fn` after pending I/O has been read (setImmediate); tests run it at once. */
  defer?: (fn: () => void) => void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** A heartbeat on the wire (JSON). */
interface Heartbeat {
  v: 1;
  /** node name */
  n: string;
  /** incarnation: random per process */
  i: string;
  /** lease, or null */
  l: string | null;
  /** sender's clock when sent (echoed back by the recipient) */
  t: number;
  /** the last `t` the sender received from the recipient, or null */
  e: number | null;
  /** promising (etcd out of reach) */
  d: boolean;
  /** holding on grace */
  g: boolean;
}

interface Peer {
  node: string;
  addr: PeerAddress | undefined;
  /** The lease of its member key (the view's). */
  memberLease: string;
  inc: string | undefined;
  /** The lease its current incarnation announced. */
  lease: string | undefined;
  lastHeard: number;
  /** It echoed one of our tokens in this incarnation: it hears us. */
  acked: boolean;
  /** The last token it sent us (we echo it). */
  echo: number | null;
  /** Our clock: until when its promises hold (−∞: none). */
  promiseUntil: number;
  /** It holds on grace (its last heartbeat said so). */
  grace: boolean;
  promising: boolean;
  /** Heard in its current member lease (silence counts only then). */
  heardInLease: boolean;
  silentReported: string | undefined;
  deadReported: Set<string>;
}

export interface PeerStatus {
  node: string;
  heardAgoMs: number | undefined;
  acked: boolean;
  promising: boolean;
  grace: boolean;
  promiseForMs: number | undefined;
}

/** A promise's end, as the receiver counts it: a little early (clock rates, rounding). */
const PROMISE_MARGIN_MS = 10;

export class PeerMonitor {
  readonly incarnation = randomBytes(6).toString('hex');
  readonly #p: PeerMonitorParams;
  readonly #peers = new Map<string, Peer>();
  readonly #defer: (fn: () => void) => void;
  /** The next heartbeat round. */
  readonly #timer: Timer;
  #stopped = true;
  #noClaimUntil = -Infinity;
  #startedAt = 0;
  #isolated = false;

  constructor(p: PeerMonitorParams) {
    this.#p = p;
    this.#timer = new Timer(p.clock);
    this.#defer = p.defer ?? ((fn) => setImmediate(fn));
  }

  get local(): PeerAddress {
    return this.#p.transport.local;
  }

  /** Claims must wait until then: the promises this node made while it had no etcd. */
  get noClaimUntil(): number {
    return this.#noClaimUntil;
  }

  async start(): Promise<void> {
    await this.#p.transport.open({
      onMessage: (m) => this.#onMessage(m),
      onRefused: (n) => this.#onRefused(n),
    });
    this.#stopped = false;
    this.#startedAt = this.#p.clock.now();
    // An earlier process of this node may have promised (it cannot tell us): claim nothing
    // for a promise's length.
    this.#noClaimUntil = this.#startedAt + this.#p.graceMs;
    this.#tick();
  }

  /**
   * True while this node has two or more peers that heartbeat and has heard none of them for
   * the timeout (judged only once it has run for that long).
   */
  get isolated(): boolean {
    return this.#isolated;
  }

  #judgeIsolation(now: number): void {
    const speaking = [...this.#peers.values()].filter((p) => p.addr !== undefined);
    const isolated =
      now - this.#startedAt >= this.#p.timeoutMs &&
      speaking.length >= 2 &&
      speaking.every((p) => now - p.lastHeard >= this.#p.timeoutMs);
    if (isolated === this.#isolated) return;
    this.#isolated = isolated;
    this.#p.log?.(
      isolated ? 'cluster: no peer heard: cut off from the segment' : 'cluster: peers heard again',
      {
        peers: speaking.length,
      },
    );
    this.#p.events.onIsolated?.(isolated);
  }

  stop(): void {
    this.#stopped = true;
    this.#timer.cancel();
    this.#p.transport.close();
  }

  /** The other members as the view has them (name → member lease, heartbeat address). */
  setMembers(members: ReadonlyMap<string, { lease: string; hb?: PeerAddress }>): void {
    for (const [node, p] of this.#peers) {
      if (members.has(node)) continue;
      this.#peers.delete(node);
      if (p.addr) this.#p.transport.disconnect(node);
    }
    for (const [node, m] of members) {
      if (node === this.#p.node) continue;
      let p = this.#peers.get(node);
      if (p === undefined) {
        p = newPeer(node, m.lease);
        this.#peers.set(node, p);
      }
      if (p.memberLease !== m.lease) {
        p.memberLease = m.lease;
        p.heardInLease = p.lease === m.lease;
      }
      const addr = m.hb;
      if (addr && (p.addr?.ip !== addr.ip || p.addr?.port !== addr.port)) {
        p.addr = addr;
        this.#p.transport.connect(node, addr);
      } else if (!addr && p.addr) {
        p.addr = undefined;
        this.#p.transport.disconnect(node);
      }
    }
  }

  /**
   * Until when this node may hold its IPs on the others' promises (clock ms): the earliest
   * promise of the other members; undefined when one of them has made none that holds now.
   * With no other member, a moving `now + graceMs`.
   */
  graceUntil(): number | undefined {
    const now = this.#p.clock.now();
    let until = now + this.#p.graceMs;
    for (const p of this.#peers.values()) {
      if (p.promiseUntil <= now) return undefined;
      until = Math.min(until, p.promiseUntil);
    }
    return until;
  }

  /**
   * Whether this node hears most of the other members besides `node` (heard within the
   * timeout): the side of a split segment that may fence `node`. A node cut off from the
   * segment hears none of them and fences no one (vacuously true with no one else).
   */
  hearsMostBesides(node: string): boolean {
    const now = this.#p.clock.now();
    let others = 0;
    let heard = 0;
    for (const p of this.#peers.values()) {
      if (p.node === node) continue;
      others++;
      if (now - p.lastHeard < this.#p.timeoutMs) heard++;
    }
    return heard * 2 >= others;
  }

  /** Peers that last said they hold on grace (their IPs may be answered past their lease). */
  graceHolders(): string[] {
    return [...this.#peers.values()].filter((p) => p.grace).map((p) => p.node);
  }

  status(): PeerStatus[] {
    const now = this.#p.clock.now();
    return [...this.#peers.values()]
      .map((p) => ({
        node: p.node,
        heardAgoMs: Number.isFinite(p.lastHeard) ? Math.round(now - p.lastHeard) : undefined,
        acked: p.acked,
        promising: p.promising,
        grace: p.grace,
        promiseForMs: p.promiseUntil > now ? Math.round(p.promiseUntil - now) : undefined,
      }))
      .sort((a, b) => (a.node < b.node ? -1 : 1));
  }

  #tick(): void {
    if (this.#stopped) return;
    this.#timer.start(this.#p.intervalMs, () => this.#tick());
    const now = this.#p.clock.now();
    const local = this.#p.local();
    // Sending while promising is the promise: honoured from now on, whatever follows.
    if (local.promising) this.#noClaimUntil = Math.max(this.#noClaimUntil, now + this.#p.graceMs);
    for (const p of this.#peers.values()) {
      if (!p.addr) continue;
      const hb: Heartbeat = {
        v: 1,
        n: this.#p.node,
        i: this.incarnation,
        l: local.lease ?? null,
        t: now,
        e: p.echo,
        d: local.promising,
        g: local.grace,
      };
      this.#p.transport.send(p.node, Buffer.from(JSON.stringify(hb)));
    }
    // Silence is judged after the I/O already queued has been read: a process that was
    // itself stopped reads its peers' heartbeats before it calls anyone silent.
    this.#defer(() => this.#checkSilence());
  }

  #checkSilence(): void {
    if (this.#stopped) return;
    const now = this.#p.clock.now();
    let changed = false;
    for (const p of this.#peers.values()) {
      if (p.promiseUntil !== -Infinity && p.promiseUntil <= now) {
        p.promiseUntil = -Infinity;
        changed = true;
      }
      if (!p.heardInLease || p.silentReported === p.memberLease) continue;
      if (now - p.lastHeard < this.#p.timeoutMs) continue;
      p.silentReported = p.memberLease;
      this.#p.log?.('cluster peer silent', { node: p.node, heardAgoMs: now - p.lastHeard });
      this.#p.events.onSilent(p.node, p.memberLease);
    }
    if (changed) this.#p.events.onChange();
    this.#judgeIsolation(now);
  }

  #onMessage(buf: Buffer): void {
    if (this.#stopped) return;
    const m = parseHeartbeat(buf);
    if (m === undefined || m.n === this.#p.node) return;
    const p = this.#peers.get(m.n);
    if (p === undefined) return; // not a member (yet): its key will come
    const now = this.#p.clock.now();
    if (p.inc !== undefined && p.inc !== m.i) {
      const old = p.lease;
      p.acked = false;
      p.promiseUntil = -Infinity;
      if (old !== undefined && !p.deadReported.has(old)) {
        p.deadReported.add(old);
        this.#p.log?.('cluster peer restarted', { node: p.node, lease: old });
        this.#p.events.onDead(p.node, old, 'restarted');
      }
    }
    p.inc = m.i;
    p.lease = m.l ?? undefined;
    p.lastHeard = now;
    p.echo = m.t;
    p.promising = m.d;
    p.grace = m.g;
    if (m.l !== null && m.l === p.memberLease) {
      p.heardInLease = true;
      if (p.silentReported === m.l) p.silentReported = undefined; // back: it may go silent again
    }
    if (m.e !== null && m.e <= now) {
      p.acked = true;
      if (m.d) p.promiseUntil = Math.max(p.promiseUntil, m.e + this.#p.graceMs - PROMISE_MARGIN_MS);
    }
    this.#p.events.onChange();
    if (this.#isolated) this.#judgeIsolation(now);
  }

  #onRefused(node: string): void {
    const p = this.#peers.get(node);
    if (this.#stopped || p === undefined || !p.acked || p.lease === undefined) return;
    const now = this.#p.clock.now();
    if (now - p.lastHeard < 1.5 * this.#p.intervalMs) return; // still speaking: not a death
    if (p.deadReported.has(p.lease)) return;
    p.deadReported.add(p.lease);
    p.promiseUntil = -Infinity;
    this.#p.log?.('cluster peer dead (heartbeat refused)', { node, lease: p.lease });
    this.#p.events.onDead(node, p.lease, 'refused');
  }
}

function newPeer(node: string, memberLease: string): Peer {
  return {
    node,
    addr: undefined,
    memberLease,
    inc: undefined,
    lease: undefined,
    lastHeard: -Infinity,
    acked: false,
    echo: null,
    promiseUntil: -Infinity,
    grace: false,
    promising: false,
    heardInLease: false,
    silentReported: undefined,
    deadReported: new Set(),
  };
}

function parseHeartbeat(buf: Buffer): Heartbeat | undefined {
  let m: unknown;
  try {
    m = JSON.parse(buf.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof m !== 'object' || m === null) return undefined;
  const h = m as Record<string, unknown>;
  if (h['v'] !== 1 || typeof h['n'] !== 'string' || typeof h['i'] !== 'string') return undefined;
  if (typeof h['t'] !== 'number' || typeof h['d'] !== 'boolean' || typeof h['g'] !== 'boolean')
    return undefined;
  if (!(h['l'] === null || typeof h['l'] === 'string')) return undefined;
  if (!(h['e'] === null || typeof h['e'] === 'number')) return undefined;
  return h as unknown as Heartbeat;
}
