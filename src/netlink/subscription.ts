// Subscriptions: one socket per subscription, joined to rtnetlink multicast groups, that
// turns notifications into typed events and a receive overflow (ENOBUFS) into an explicit
// `overflow` event, after which the caller must resync with a dump. Any other loss is an
// `overflow` too: a datagram that did not fit (EMSGSIZE) or arrived cut short; and after
// any other receive error, or when the socket stopped answering the liveness probes
// (health.ts), the subscription replaces its socket with a fresh one first (`cause` names
// why), so that the caller's dump starts from a socket that works.
import { InvalidArgumentError } from '../errors/index.js';
import type { NetlinkReceiver, SystemError } from '../native/index.js';
import {
  ParseError,
  parseRtEvent,
  type RtEvent,
  RTNLGRP_IPV4_IFADDR,
  RTNLGRP_IPV4_ROUTE,
  RTNLGRP_IPV4_RULE,
  RTNLGRP_IPV6_IFADDR,
  RTNLGRP_IPV6_ROUTE,
  RTNLGRP_IPV6_RULE,
  RTNLGRP_LINK,
  RTNLGRP_NEIGH,
  NLM_F_ACK,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_NOOP,
  SIZEOF_NLMSGHDR,
} from './codec/index.js';
import type { Transport } from './client.js';
import type { Probed, SocketName } from './health.js';
import { u16le, u32le, w16le, w32le } from '../util/index.js';

/** Named groups: `address`, `route` and `rule` cover both IPv4 and IPv6. */
export type GroupName =
  | 'link'
  | 'neigh'
  | 'address'
  | 'ipv4-address'
  | 'ipv6-address'
  | 'route'
  | 'ipv4-route'
  | 'ipv6-route'
  | 'rule'
  | 'ipv4-rule'
  | 'ipv6-rule';

const GROUPS: Record<GroupName, number[]> = {
  link: [RTNLGRP_LINK],
  neigh: [RTNLGRP_NEIGH],
  address: [RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR],
  'ipv4-address': [RTNLGRP_IPV4_IFADDR],
  'ipv6-address': [RTNLGRP_IPV6_IFADDR],
  route: [RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE],
  'ipv4-route': [RTNLGRP_IPV4_ROUTE],
  'ipv6-route': [RTNLGRP_IPV6_ROUTE],
  rule: [RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE],
  'ipv4-rule': [RTNLGRP_IPV4_RULE],
  'ipv6-rule': [RTNLGRP_IPV6_RULE],
};

/** Group numbers (RTNLGRP_*) for names or numbers, deduplicated. */
export function groupNumbers(groups: readonly (GroupName | number)[]): number[] {
  const out = new Set<number>();
  for (const g of groups) {
    if (typeof g === 'number') {
      if (!Number.isInteger(g) || g < 1) throw new InvalidArgumentError(`bad group ${g}`);
      out.add(g);
    } else {
      const nums = GROUPS[g];
      if (!nums) throw new InvalidArgumentError(`unknown group ${JSON.stringify(g)}`);
      for (const n of nums) out.add(n);
    }
  }
  return [...out];
}

/**
 * What a subscriber receives: a change (`new` covers add and update) or `overflow`, which
 * means notifications were lost — everything known may be stale; dump again. `cause`: the
 * errno name (ENOBUFS for a plain overflow; ETIMEDOUT: the socket stopped answering) or
 * "malformed"; `reopened`: the subscription is on a fresh socket now.
 */
export type SubscriptionEvent =
  RtEvent | { kind: 'overflow'; count: number; cause: string; reopened: boolean };

/** How a subscription is opened, beyond its groups and handlers (NetlinkHandle.subscribe). */
export interface SubscriptionOptions {
  /** Its name for liveness and metrics; default "link". */
  socketName?: SocketName;
  /** Opens a fresh socket with the same groups; without it a broken socket stays broken. */
  reopen?: () => Transport;
  /** The socket was replaced after `cause`, or could not be (`err`). */
  reopened?: (cause: string, err?: unknown) => void;
  /** The clock of lastHeard; default Date.now. */
  now?: () => number;
}

/** Receive errors after which the socket works on (events were lost: resync). */
const LOSSES = new Set(['ENOBUFS', 'EMSGSIZE']);

export interface SubscriptionStats {
  events: number;
  overflows: number;
  /** Times the socket was replaced after an error or silence. */
  reopens: number;
  /** Messages that did not parse (reported to onError when given). */
  parseErrors: number;
  /** Messages of types this codec does not decode (ignored). */
  ignored: number;
}

export interface SubscriptionHandlers {
  /**
   * Optional, called first for every message (header included, `type` its nlmsg_type);
   * return true when the handler has taken it, which is then not parsed into an event. For
   * hot paths that decode a message themselves without allocating (readNeighFields). The
   * bytes are valid only during the call. A ParseError thrown here counts as a parse error.
   */
  onMessage?(type: number, buf: Buffer, off: number, len: number): boolean;
  /**
   * Called synchronously for every event, in kernel order. An exception thrown here
   * surfaces as an uncaught exception, as from any event callback.
   */
  onEvent(ev: SubscriptionEvent): void;
  /** A message that does not parse, or a fatal receive error. */
  onError?(err: Error): void;
}

/** A live subscription; close() leaves the groups and closes its socket. Idempotent. */
export class Subscription implements Probed {
  #t: Transport;
  readonly #h: SubscriptionHandlers;
  readonly #o: SubscriptionOptions;
  readonly groups: readonly number[];
  readonly socketName: SocketName;
  readonly stats: SubscriptionStats = {
    events: 0,
    overflows: 0,
    reopens: 0,
    parseErrors: 0,
    ignored: 0,
  };
  #closed = false;
  #paused = false;
  #referenced = true;
  #receiver!: NetlinkReceiver;
  #probeSeq = 1;
  /** Clock time of the last datagram received (events and probe acks). */
  lastHeard: number;

  constructor(
    transport: Transport,
    groups: readonly number[],
    handlers: SubscriptionHandlers,
    opts: SubscriptionOptions = {},
  ) {
    this.#t = transport;
    this.#h = handlers;
    this.#o = opts;
    this.groups = groups;
    this.socketName = opts.socketName ?? 'link';
    this.lastHeard = this.#now();
    this.#attach(transport);
  }

  #now(): number {
    return this.#o.now?.() ?? Date.now();
  }

  /** Receives on `t` from now on; a replaced socket's leftovers are ignored. */
  #attach(t: Transport): void {
    this.#t = t;
    const receiver: NetlinkReceiver = {
      onData: (c) => {
        if (receiver === this.#receiver) this.#onData(c);
      },
      onError: (e) => {
        if (receiver === this.#receiver) this.#onError(e);
      },
    };
    this.#receiver = receiver;
    if (!this.#referenced) t.unref();
    if (!this.#paused) t.receive(receiver);
  }

  /**
   * Stops reading (false) or reads again (true). While paused, events queue in the socket
   * (and overflow it, reported as `overflow` once reading resumes, if too many arrive).
   */
  reading(on: boolean): void {
    if (this.#closed || this.#t.pause === undefined || this.#paused === !on) return;
    this.#paused = !on;
    if (on) {
      this.lastHeard = this.#now(); // the silence while paused was ours
      this.#t.receive(this.#receiver);
    } else this.#t.pause();
  }

  /**
   * Bytes of events waiting in the socket, unread (the kernel's count: each event's skb
   * truesize); undefined when the transport cannot tell, or once closed.
   */
  queuedBytes(): number | undefined {
    if (this.#closed) return undefined;
    return this.#t.queuedBytes?.();
  }

  /** Whether reading is paused (reading(false)). */
  get paused(): boolean {
    return this.#paused;
  }

  #onData(chunk: Buffer): void {
    const end = chunk.length;
    this.lastHeard = this.#now();
    let off = 0;
    while (!this.#closed && off < end) {
      const len = end - off >= SIZEOF_NLMSGHDR ? u32le(chunk, off) : 0;
      if (len < SIZEOF_NLMSGHDR || len > end - off) {
        // Cut short: the event it held is lost.
        this.#parseError(new ParseError(`nlmsg_len ${len} out of bounds`, off));
        this.#lost('malformed', false);
        return;
      }
      const type = u16le(chunk, off + 4);
      if (type === NLMSG_ERROR || type === NLMSG_DONE) {
        off += (len + 3) & ~3; // the ack of a liveness probe
        continue;
      }
      if (this.#h.onMessage !== undefined) {
        let taken: boolean;
        try {
          taken = this.#h.onMessage(type, chunk, off, len);
        } catch (err) {
          if (!(err instanceof ParseError)) throw err;
          this.#parseError(err);
          off += (len + 3) & ~3;
          continue;
        }
        if (taken) {
          off += (len + 3) & ~3;
          this.stats.events++;
          continue;
        }
      }
      let ev: RtEvent | undefined;
      try {
        ev = parseRtEvent(chunk, off, len);
      } catch (err) {
        this.#parseError(err as Error);
        off += (len + 3) & ~3;
        continue;
      }
      off += (len + 3) & ~3;
      if (ev === undefined) {
        this.stats.ignored++;
        continue;
      }
      this.stats.events++;
      this.#h.onEvent(ev);
    }
  }

  #parseError(err: Error): void {
    this.stats.parseErrors++;
    this.#h.onError?.(err);
  }

  #onError(err: SystemError): void {
    if (this.#closed) return;
    if (LOSSES.has(err.code)) {
      this.#lost(err.code, false);
      return;
    }
    if (err.fatal === true) this.stoppedBy = err;
    this.#h.onError?.(err);
    this.reopen(err.code);
  }

  /** Events were lost (and the socket replaced, when `reopened`): the reader resyncs. */
  #lost(cause: string, reopened: boolean): void {
    this.stats.overflows++;
    this.#h.onEvent({ kind: 'overflow', count: this.stats.overflows, cause, reopened });
  }

  /** A liveness probe (health.ts): a NOOP asking for an ack, which the kernel answers here. */
  sendProbe(): boolean {
    if (this.#closed) return false;
    const h = Buffer.alloc(SIZEOF_NLMSGHDR);
    w32le(h, SIZEOF_NLMSGHDR, 0);
    w16le(h, NLMSG_NOOP, 4);
    w16le(h, NLM_F_REQUEST | NLM_F_ACK, 6);
    w32le(h, this.#probeSeq++, 8);
    try {
      this.#t.send(h);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Replaces the socket with a fresh one after `cause` (an errno name; ETIMEDOUT: deaf) and
   * tells the reader that events were lost. When no fresh one can be opened the old one
   * stays (the next liveness round tries again); the failure goes to `reopened`.
   */
  reopen(cause: string): void {
    const open = this.#o.reopen;
    if (this.#closed || open === undefined) return;
    let fresh: Transport;
    try {
      fresh = open();
    } catch (err) {
      this.#o.reopened?.(cause, err);
      return;
    }
    const old = this.#t;
    this.#attach(fresh);
    this.stoppedBy = undefined;
    this.stats.reopens++;
    try {
      old.close();
    } catch {
      /* closing a broken socket is best effort */
    }
    this.#o.reopened?.(cause);
    this.#lost(cause, true);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The error after which the socket is no longer polled: no event arrives any more. */
  stoppedBy: SystemError | undefined = undefined;

  /** The subscription keeps the event loop alive (default). */
  ref(): void {
    this.#referenced = true;
    if (!this.#closed) this.#t.ref();
  }

  unref(): void {
    this.#referenced = false;
    if (!this.#closed) this.#t.unref();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#t.close();
  }
}
