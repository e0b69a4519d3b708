// Reading the node's policy from the kernel (policy.ts computes what it means), and noticing
// when it changes. Where the kernel announces changes, the watcher listens: nftables
// (nfnetlink group NFNLGRP_NFTABLES; every committed transaction ends with NFT_MSG_NEWGEN),
// tc (rtnetlink group RTNLGRP_TC: qdiscs, filters, chains) and xfrm (NETLINK_XFRM group
// XFRMNLGRP_POLICY: policies and the defaults). What raises no event is polled: the legacy
// iptables tables and the programs on a device's tcx hooks (poll()).
//
// Dumps of nftables and xfrm are kept until an event (or an overflow of its socket) says they
// changed; tc, the legacy tables and tcx are read on every pass. Whatever cannot be read
// counts as policy (policy.ts): the frames it might act on go to the kernel.
import { existsSync } from 'node:fs';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import {
  NftHandle,
  nft,
  RTNLGRP_TC,
  TC_PARENT_EGRESS,
  TC_PARENT_INGRESS,
  XfrmHandle,
  type NetlinkHandle,
  type Subscription,
  type XfrmDefault,
} from '../netlink/index.js';
import { runInNetns, tcxQuery } from '../native/index.js';
import type { PolicySources } from './policy.js';
import { readLegacyTables } from './policy-legacy.js';

/**
 * How soon a change of the node's policy takes effect (README "Know before you deploy";
 * test/fib/policy-live.netns.test.ts holds the forwarder to it): a change the kernel
 * announces (nftables, tc, xfrm) within eventMs of the command that made it; one it does not
 * (legacy iptables, tcx programs), within pollMs with the default poll of 1 s.
 */
export const POLICY_BOUNDS = { eventMs: 1000, pollMs: 2000 } as const;

export interface PolicyWatcherParams {
  netns: string | undefined;
  /** The forwarder's rtnetlink handle (tc dumps and the tc subscription). */
  nl: NetlinkHandle;
  log: Logger;
  /** Called when an event says the policy changed (the forwarder schedules a pass). */
  onChange: () => void;
}

type Nft = PolicySources['nft'];
type Xfrm = PolicySources['xfrm'];

const errText = (err: unknown) => describeError(err);
const NEWGEN = nft.nftType(nft.NFT_MSG_NEWGEN);

/** errno names that say the kernel has no such facility at all (nothing to read). */
function absent(err: unknown): boolean {
  const e = err as { code?: string; errnoName?: string };
  const name = e.errnoName ?? e.code;
  return name === 'EPROTONOSUPPORT' || name === 'EOPNOTSUPP' || name === 'ENOENT';
}

export class PolicyWatcher {
  readonly #p: PolicyWatcherParams;
  #nft: NftHandle | undefined | null = null;
  #xfrm: XfrmHandle | undefined | null = null;
  readonly #subs: { nft?: Subscription; xfrm?: Subscription; tc?: Subscription } = {};
  #nftCache: Nft | undefined;
  #xfrmCache: Xfrm | undefined;
  /** Events per source so far: a read that an event overtook is not kept. */
  #epoch = { nft: 0, xfrm: 0 };
  #lastPolled = '';
  #stopped = false;

  constructor(p: PolicyWatcherParams) {
    this.#p = p;
  }

  /** Subscribes to every source that announces changes (call before the first read()). */
  start(): void {
    this.#subscribe();
  }

  #changed(source: 'nft' | 'xfrm' | 'tc'): void {
    if (source === 'nft') {
      this.#epoch.nft++;
      this.#nftCache = undefined;
    }
    if (source === 'xfrm') {
      this.#epoch.xfrm++;
      this.#xfrmCache = undefined;
    }
    if (!this.#stopped) this.#p.onChange();
  }

  #subscribe(): void {
    const { log } = this.#p;
    const onError = (what: string) => (err: Error) =>
      log.warn({ err: errText(err) }, `xdp: ${what} events`);
    if (this.#subs.tc === undefined || this.#subs.tc.closed || this.#subs.tc.stoppedBy) {
      this.#subs.tc?.close();
      this.#subs.tc = this.#p.nl.subscribe([RTNLGRP_TC], {
        onMessage: () => {
          this.#changed('tc');
          return true;
        },
        onEvent: () => this.#changed('tc'), // an overflow: read everything again
        onError: onError('tc'),
      });
      this.#subs.tc.unref();
    }
    const nftH = this.#nftHandle();
    if (
      nftH &&
      (this.#subs.nft === undefined || this.#subs.nft.closed || this.#subs.nft.stoppedBy)
    ) {
      this.#subs.nft?.close();
      this.#subs.nft = nftH.subscribe({
        onMessage: (type) => {
          if (type === NEWGEN) this.#changed('nft');
        },
        onOverflow: () => this.#changed('nft'),
        onError: onError('nftables'),
      });
      this.#subs.nft.unref();
      this.#nftCache = undefined;
    }
    const xfrmH = this.#xfrmHandle();
    if (
      xfrmH &&
      (this.#subs.xfrm === undefined || this.#subs.xfrm.closed || this.#subs.xfrm.stoppedBy)
    ) {
      this.#subs.xfrm?.close();
      this.#subs.xfrm = xfrmH.subscribe({
        onMessage: () => this.#changed('xfrm'),
        onOverflow: () => this.#changed('xfrm'),
        onError: onError('xfrm'),
      });
      this.#subs.xfrm.unref();
      this.#xfrmCache = undefined;
    }
  }

  /** The nftables handle; undefined when this kernel has no nfnetlink (no nftables at all). */
  #nftHandle(): NftHandle | undefined {
    if (this.#nft !== null) return this.#nft;
    try {
      this.#nft = NftHandle.open(this.#opts());
    } catch (err) {
      if (!absent(err)) throw err;
      this.#p.log.info({ err: errText(err) }, 'xdp: no nfnetlink in this kernel: no nftables');
      this.#nft = undefined;
    }
    return this.#nft;
  }

  #xfrmHandle(): XfrmHandle | undefined {
    if (this.#xfrm !== null) return this.#xfrm;
    try {
      this.#xfrm = XfrmHandle.open(this.#opts());
    } catch (err) {
      if (!absent(err)) throw err;
      this.#xfrm = undefined;
    }
    return this.#xfrm;
  }

  #opts(): { netns?: string } {
    return this.#p.netns === undefined ? {} : { netns: this.#p.netns };
  }

  async #readNft(): Promise<Nft> {
    const h = this.#nftHandle();
    if (h === undefined) return { tables: [], chains: [], rules: [] };
    for (let attempt = 0; ; attempt++) {
      try {
        const gen = await h.generation();
        const tables = await h.tableList();
        const chains = await h.chainList();
        const rules = await h.ruleList();
        // one generation from the first dump to the last, or try again
        if ((await h.generation()) === gen || attempt >= 4) return { tables, chains, rules };
      } catch (err) {
        if (absent(err)) return { tables: [], chains: [], rules: [] }; // no nf_tables module
        return { error: errText(err) };
      }
    }
  }

  async #readXfrm(): Promise<Xfrm> {
    const h = this.#xfrmHandle();
    if (h === undefined) {
      // no NETLINK_XFRM: without xfrm in the kernel there is no policy; with it (PF_KEY
      // only), the policies cannot be read
      const xfrm = existsSync('/proc/sys/net/core/xfrm_acq_expires');
      return xfrm
        ? { error: 'this kernel has xfrm but no NETLINK_XFRM (xfrm_user)' }
        : { policies: [], defaults: undefined };
    }
    try {
      const policies = await h.policyList();
      let defaults: XfrmDefault | undefined;
      try {
        defaults = await h.policyDefault();
      } catch (err) {
        // before Linux 5.16 there is no default policy: every direction accepts
        const name = (err as { errnoName?: string }).errnoName;
        if (name !== 'EINVAL' && name !== 'EOPNOTSUPP') throw err;
      }
      return { policies, defaults };
    } catch (err) {
      return { error: errText(err) };
    }
  }

  async #readTc(ifindexes: readonly number[]): Promise<PolicySources['tc']> {
    try {
      const qdiscs = await this.#p.nl.qdiscList();
      const filters: Extract<PolicySources['tc'], { filters: unknown }>['filters'] = [];
      // clsact has an ingress and an egress block; the ingress qdisc only an ingress one (asked
      // for its egress, the kernel would answer with the ingress filters)
      const blocks: [number, 'ingress' | 'egress', number][] = [];
      for (const q of qdiscs) {
        if (q.kind !== 'clsact' && q.kind !== 'ingress') continue;
        blocks.push([q.ifindex, 'ingress', TC_PARENT_INGRESS]);
        if (q.kind === 'clsact') blocks.push([q.ifindex, 'egress', TC_PARENT_EGRESS]);
      }
      for (const [ifindex, direction, parent] of blocks) {
        for (const f of await this.#p.nl.filterList(ifindex, parent)) {
          // the dump lists each priority's head (handle 0) before its filters
          if (f.handle !== 0) filters.push({ ...f, direction });
        }
      }
      return { qdiscs, filters, tcx: this.#readTcx(ifindexes) };
    } catch (err) {
      return { error: errText(err) };
    }
  }

  #readTcx(ifindexes: readonly number[]) {
    const out: { ifindex: number; direction: 'ingress' | 'egress'; progIds: number[] }[] = [];
    const read = () => {
      for (const ifindex of ifindexes) {
        for (const direction of ['ingress', 'egress'] as const) {
          try {
            const ids = tcxQuery(ifindex, direction);
            if (ids === undefined) return; // no tcx in this kernel
            if (ids.length > 0) out.push({ ifindex, direction, progIds: ids });
          } catch (err) {
            // the device went away meanwhile: the next pass will not ask
            if ((err as { code?: string }).code !== 'ENODEV') throw err;
          }
        }
      }
    };
    if (this.#p.netns === undefined) read();
    else runInNetns(this.#p.netns, read);
    return out;
  }

  #readLegacy(): PolicySources['legacy'] {
    try {
      return readLegacyTables(this.#p.netns);
    } catch (err) {
      return { error: errText(err) };
    }
  }

  /**
   * Everything the kernel holds that acts on forwarded frames of `ifindexes` (the devices
   * whose tcx hooks are asked): nftables and xfrm from the last dump unless an event said they
   * changed; tc, legacy tables and tcx read now.
   */
  async read(ifindexes: readonly number[]): Promise<PolicySources> {
    this.#subscribe(); // a subscription that stopped is opened again (and its source re-read)
    const nftNow = this.#nftCache ?? (await this.#cached('nft', () => this.#readNft()));
    const xfrmNow = this.#xfrmCache ?? (await this.#cached('xfrm', () => this.#readXfrm()));
    const legacy = this.#readLegacy();
    const tc = await this.#readTc(ifindexes);
    this.#lastPolled = this.#pollKey(legacy, 'error' in tc ? [] : tc.tcx);
    return { nft: nftNow, xfrm: xfrmNow, legacy, tc };
  }

  /**
   * Reads a source and keeps what it read until its next event, unless an event came while
   * it was read (the answer may predate the change: the next pass reads again) or the read
   * failed (tried again at the next pass).
   */
  async #cached<K extends 'nft' | 'xfrm'>(
    source: K,
    read: () => Promise<K extends 'nft' ? Nft : Xfrm>,
  ): Promise<K extends 'nft' ? Nft : Xfrm> {
    const epoch = this.#epoch[source];
    const v = await read();
    if (epoch === this.#epoch[source] && !('error' in v)) {
      if (source === 'nft') this.#nftCache = v as Nft;
      else this.#xfrmCache = v as Xfrm;
    }
    return v;
  }

  #pollKey(legacy: PolicySources['legacy'], tcx: unknown): string {
    return JSON.stringify([legacy, tcx]);
  }

  /**
   * What raises no event, read again (legacy iptables tables, tcx programs): true when it
   * differs from what the last read() saw (then a pass must run).
   */
  poll(ifindexes: readonly number[]): boolean {
    let tcx: unknown = [];
    try {
      tcx = this.#readTcx(ifindexes);
    } catch (err) {
      tcx = errText(err);
    }
    return this.#pollKey(this.#readLegacy(), tcx) !== this.#lastPolled;
  }

  /** The sockets still work. */
  liveness(): { ok: boolean; reasons: string[] } {
    const reasons = [
      ...(this.#nft ? this.#nft.liveness().reasons : []),
      ...(this.#xfrm ? this.#xfrm.liveness().reasons : []),
    ];
    return { ok: reasons.length === 0, reasons };
  }

  stop(): void {
    this.#stopped = true;
    this.#subs.tc?.close();
    this.#nft?.close();
    this.#xfrm?.close();
    this.#subs.tc = undefined;
    this.#subs.nft = undefined;
    this.#subs.xfrm = undefined;
  }
}
