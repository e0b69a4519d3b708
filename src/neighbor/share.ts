// Next-hop lookups shared among IPs: for a batch of forwardable IPs on one device, one
// `ip route get REP oif DEV fibmatch` per group of IPs that the kernel must answer alike,
// and each member's next hops derived from its representative's answer (an on-link leg:
// the member itself; a gateway: the gateway; multipath: every leg on the device).
//
// The groups (prefixes.ts) are exact only while routing is table-only (the default policy
// rules): the caller gives no group for an IP whose family has other rules, and such an IP
// is looked up on its own. Two checks guard against a stale view of the routes:
//   - the answer's route must not be more specific than the group's prefix (a route the
//     Route table does not know yet; its event is on the way): the members are then looked
//     up one by one;
//   - an answer that names a nexthop object without showing its legs (nexthop_compat_mode
//     off) cannot be resolved here: the members are looked up one by one too.
import type { Route } from '../netlink/index.js';
import { answerOutcome, nextHopsFor, type AnswerOutcome, type LookupOutcome } from './nexthop.js';
import { groupLength, type GroupKey } from './prefixes.js';

/**
 * Next-hop lookups of `ips` with output device `ifindex`; the answers come back in order, a
 * Route or the kernel's error each.
 */
export type LookupFn = (
  ifindex: number,
  ips: readonly string[],
) => Promise<readonly (Route | Error)[]>;

export interface LookupCounts {
  nexthop: number;
  unreachable: number;
  error: number;
}

export interface SharedLookups {
  /** The outcome for each IP, in order. */
  outcomes: LookupOutcome[];
  /** Kernel lookups made, by result. */
  lookups: LookupCounts;
  /** IPs whose next hops came from another IP's lookup. */
  shared: number;
}

/** One kernel lookup: the IP asked about, and the group it stands for (undefined: itself). */
interface Query {
  ip: string;
  group: GroupKey | undefined;
  outcome: AnswerOutcome | undefined;
  /** Its answer cannot be shared (see the header): members get their own lookups. */
  unshared: boolean;
}

function count(c: LookupCounts, o: AnswerOutcome): void {
  if (o.kind === 'nexthops') c.nexthop++;
  else if (o.kind === 'unreachable') c.unreachable++;
  else c.error++;
}

/** The answer may stand for the whole group (see the header). */
function shareable(answer: Route | Error, group: GroupKey): boolean {
  if (answer instanceof Error) return true;
  if (answer.dstLen > groupLength(group)) return false;
  const legs = answer.oif !== undefined || (answer.multipath?.length ?? 0) > 0;
  return answer.nhid === undefined || legs;
}

async function ask(
  ifindex: number,
  ips: readonly string[],
  lookup: LookupFn,
): Promise<readonly (Route | Error)[]> {
  if (ips.length === 0) return [];
  try {
    return await lookup(ifindex, ips);
  } catch (err) {
    return ips.map(() => err as Error);
  }
}

/**
 * Looks up the next hops of `ips` on `ifindex`: one kernel lookup per group (`groupOf`
 * gives an IP's group, or undefined to look it up on its own), a second round for the
 * members of groups whose answer could not be shared. A lookup that throws is an error
 * outcome for every IP it stood for.
 */
export async function lookupNextHops(
  ifindex: number,
  ips: readonly string[],
  groupOf: (ip: string) => GroupKey | undefined,
  lookup: LookupFn,
): Promise<SharedLookups> {
  const queries: Query[] = [];
  const byGroup = new Map<GroupKey, number>();
  const of = new Int32Array(ips.length);
  for (let i = 0; i < ips.length; i++) {
    const ip = ips[i]!;
    const group = groupOf(ip);
    let q = group === undefined ? undefined : byGroup.get(group);
    if (q === undefined) {
      q = queries.push({ ip, group, outcome: undefined, unshared: false }) - 1;
      if (group !== undefined) byGroup.set(group, q);
    }
    of[i] = q;
  }
  const lookups: LookupCounts = { nexthop: 0, unreachable: 0, error: 0 };
  const answers = await ask(
    ifindex,
    queries.map((q) => q.ip),
    lookup,
  );
  for (let q = 0; q < queries.length; q++) {
    const query = queries[q]!;
    const answer = answers[q] ?? NO_ANSWER;
    query.outcome = answerOutcome(answer, ifindex);
    query.unshared = query.group !== undefined && !shareable(answer, query.group);
    count(lookups, query.outcome);
  }
  const outcomes = new Array<LookupOutcome>(ips.length);
  const again: number[] = [];
  let shared = 0;
  for (let i = 0; i < ips.length; i++) {
    const ip = ips[i]!;
    const query = queries[of[i]!]!;
    if (query.ip !== ip && query.unshared) {
      again.push(i);
      continue;
    }
    if (query.ip !== ip) shared++;
    outcomes[i] = nextHopsFor(query.outcome!, ip);
  }
  const more = await ask(
    ifindex,
    again.map((i) => ips[i]!),
    lookup,
  );
  for (let k = 0; k < again.length; k++) {
    const o = answerOutcome(more[k] ?? NO_ANSWER, ifindex);
    count(lookups, o);
    const i = again[k]!;
    outcomes[i] = nextHopsFor(o, ips[i]!);
  }
  return { outcomes, lookups, shared };
}

const NO_ANSWER = new Error('no answer to the lookup');
