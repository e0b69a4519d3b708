// Whose a kernel neighbor entry is (fibkeeper's, someone else's, the kernel's own), and what
// an observed change of an entry fibkeeper wants calls for. Pure; re-exported by observed.ts.
import {
  AF_INET,
  AF_INET6,
  NTF_EXT_LEARNED,
  NTF_EXT_MANAGED,
  NTF_PROXY,
  NUD_DELAY,
  NUD_FAILED,
  NUD_NOARP,
  NUD_PERMANENT,
  NUD_PROBE,
  NUD_REACHABLE,
  NUD_STALE,
  type Neigh,
} from '../netlink/index.js';
import type { ObservedNeighbor, RefreshMode } from './types.js';

/** What the reactions and the ownership rules read of an entry. */
export interface NeighState {
  /** NUD_* */
  readonly state: number;
  /** NTF_* */
  readonly flags: number;
  /** NDA_FLAGS_EXT (NTF_EXT_MANAGED) */
  readonly flagsExt: number;
  /** NDA_PROTOCOL; undefined when the entry carries none. */
  readonly protocol: number | undefined;
  /**
   * The observed table found the entry foreign once and remembers it until the entry
   * disappears (see isForeign); absent on a row read from a dump.
   */
  readonly foreign?: boolean;
}

/** fibkeeper wrote the entry and nobody has written over it since. */
export function isOwned(n: NeighState, protocol: number): boolean {
  return n.protocol === protocol && !isForeign(n, protocol);
}

/**
 * Someone else owns the entry; fibkeeper neither writes over it nor deletes it, and takes the
 * next hop back only once the entry is gone. Foreign is:
 *   - a PERMANENT or NOARP entry, whoever wrote it (the kernel never puts fibkeeper's
 *     entries in these states; `nud noarp`/`nud permanent` are how an operator pins one);
 *   - an entry with another protocol, or with extern_learn but without fibkeeper's mark;
 *   - fibkeeper's mark without its extern_learn flag in any state but FAILED: another writer
 *     replaced the entry (an admin write sets the flags it is given and keeps the protocol)
 *     — FAILED without the flags is the first half of `ip neigh del`, whose deletion follows;
 *   - an entry the observed table has seen foreign before (`foreign`), until it disappears.
 * A plain entry the kernel learned by itself (no mark, no flags, a dynamic state) is not
 * foreign: fibkeeper adopts it by writing its own flags over it (state and lladdr are kept).
 */
export function isForeign(n: NeighState, protocol: number): boolean {
  if (n.foreign === true || (n.state & (NUD_PERMANENT | NUD_NOARP)) !== 0) return true;
  if (n.protocol === protocol) {
    return (n.flags & NTF_EXT_LEARNED) === 0 && (n.state & NUD_FAILED) === 0;
  }
  if ((n.flags & NTF_EXT_LEARNED) !== 0) return true;
  return n.protocol !== undefined && n.protocol !== 0;
}

export type Reaction =
  /** Nothing to do. */
  | 'none'
  /** The entry went away (deleted, flushed): write it again. */
  | 'deleted'
  /** FAILED and the kernel will not retry by itself (not managed): write it again. */
  | 'failed'
  /** STALE on the legacy path: make the kernel re-resolve it. */
  | 'stale'
  /** Resolved (REACHABLE, or on its way: DELAY/PROBE): forget past losses. */
  | 'healthy';

const HEALTHY = NUD_REACHABLE | NUD_DELAY | NUD_PROBE;

/**
 * What an observed change of a desired entry calls for. `after` is undefined when the entry
 * was deleted. A managed entry that FAILED needs nothing: the kernel re-resolves managed
 * entries by itself, so rewriting it would only add ARP.
 */
export function reactionTo(
  after: NeighState | undefined,
  mode: RefreshMode,
  protocol: number,
): Reaction {
  if (after === undefined) return 'deleted';
  if (isForeign(after, protocol)) return 'none';
  // Not as fibkeeper wrote it: a plain entry the kernel learned in place of ours, or ours
  // stripped of its flags (`ip neigh del` first turns the entry FAILED without them).
  if (after.protocol !== protocol || (after.flags & NTF_EXT_LEARNED) === 0) return 'deleted';
  if (mode === 'managed' && (after.flagsExt & NTF_EXT_MANAGED) === 0) return 'deleted';
  if (after.state & NUD_FAILED) return mode === 'managed' ? 'none' : 'failed';
  if (after.state & NUD_STALE) return mode === 'legacy' ? 'stale' : 'healthy';
  if (after.state & HEALTHY) return 'healthy';
  return 'none'; // INCOMPLETE, NONE: resolution under way
}

/** The row for a neighbor message; undefined for proxy, bridge and address-less entries. */
export function observedRow(n: Neigh): ObservedNeighbor | undefined {
  if ((n.family !== AF_INET && n.family !== AF_INET6) || n.dst === undefined) return undefined;
  if (n.flags & NTF_PROXY) return undefined;
  return {
    ifindex: n.ifindex,
    ip: n.dst,
    family: n.family === AF_INET ? 4 : 6,
    state: n.state,
    flags: n.flags,
    flagsExt: n.flagsExt,
    protocol: n.protocol,
    lladdr: n.lladdr,
  };
}
