// Placement of cluster external IPs on members: rendezvous (highest-random-weight) hashing
// with bounded loads. Pure: the same members, IPs and eligibility give the same placement
// on every node, whatever the order they are given in.
//
// Plain rendezvous hashing gives each IP to the eligible member with the highest
// weight(ip, member); it moves only the IPs a membership change must move, but its loads
// are binomial (30 IPs over 3 nodes: often 12/10/8). Here every member takes floor(IPs /
// members) of the IPs, and (IPs mod members) of them one more: all (ip, member) pairs are
// visited in descending weight order and a pair is taken while the IP is unplaced and the
// member has room (a greedy matching on the rendezvous weights). Loads differ by at most one when
// every IP may go everywhere; a membership change moves ~1.1-1.25× the minimum number of
// IPs on average, but with no hard bound (in random trials up to 16 IPs beyond the
// leaver's own, of 200 over 5 members; placement.test.ts checks the distribution). An IP whose eligible members are all full goes to its
// highest-weight eligible member anyway (eligibility wins over balance).

/**
 * How many of its eligible members hold a cluster IP: `single`, the one placement picks (it
 * answers ARP/NDP for it, or announces it over BGP); `active-active`, every eligible member
 * that announces routes over BGP (bgp.enabled), not drained and able: the router spreads the
 * flows over them (ECMP), and no one answers ARP/NDP for it.
 */
export type HoldMode = 'single' | 'active-active';
export const HOLD_MODES: readonly HoldMode[] = ['single', 'active-active'];

/** Which members may hold an IP: all (no constraint), or those named or labelled so. */
export interface Eligibility {
  /** How many of them hold it; absent: single. */
  readonly mode?: HoldMode;
  /** Member names; empty or absent: any name. */
  readonly nodes?: readonly string[];
  /** Labels a member must all carry (key → value); empty or absent: no label needed. */
  readonly labels?: Readonly<Record<string, string>>;
}

export interface PlacementMember {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface PlacementIp {
  readonly ip: string;
  readonly eligible?: Eligibility;
}

export function isEligible(m: PlacementMember, e: Eligibility | undefined): boolean {
  if (!e) return true;
  if (e.nodes && e.nodes.length > 0 && !e.nodes.includes(m.name)) return false;
  for (const [k, v] of Object.entries(e.labels ?? {})) if (m.labels[k] !== v) return false;
  return true;
}

// 32-bit FNV-1a over the UTF-16 code units, seeded, then murmur3's finalizer.
function hash32(s: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

function fmix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

interface Hashed {
  a: number;
  b: number;
}

function hashed(s: string): Hashed {
  return { a: hash32(s, 0x2545f491), b: hash32(s, 0x9e3779b9) };
}

/** The rendezvous weight of (ip, member): 53 bits, uniform, independent across members. */
function combine(ip: Hashed, m: Hashed): number {
  const hi = fmix32(ip.a ^ Math.imul(m.a ^ 0x5bd1e995, 0x27d4eb2f));
  const lo = fmix32((ip.b + Math.imul(m.b ^ hi, 0x165667b1)) >>> 0);
  return hi * 0x200000 + (lo >>> 11);
}

/** The rendezvous weight of `ip` on `member` (exported for tests and `cluster status`). */
export function weight(ip: string, member: string): number {
  return combine(hashed(ip), hashed(member));
}

/**
 * The owner each IP should have: IP → member name. IPs without an eligible member are
 * absent from the result.
 */
export function place(
  ips: readonly PlacementIp[],
  members: readonly PlacementMember[],
): Map<string, string> {
  const out = new Map<string, string>();
  if (members.length === 0 || ips.length === 0) return out;
  const mh = members.map((m) => hashed(m.name));
  const pairs: { w: number; ip: number; m: number }[] = [];
  ips.forEach((p, i) => {
    const ih = hashed(p.ip);
    members.forEach((m, j) => {
      if (!isEligible(m, p.eligible)) return;
      pairs.push({ w: combine(ih, mh[j]!), ip: i, m: j });
    });
  });
  // Ties (equal 53-bit weights) are broken by names, so every node sorts alike.
  pairs.sort(
    (x, y) =>
      y.w - x.w || cmp(members[x.m]!.name, members[y.m]!.name) || cmp(ips[x.ip]!.ip, ips[y.ip]!.ip),
  );
  // Exactly (placeable mod members) members may take one more than the floor, so loads
  // differ by at most one.
  const placeable = new Set(pairs.map((p) => p.ip)).size;
  const floor = Math.floor(placeable / members.length);
  let extra = placeable % members.length;
  const load = new Array<number>(members.length).fill(0);
  const best = new Map<number, number>(); // ip → highest-weight eligible member
  for (const p of pairs) {
    if (!best.has(p.ip)) best.set(p.ip, p.m);
    const name = ips[p.ip]!.ip;
    if (out.has(name)) continue;
    const l = load[p.m]!;
    if (l > floor || (l === floor && extra === 0)) continue;
    if (l === floor) extra--;
    out.set(name, members[p.m]!.name);
    load[p.m] = l + 1;
  }
  for (const [i, m] of best) {
    const name = ips[i]!.ip;
    if (!out.has(name)) out.set(name, members[m]!.name);
  }
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
