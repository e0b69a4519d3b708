// Unusable next hops: desired ones whose kernel entry went FAILED at least
// neighbor.unusableAfter ago and has not resolved since (health, status, the metric, the
// events). In a storm — the kernel re-probing 100,000 managed entries, most of them failing
// for a while — they can be most of the table, and every reader used to build a row with
// texts for each, once a second for the events alone (700 MB of garbage in 25 s at 100,000:
// docs/neighbor.md, "The fifth pass"). So each reader asks only for what it shows: a count,
// the few oldest rows (health), counts by device (the metric), or the entries that crossed
// the threshold since the last look (the events).
import { nudStateNames } from '../netlink/index.js';
import type { Table } from '../statedb/index.js';
import type { DeviceTracker } from './devices.js';
import type { ObservedNeighbors } from './observed.js';
import { neighKey, type DesiredNeighbor, type UnusableEntry } from './types.js';

export interface UnusableSource {
  observed: ObservedNeighbors;
  devices: DeviceTracker;
  desired: Table<DesiredNeighbor>;
}

/** How many unusable next hops there are, and the `limit` oldest of them, oldest first. */
export interface UnusableList {
  count: number;
  entries: UnusableEntry[];
}

interface Found {
  ifindex: number;
  ip: string;
  since: number;
}

function wantedBy(s: UnusableSource): (ifindex: number, ip: string) => boolean {
  return (ifindex, ip) => s.devices.isSelected(ifindex) && s.desired.has(neighKey(ifindex, ip));
}

function entryOf(s: UnusableSource, f: Found, now: number): UnusableEntry {
  return {
    nexthop: f.ip,
    device: s.devices.nameOf(f.ifindex) ?? String(f.ifindex),
    state: nudStateNames(s.observed.stateOf(f.ifindex, f.ip)).join(',').toLowerCase(),
    forSeconds: Math.round((now - f.since) / 1000),
    forwardable: [...(s.desired.get(neighKey(f.ifindex, f.ip))?.refs ?? [])].slice(0, 5),
  };
}

/**
 * The next hops that went FAILED after `after` and at `upTo` or earlier (ms) and are still
 * unresolved: their count, and the `limit` oldest as rows (`now` dates them).
 */
export function unusableBetween(
  s: UnusableSource,
  after: number,
  upTo: number,
  now: number,
  limit = Infinity,
): UnusableList {
  let count = 0;
  // The oldest `limit`, oldest first: an insertion into a short sorted list (limit is small
  // where the list is long), or every one, sorted at the end.
  const kept: Found[] = [];
  s.observed.forEachUnresolved(after, upTo, wantedBy(s), (ifindex, ip, since) => {
    count++;
    if (limit === Infinity) {
      kept.push({ ifindex, ip, since });
      return;
    }
    if (kept.length >= limit && since >= kept[kept.length - 1]!.since) return;
    let i = kept.length;
    while (i > 0 && kept[i - 1]!.since > since) i--;
    kept.splice(i, 0, { ifindex, ip, since });
    if (kept.length > limit) kept.pop();
  });
  if (limit === Infinity) kept.sort((a, b) => a.since - b.since);
  return { count, entries: kept.map((f) => entryOf(s, f, now)) };
}

/** Unusable next hops by device name. */
export function unusableByDevice(s: UnusableSource, upTo: number): Map<string, number> {
  const byIfindex = new Map<number, number>();
  s.observed.forEachUnresolved(-Infinity, upTo, wantedBy(s), (ifindex) => {
    byIfindex.set(ifindex, (byIfindex.get(ifindex) ?? 0) + 1);
  });
  const out = new Map(s.devices.selected().map((d) => [d.name, 0]));
  for (const [ifindex, n] of byIfindex) {
    const name = s.devices.nameOf(ifindex) ?? String(ifindex);
    out.set(name, (out.get(name) ?? 0) + n);
  }
  return out;
}
