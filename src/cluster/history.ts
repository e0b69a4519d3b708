// The history check of "never two holders": from the hold sets every node published (with
// the clock time of each), the intervals in which each node may have held each IP, and
// every overlap between two nodes' intervals. A node holds an IP from the set that added
// it until the earlier of the set that removed it and the deadline it had promised (the
// latest deadline of a set that still held it); a node whose history ends while holding
// (killed, stopped, cut off) holds until that deadline.
export interface HoldRecord {
  readonly node: string;
  readonly at: number;
  readonly ips: readonly string[];
  readonly deadline: number;
}

export interface HoldInterval {
  readonly node: string;
  readonly ip: string;
  readonly from: number;
  readonly to: number;
}

export interface Overlap {
  readonly ip: string;
  readonly a: HoldInterval;
  readonly b: HoldInterval;
  /** How long both held it, ms. */
  readonly ms: number;
}

/** Every hold interval in `records` (each node's records in the order it published them). */
export function holdIntervals(records: readonly HoldRecord[]): HoldInterval[] {
  const byNode = new Map<string, HoldRecord[]>();
  for (const r of records) {
    const list = byNode.get(r.node) ?? [];
    list.push(r);
    byNode.set(r.node, list);
  }
  const out: HoldInterval[] = [];
  for (const [node, list] of byNode) {
    const open = new Map<string, { from: number; deadline: number }>();
    for (const r of list) {
      const now = new Set(r.ips);
      for (const [ip, o] of open) {
        if (now.has(ip)) continue;
        out.push({ node, ip, from: o.from, to: Math.min(r.at, o.deadline) });
        open.delete(ip);
      }
      for (const ip of r.ips) {
        const o = open.get(ip);
        if (o) o.deadline = Math.max(o.deadline, r.deadline);
        else open.set(ip, { from: r.at, deadline: r.deadline });
      }
    }
    for (const [ip, o] of open) out.push({ node, ip, from: o.from, to: o.deadline });
  }
  return out;
}

/** Pairs of intervals of different nodes that overlap on one IP (empty: never two holders). */
export function findOverlaps(records: readonly HoldRecord[]): Overlap[] {
  const byIp = new Map<string, HoldInterval[]>();
  for (const i of holdIntervals(records)) {
    if (i.to <= i.from) continue;
    const list = byIp.get(i.ip) ?? [];
    list.push(i);
    byIp.set(i.ip, list);
  }
  const out: Overlap[] = [];
  for (const [ip, list] of byIp) {
    list.sort((x, y) => x.from - y.from);
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length && list[j]!.from < list[i]!.to; j++) {
        const a = list[i]!;
        const b = list[j]!;
        if (a.node === b.node) continue;
        out.push({ ip, a, b, ms: Math.min(a.to, b.to) - b.from });
      }
    }
  }
  return out;
}
