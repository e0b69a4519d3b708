// Handles of the other netlink protocols fibkeeper reads, over the same client and
// subscription machinery as rtnetlink: nftables (NETLINK_NETFILTER) and IPsec policy
// (NETLINK_XFRM). Each call equals an `nft` or `ip xfrm` command; the namespace is an option
// of the handle. Read only: fibkeeper looks at the node's policy, it writes none.
import { NetlinkSocket, type NetlinkSocketOptions } from '../native/index.js';
import { Client, type Transport } from './client.js';
import { nft, xfrm, type NftChain, type NftRule, type NftTable } from './codec/index.js';
import type { XfrmDefault, XfrmPolicy } from './codec/index.js';
import { Subscription, type SubscriptionHandlers } from './subscription.js';

export interface ProtocolHandleOptions {
  /** Network namespace: a name under /run/netns or an absolute path. Default: the caller's. */
  netns?: string;
  /** A request that hears nothing for this long fails (TimeoutError); default 30 s. */
  timeoutMs?: number;
  /** Opens the sockets; tests pass a fake. Default: the native NetlinkSocket. */
  openSocket?: (opts: NetlinkSocketOptions) => Transport;
}

/** What a subscriber of another protocol receives: every message, raw, or an overflow. */
export interface RawSubscriptionHandlers {
  /** Every notification (`type` its nlmsg_type); the bytes are valid only during the call. */
  onMessage(type: number, buf: Buffer, off: number, len: number): void;
  /** Notifications were lost (ENOBUFS): read everything again. */
  onOverflow(): void;
  onError?(err: Error): void;
}

class ProtocolHandle {
  protected readonly client: Client;
  readonly #opts: ProtocolHandleOptions;
  readonly #protocol: number;
  readonly #subscriptions = new Set<Subscription>();
  readonly netns: string | undefined;

  protected constructor(protocol: number, opts: ProtocolHandleOptions) {
    this.#opts = opts;
    this.#protocol = protocol;
    this.netns = opts.netns;
    const sock = this.#open({ extAck: true });
    this.client = new Client({
      transport: sock,
      window: 64,
      maxSendBytes: 64 << 10,
      dumpAttempts: 10,
      timeoutMs: opts.timeoutMs ?? 30_000,
    });
  }

  #open(o: Omit<NetlinkSocketOptions, 'protocol' | 'netns'>): Transport {
    const open = this.#opts.openSocket ?? ((x: NetlinkSocketOptions) => NetlinkSocket.open(x));
    return open({ ...o, protocol: this.#protocol, netns: this.netns });
  }

  /** Notifications of `groups` on a socket of their own (subscribe first, then dump). */
  protected subscribeGroups(groups: number[], h: RawSubscriptionHandlers): Subscription {
    const handlers: SubscriptionHandlers = {
      onMessage: (type, buf, off, len) => {
        h.onMessage(type, buf, off, len);
        return true;
      },
      onEvent: (ev) => {
        if (ev.kind === 'overflow') h.onOverflow();
      },
      ...(h.onError ? { onError: h.onError } : {}),
    };
    const sub = new Subscription(this.#open({ groups, rcvbuf: 1 << 20 }), groups, handlers);
    this.#subscriptions.add(sub);
    return sub;
  }

  /** The sockets still work (see NetlinkHandle.liveness). */
  liveness(): { ok: boolean; reasons: string[] } {
    const reasons: string[] = [];
    const what = `netlink protocol ${this.#protocol}`;
    if (this.client.closed) reasons.push(`${what}: the request socket is closed`);
    else if (this.client.stoppedBy) {
      reasons.push(`${what}: the request socket stopped receiving (${this.client.stoppedBy.code})`);
    }
    for (const sub of this.#subscriptions) {
      if (sub.closed) this.#subscriptions.delete(sub);
      else if (sub.stoppedBy) {
        reasons.push(`${what}: a subscription stopped receiving (${sub.stoppedBy.code})`);
      }
    }
    return { ok: reasons.length === 0, reasons };
  }

  /** Closes the request socket and every subscription. Idempotent. */
  close(): void {
    this.client.close();
    for (const sub of this.#subscriptions) sub.close();
    this.#subscriptions.clear();
  }
}

/** nftables, read only: each call equals an `nft list` command. */
export class NftHandle extends ProtocolHandle {
  private constructor(opts: ProtocolHandleOptions) {
    super(nft.NETLINK_NETFILTER, opts);
  }

  /** Opens the request socket (in `netns` when given). Throws SystemError. */
  static open(opts: ProtocolHandleOptions = {}): NftHandle {
    return new NftHandle(opts);
  }

  /** tableList — like `nft list tables` (every family). */
  tableList(): Promise<NftTable[]> {
    return this.client.dump(
      (w) => nft.formatNftDump(w, nft.NFT_MSG_GETTABLE),
      nft.parseNftTable,
      'nft list tables',
    );
  }

  /** chainList — like `nft list chains` (every family). */
  chainList(): Promise<NftChain[]> {
    return this.client.dump(
      (w) => nft.formatNftDump(w, nft.NFT_MSG_GETCHAIN),
      nft.parseNftChain,
      'nft list chains',
    );
  }

  /** ruleList — the rules of `nft list ruleset`, each with the names of its expressions. */
  ruleList(): Promise<NftRule[]> {
    return this.client.dump(
      (w) => nft.formatNftDump(w, nft.NFT_MSG_GETRULE),
      nft.parseNftRule,
      'nft list ruleset',
    );
  }

  /** generation — the ruleset's generation id (every committed change raises it). */
  generation(): Promise<number> {
    return this.client.get((w) => nft.formatNftGetGen(w), nft.parseNftGen, 'nft generation');
  }

  /** Every nf_tables change (like `nft monitor`); each transaction ends with NFT_MSG_NEWGEN. */
  subscribe(h: RawSubscriptionHandlers): Subscription {
    return this.subscribeGroups([nft.NFNLGRP_NFTABLES], h);
  }
}

/** IPsec policy, read only: each call equals an `ip xfrm policy` command. */
export class XfrmHandle extends ProtocolHandle {
  private constructor(opts: ProtocolHandleOptions) {
    super(xfrm.NETLINK_XFRM, opts);
  }

  /** Opens the request socket (in `netns` when given). Throws SystemError. */
  static open(opts: ProtocolHandleOptions = {}): XfrmHandle {
    return new XfrmHandle(opts);
  }

  /** policyList — like `ip xfrm policy list`. */
  policyList(): Promise<XfrmPolicy[]> {
    return this.client.dump(
      (w) => xfrm.formatXfrmPolicyDump(w),
      xfrm.parseXfrmPolicy,
      'ip xfrm policy list',
    );
  }

  /** policyDefault — like `ip xfrm policy getdefault`. */
  policyDefault(): Promise<XfrmDefault> {
    return this.client.get(
      (w) => xfrm.formatXfrmGetDefault(w),
      xfrm.parseXfrmDefault,
      'ip xfrm policy getdefault',
    );
  }

  /** Policy changes and a changed default (like `ip xfrm monitor policy`). */
  subscribe(h: RawSubscriptionHandlers): Subscription {
    return this.subscribeGroups([xfrm.XFRMNLGRP_POLICY], h);
  }
}
