// RouteMirror: the route facts of the XDP program (kstate.ts RouteFacts: local-type IPv4
// routes, multipath destinations, the smallest unlocked route MTU, rules that defeat the
// reverse-path lookup), kept incrementally from the route feed (netlink/routes.ts) instead of
// dumping every table on every pass: O(1) per route event, O(routes) only when the feed dumps
// (start, overflow, a link that went down). Only routes that contribute a fact are kept.
//
// A route is known by what the kernel keys it by: family, table, destination, source, TOS and
// metric. A `new` event carries the whole route (an IPv6 multipath route with every leg), a
// `del` event the route or, for IPv6, the legs removed (the rest stays). A privileged test
// (kroutes.netns.test.ts) checks on random churn that the facts equal routeFacts() of a fresh
// dump. One approximation: IPv6 keeps metrics per leg and reports the first leg's; legs of one
// route with different MTUs (an `append` with an MTU of its own) are seen with the MTU of the
// leg the last event named, a dump with the first leg's. The forwarder's periodic resync
// (resyncIntervalMs) dumps the routes again.
import {
  AF_INET,
  AF_INET6,
  RTM_F_CLONED,
  RTN_UNICAST,
  type Route,
  type Rule,
} from '../netlink/index.js';
import { lpm4Key, lpm6Key } from './layout-state.js';
import {
  localType,
  martianAlready,
  rpRulesDiffer,
  unlockedMtuOf,
  type RouteFacts,
} from './kstate.js';

/** What one route contributes. */
interface Fact {
  family: number;
  /** IPv4 /32 local destination. */
  local32?: string;
  /** fk_local4w key (hex). */
  wide?: string;
  /** fk_mpath4/6 key (hex). */
  mp?: string;
  /** Unlocked route MTU. */
  mtu?: number;
  /** IPv6: the legs (for a `del` of some of them). */
  legs?: string[];
}

/** A multiset of keys, with the key's bytes. */
class Keys {
  readonly #n = new Map<string, { key: Buffer; n: number }>();
  /** The set as a map, made again only after a key came or went (same object: same set). */
  #map: Map<string, Buffer> | undefined = undefined;
  add(hex: string, key: () => Buffer): void {
    const e = this.#n.get(hex);
    if (e !== undefined) return void e.n++;
    this.#n.set(hex, { key: key(), n: 1 });
    this.#map = undefined;
  }
  remove(hex: string): void {
    const e = this.#n.get(hex);
    if (e === undefined || --e.n > 0) return;
    this.#n.delete(hex);
    this.#map = undefined;
  }
  map(): Map<string, Buffer> {
    this.#map ??= new Map([...this.#n].map(([h, e]) => [h, e.key]));
    return this.#map;
  }
  clear(): void {
    this.#n.clear();
    this.#map = undefined;
  }
}

/** A multiset of numbers. */
class Counts<K> {
  readonly m = new Map<K, number>();
  add(k: K): void {
    this.m.set(k, (this.m.get(k) ?? 0) + 1);
  }
  remove(k: K): void {
    const n = (this.m.get(k) ?? 0) - 1;
    if (n > 0) this.m.set(k, n);
    else this.m.delete(k);
  }
}

const legsOf = (r: Route): string[] =>
  r.multipath !== undefined && r.multipath.length > 0
    ? r.multipath.map((l) => `${l.ifindex}|${l.gateway ?? l.via?.address ?? ''}`)
    : [`${r.oif ?? 0}|${r.gateway ?? r.via?.address ?? ''}`];

/** The kernel's identity of a route (see the header). */
export function routeKey(r: Route): string {
  return `${r.family}|${r.table}|${r.dst ?? ''}/${r.dstLen}|${r.src ?? ''}/${r.srcLen}|${r.tos}|${r.priority ?? 0}`;
}

const ruleKey = (r: Rule): string => JSON.stringify(r);

/** What `r` contributes (undefined: nothing); `legs` overrides its legs (IPv6). */
function factOf(r: Route, legs?: string[]): Fact | undefined {
  const f: Fact = { family: r.family };
  let any = false;
  if (r.family === AF_INET && localType(r.type)) {
    const dst = r.dst ?? '0.0.0.0';
    if (!martianAlready(dst, r.dstLen)) {
      if (r.dstLen === 32) f.local32 = dst;
      else f.wide = lpm4Key(dst, r.dstLen).toString('hex');
      any = true;
    }
  }
  const l = r.family === AF_INET6 ? (legs ?? legsOf(r)) : undefined;
  if (r.type === RTN_UNICAST) {
    const n = l?.length ?? r.multipath?.length ?? 0;
    if (n > 1 || r.nhid !== undefined) {
      f.mp = keyOf(r).toString('hex');
      any = true;
    }
  }
  const mtu = unlockedMtuOf(r);
  if (mtu > 0) {
    f.mtu = mtu;
    any = true;
  }
  if (l !== undefined && l.length > 1) {
    f.legs = l;
    any = true;
  }
  return any ? f : undefined;
}

function keyOf(r: Route): Buffer {
  return r.family === AF_INET
    ? lpm4Key(r.dst ?? '0.0.0.0', r.dstLen)
    : lpm6Key(r.dst ?? '::', r.dstLen);
}

export class RouteMirror {
  readonly #routes = new Map<string, Fact>();
  /** The bytes of each key, to rebuild a fact's key (hex → Buffer). */
  readonly #local32 = new Counts<string>();
  readonly #wide = new Keys();
  readonly #mp4 = new Keys();
  readonly #mp6 = new Keys();
  readonly #mtu4 = new Counts<number>();
  readonly #mtu6 = new Counts<number>();
  readonly #rules = new Map<string, Rule>();
  #rpRules = false;
  /** Raised on every route or rule change (a pass writes when it moved). */
  version = 0;
  /** Routes kept (those that contribute a fact). */
  get size(): number {
    return this.#routes.size;
  }

  /** Replaces everything with a dump. */
  load(routes: readonly Route[], rules: readonly Rule[]): void {
    this.#routes.clear();
    this.#local32.m.clear();
    for (const k of [this.#wide, this.#mp4, this.#mp6]) k.clear();
    this.#mtu4.m.clear();
    this.#mtu6.m.clear();
    // A dump of an old kernel lists each IPv6 multipath leg as its own message: merged.
    const v6 = new Map<string, { r: Route; legs: string[] }>();
    for (const r of routes) {
      if (r.flags & RTM_F_CLONED) continue;
      if (r.family !== AF_INET6) {
        this.#set(routeKey(r), factOf(r));
        continue;
      }
      const k = routeKey(r);
      const e = v6.get(k);
      if (e === undefined) v6.set(k, { r, legs: legsOf(r) });
      else e.legs = [...new Set([...e.legs, ...legsOf(r)])];
    }
    for (const [k, { r, legs }] of v6) this.#set(k, factOf(r, legs));
    this.#rules.clear();
    for (const r of rules) if (r.family === AF_INET) this.#rules.set(ruleKey(r), r);
    this.#rpRules = rpRulesDiffer([...this.#rules.values()]);
    this.version++;
  }

  /** A route event. */
  route(kind: 'new' | 'del', r: Route): void {
    if (r.flags & RTM_F_CLONED) return;
    if (r.family !== AF_INET && r.family !== AF_INET6) return;
    const k = routeKey(r);
    this.version++;
    if (kind === 'new') return this.#set(k, factOf(r));
    const before = this.#routes.get(k);
    if (before === undefined) return;
    if (r.family === AF_INET6 && before.legs !== undefined) {
      const gone = new Set(legsOf(r));
      const rest = before.legs.filter((l) => !gone.has(l));
      if (rest.length > 0 && rest.length < before.legs.length) {
        return this.#set(k, factOf(r, rest));
      }
    }
    this.#set(k, undefined);
  }

  /** A policy rule event (IPv4 rules decide rpRules). */
  rule(kind: 'new' | 'del', r: Rule): void {
    if (r.family !== AF_INET) return;
    this.version++;
    if (kind === 'new') this.#rules.set(ruleKey(r), r);
    else this.#rules.delete(ruleKey(r));
    this.#rpRules = rpRulesDiffer([...this.#rules.values()]);
  }

  #set(k: string, after: Fact | undefined): void {
    const before = this.#routes.get(k);
    if (before !== undefined) this.#count(before, -1);
    if (after === undefined) this.#routes.delete(k);
    else {
      this.#routes.set(k, after);
      this.#count(after, 1);
    }
  }

  #count(f: Fact, d: 1 | -1): void {
    const v4 = f.family === AF_INET;
    if (f.local32 !== undefined) {
      if (d > 0) this.#local32.add(f.local32);
      else this.#local32.remove(f.local32);
    }
    const keys: [string | undefined, Keys][] = [
      [f.wide, this.#wide],
      [f.mp, v4 ? this.#mp4 : this.#mp6],
    ];
    for (const [hex, set] of keys) {
      if (hex === undefined) continue;
      if (d > 0) set.add(hex, () => Buffer.from(hex, 'hex'));
      else set.remove(hex);
    }
    if (f.mtu !== undefined) {
      const m = v4 ? this.#mtu4 : this.#mtu6;
      if (d > 0) m.add(f.mtu);
      else m.remove(f.mtu);
    }
  }

  /** The facts now (kstate.ts mirrorFrom turns them into the maps' contents). */
  facts(): RouteFacts {
    const min = (c: Counts<number>): number => {
      let m = 0;
      for (const v of c.m.keys()) m = m === 0 ? v : Math.min(m, v);
      return Math.min(m, 0xffff);
    };
    return {
      local32: [...this.#local32.m.keys()],
      wide: this.#wide.map(),
      mpath4: this.#mp4.map(),
      mpath6: this.#mp6.map(),
      routeMtu4: min(this.#mtu4),
      routeMtu6: min(this.#mtu6),
      rpRules: this.#rpRules,
    };
  }
}
