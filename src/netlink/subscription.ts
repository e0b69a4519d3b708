// Subscriptions: one socket per subscription, joined to rtnetlink multicast groups, that
// turns notifications into typed events and a receive overflow (ENOBUFS) into an explicit
// `overflow` event, after which the caller must resync with a dump.
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
  SIZEOF_NLMSGHDR,
} from './codec/index.js';
import type { Transport } from './client.js';

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
 * means notifications were lost — everything known may be stale; dump again.
 */
export type SubscriptionEvent = RtEvent | { kind: 'overflow'; count: number };

export interface SubscriptionStats {
  events: number;
  overflows: number;
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
export class Subscription {
  readonly #t: Transport;
  readonly #h: SubscriptionHandlers;
  readonly groups: readonly number[];
  readonly stats: SubscriptionStats = { events: 0, overflows: 0, parseErrors: 0, ignored: 0 };
  #closed = false;
  #paused = false;
  readonly #receiver: NetlinkReceiver;

  constructor(transport: Transport, groups: readonly number[], handlers: SubscriptionHandlers) {
    this.#t = transport;
    this.#h = handlers;
    this.groups = groups;
    this.#receiver = { onData: (c) => this.#onData(c), onError: (e) => this.#onError(e) };
    transport.receive(this.#receiver);
  }

  /**
   * Stops reading (false) or reads again (true). While paused, events queue in the socket
   * (and overflow it, reported as `overflow` once reading resumes, if too many arrive).
   */
  reading(on: boolean): void {
    if (this.#closed || this.#t.pause === undefined || this.#paused === !on) return;
    this.#paused = !on;
    if (on) this.#t.receive(this.#receiver);
    else this.#t.pause();
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
    let off = 0;
    while (!this.#closed && end - off >= SIZEOF_NLMSGHDR) {
      const len = chunk.readUInt32LE(off);
      if (len < SIZEOF_NLMSGHDR || len > end - off) {
        this.#parseError(new ParseError(`nlmsg_len ${len} out of bounds`, off));
        return;
      }
      if (this.#h.onMessage !== undefined) {
        let taken: boolean;
        try {
          taken = this.#h.onMessage(chunk.readUInt16LE(off + 4), chunk, off, len);
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
    if (err.fatal === true) this.stoppedBy = err;
    if (err.code === 'ENOBUFS') {
      this.stats.overflows++;
      this.#h.onEvent({ kind: 'overflow', count: this.stats.overflows });
      return;
    }
    this.#h.onError?.(err);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The error after which the socket is no longer polled: no event arrives any more. */
  stoppedBy: SystemError | undefined = undefined;

  /** The subscription keeps the event loop alive (default). */
  ref(): void {
    if (!this.#closed) this.#t.ref();
  }

  unref(): void {
    if (!this.#closed) this.#t.unref();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#t.close();
  }
}
