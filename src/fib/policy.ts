// The node's own policy on forwarded traffic, computed purely from what the kernel holds:
// which netfilter hooks, tc filters, queueing disciplines and xfrm policies would act on a
// frame that the kernel forwards from one device to another. The XDP program forwards a frame
// only when none would (every frame they would see goes to the kernel with a reason), so
// everything here errs on the side of passing: what cannot be read counts as policy.
//
// A forwarded frame meets, in the kernel's order: tc on the ingress device (clsact or ingress
// filters, tcx programs), netfilter's netdev ingress hook of that device, the prerouting,
// forward and postrouting hooks of its family (nftables chains of the ip, ip6 and inet
// families, legacy iptables tables, connection tracking and its defragmentation), xfrm
// policy (forward and output directions, and their defaults), netfilter's netdev egress hook
// and tc on the egress device (filters, tcx, a queueing discipline the node configured).
import type {
  NftChain,
  NftRule,
  NftTable,
  TcObject,
  XfrmDefault,
  XfrmPolicy,
} from '../netlink/index.js';
import { AF_INET, AF_INET6, nft as N, tcHandle, TC_H_ROOT, xfrm as X } from '../netlink/index.js';
import { legacyEffect, type LegacyTable } from './policy-legacy.js';

/** The counter a passed frame is counted under (fk_stats reason). */
export type PolicyReason = 'netfilter' | 'tc' | 'xfrm' | 'egress_netfilter' | 'egress_tc';

/** One piece of the node's configuration that acts on forwarded traffic. */
export interface PolicyHit {
  reason: PolicyReason;
  /** What it is, as the tool that shows it names it ("nft inet t chain f (forward, policy drop)"). */
  what: string;
}

/** What the kernel holds, per source; a source that could not be read has `error`. */
export interface PolicySources {
  nft: { tables: NftTable[]; chains: NftChain[]; rules: NftRule[] } | { error: string };
  legacy: LegacyTable[] | { error: string };
  tc:
    | {
        qdiscs: TcObject[];
        filters: (TcObject & { direction: 'ingress' | 'egress' })[];
        tcx: { ifindex: number; direction: 'ingress' | 'egress'; progIds: number[] }[];
      }
    | { error: string };
  xfrm: { policies: XfrmPolicy[]; defaults: XfrmDefault | undefined } | { error: string };
}

/** The node's policy: on every frame of a family, and per device name on its way in / out. */
export interface NodePolicy {
  ipv4: PolicyHit[];
  ipv6: PolicyHit[];
  ingress: Map<string, PolicyHit[]>;
  egress: Map<string, PolicyHit[]>;
}

/** What acts on the frames of one device: entering it (per family) and leaving it. */
export interface DevicePolicy {
  ipv4: PolicyHit[];
  ipv6: PolicyHit[];
  egress: PolicyHit[];
}

/**
 * nf_tables expressions that neither need connection tracking nor defragmentation: a rule
 * made of these alone, on a hook no forwarded packet crosses (input, output), changes
 * nothing for forwarded traffic. Any other expression (ct, nat, masq, redir, socket, tproxy,
 * synproxy, connlimit, notrack, objref, the xt compatibility match and target, …) may turn
 * connection tracking on for the whole namespace, and with it the defragmentation of every
 * forwarded packet.
 */
const STATELESS = new Set([
  'immediate',
  'cmp',
  'payload',
  'meta',
  'bitwise',
  'byteorder',
  'lookup',
  'range',
  'counter',
  'log',
  'limit',
  'quota',
  'reject',
  'fib',
  'exthdr',
  'numgen',
  'hash',
  'rt',
  'last',
  'dynset',
  'xfrm',
]);

const INET_HOOKS = ['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress'];
const FORWARD_PATH = new Set([N.NF_INET_PRE_ROUTING, N.NF_INET_FORWARD, N.NF_INET_POST_ROUTING]);
const FAMILY_NAMES = new Map([
  [N.NFPROTO_INET, 'inet'],
  [N.NFPROTO_IPV4, 'ip'],
  [N.NFPROTO_IPV6, 'ip6'],
  [N.NFPROTO_NETDEV, 'netdev'],
]);

function push<K>(m: Map<K, PolicyHit[]>, k: K, h: PolicyHit): void {
  const list = m.get(k) ?? [];
  if (!list.some((x) => x.what === h.what)) list.push(h);
  m.set(k, list);
}

function add(list: PolicyHit[], h: PolicyHit): void {
  if (!list.some((x) => x.what === h.what)) list.push(h);
}

/** A netdev chain's device (a name, or a prefix ending in *) matches `name`. */
function devMatch(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

function families(f: number): { v4: boolean; v6: boolean } {
  return {
    v4: f === N.NFPROTO_IPV4 || f === N.NFPROTO_INET,
    v6: f === N.NFPROTO_IPV6 || f === N.NFPROTO_INET,
  };
}

function nftHits(
  s: Exclude<PolicySources['nft'], { error: string }>,
  p: NodePolicy,
  devices: readonly string[],
): void {
  const key = (f: number, t: string, c?: string) => `${f}|${t}|${c ?? ''}`;
  const dormant = new Set(
    s.tables.filter((t) => t.flags & N.NFT_TABLE_F_DORMANT).map((t) => key(t.family, t.name)),
  );
  const rules = new Map<string, number>();
  for (const r of s.rules)
    rules.set(
      key(r.family, r.table, r.chain),
      (rules.get(key(r.family, r.table, r.chain)) ?? 0) + 1,
    );
  const chains = [...s.chains].sort(
    (a, b) =>
      (a.hook?.num ?? 9) - (b.hook?.num ?? 9) || (a.hook?.priority ?? 0) - (b.hook?.priority ?? 0),
  );
  for (const c of chains) {
    const fam = FAMILY_NAMES.get(c.family);
    if (c.hook === undefined || fam === undefined || dormant.has(key(c.family, c.table))) continue;
    const n = rules.get(key(c.family, c.table, c.name)) ?? 0;
    const acts = n > 0 || c.policy === N.NF_DROP || c.type === 'nat';
    if (!acts) continue;
    const hookName =
      c.family === N.NFPROTO_NETDEV
        ? c.hook.num === 0
          ? 'ingress'
          : 'egress'
        : (INET_HOOKS[c.hook.num] ?? `hook ${c.hook.num}`);
    const why = [hookName, `priority ${c.hook.priority}`];
    if (c.type === 'nat') why.push('nat');
    if (c.policy === N.NF_DROP) why.push('policy drop');
    if (n > 0) why.push(`${n} rule${n === 1 ? '' : 's'}`);
    const what = `nft ${fam} ${c.table} chain ${c.name} (${why.join(', ')})`;
    const perDevice =
      c.family === N.NFPROTO_NETDEV ||
      (c.family === N.NFPROTO_INET && c.hook.num === N.NF_INET_INGRESS);
    if (perDevice) {
      const egress = c.family === N.NFPROTO_NETDEV && c.hook.num === N.NF_NETDEV_EGRESS;
      for (const d of devices) {
        if (!c.hook.devices.some((pat) => devMatch(pat, d))) continue;
        if (egress) push(p.egress, d, { reason: 'egress_netfilter', what });
        else push(p.ingress, d, { reason: 'netfilter', what });
      }
    } else if (FORWARD_PATH.has(c.hook.num) || c.type === 'nat') {
      const f = families(c.family);
      if (f.v4) add(p.ipv4, { reason: 'netfilter', what });
      if (f.v6) add(p.ipv6, { reason: 'netfilter', what });
    }
  }
  // connection tracking: turned on for a family by any rule that needs it, on any hook
  for (const r of s.rules) {
    const stateful = r.exprs.find((e) => !STATELESS.has(e));
    if (stateful === undefined) continue;
    const fam = FAMILY_NAMES.get(r.family);
    const f = families(r.family);
    const what = `nft ${fam} ${r.table} chain ${r.chain}: expression ${stateful} (connection tracking and defragmentation may be on for every packet)`;
    if (f.v4) add(p.ipv4, { reason: 'netfilter', what });
    if (f.v6) add(p.ipv6, { reason: 'netfilter', what });
  }
}

function tcHits(
  s: Exclude<PolicySources['tc'], { error: string }>,
  p: NodePolicy,
  names: ReadonlyMap<number, string>,
): void {
  for (const f of s.filters) {
    const dev = names.get(f.ifindex);
    if (dev === undefined) continue;
    const prio = f.info >>> 16;
    const what = `tc filter ${f.kind} on ${dev} ${f.direction} (pref ${prio}${f.chain ? `, chain ${f.chain}` : ''})`;
    if (f.direction === 'ingress') push(p.ingress, dev, { reason: 'tc', what });
    else push(p.egress, dev, { reason: 'egress_tc', what });
  }
  for (const t of s.tcx) {
    const dev = names.get(t.ifindex);
    if (dev === undefined || t.progIds.length === 0) continue;
    const what = `tcx ${t.direction} program${t.progIds.length > 1 ? 's' : ''} ${t.progIds.join(',')} on ${dev}`;
    if (t.direction === 'ingress') push(p.ingress, dev, { reason: 'tc', what });
    else push(p.egress, dev, { reason: 'egress_tc', what });
  }
  for (const q of s.qdiscs) {
    const dev = names.get(q.ifindex);
    // handle 0: a default qdisc the kernel attached itself; ingress and clsact only hold filters
    if (dev === undefined || q.handle === 0 || q.kind === 'ingress' || q.kind === 'clsact')
      continue;
    const where = q.parent === TC_H_ROOT ? 'root' : `parent ${tcHandle(q.parent)}`;
    push(p.egress, dev, {
      reason: 'egress_tc',
      what: `qdisc ${q.kind} ${tcHandle(q.handle)} ${where} on ${dev}`,
    });
  }
}

function xfrmHits(s: Exclude<PolicySources['xfrm'], { error: string }>, p: NodePolicy): void {
  const dirName = (d: number) => (d === X.XFRM_POLICY_FWD ? 'fwd' : 'out');
  for (const x of s.policies) {
    if (x.dir !== X.XFRM_POLICY_FWD && x.dir !== X.XFRM_POLICY_OUT) continue;
    const sel = x.src === undefined ? 'any' : `src ${x.src} dst ${x.dst}`;
    const what = `xfrm policy ${sel} dir ${dirName(x.dir)}${x.action === X.XFRM_POLICY_BLOCK ? ' action block' : ''} (index ${x.index})`;
    if (x.family !== AF_INET6) add(p.ipv4, { reason: 'xfrm', what });
    if (x.family !== AF_INET) add(p.ipv6, { reason: 'xfrm', what });
  }
  const d = s.defaults;
  for (const [dir, v] of [
    ['fwd', d?.fwd],
    ['out', d?.out],
  ] as const) {
    if (v !== X.XFRM_USERPOLICY_BLOCK) continue;
    const what = `xfrm default policy ${dir} block`;
    add(p.ipv4, { reason: 'xfrm', what });
    add(p.ipv6, { reason: 'xfrm', what });
  }
}

/**
 * The node's policy from what the kernel holds. `links` maps ifindex to device name (tc is
 * per ifindex, nftables per name); `devices` are the names whose ingress and egress matter.
 */
export function nodePolicy(s: PolicySources, links: ReadonlyMap<number, string>): NodePolicy {
  const p: NodePolicy = { ipv4: [], ipv6: [], ingress: new Map(), egress: new Map() };
  const both = (reason: PolicyReason, what: string) => {
    add(p.ipv4, { reason, what });
    add(p.ipv6, { reason, what });
  };
  // tc first: it is the first thing a received frame meets
  if ('error' in s.tc) both('tc', `tc could not be read: ${s.tc.error}`);
  else tcHits(s.tc, p, links);
  if ('error' in s.nft) both('netfilter', `nftables could not be read: ${s.nft.error}`);
  else nftHits(s.nft, p, [...links.values()]);
  if ('error' in s.legacy)
    both('netfilter', `iptables (legacy) could not be read: ${s.legacy.error}`);
  else {
    for (const t of s.legacy) {
      const what = legacyEffect(t);
      if (what !== undefined) add(t.family === 4 ? p.ipv4 : p.ipv6, { reason: 'netfilter', what });
    }
  }
  if ('error' in s.xfrm) both('xfrm', `xfrm could not be read: ${s.xfrm.error}`);
  else xfrmHits(s.xfrm, p);
  return p;
}

/**
 * What acts on `name`'s frames: its ingress side first (tc, then netfilter's netdev hook),
 * then what acts on every frame of the family; its egress side apart.
 */
export function devicePolicy(p: NodePolicy, name: string): DevicePolicy {
  const ingress = p.ingress.get(name) ?? [];
  const order = (l: PolicyHit[]) => [
    ...l.filter((h) => h.reason === 'tc'),
    ...l.filter((h) => h.reason !== 'tc'),
  ];
  const first = order(ingress);
  return {
    ipv4: [...first, ...p.ipv4],
    ipv6: [...first, ...p.ipv6],
    egress: p.egress.get(name) ?? [],
  };
}
