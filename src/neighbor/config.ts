// The neighbor subsystem's options: what the agent passes (src/config's `neighbor` section,
// already validated there, with `devices` and `extip.holderName`) and the tuning knobs with
// their defaults and reasons.
import type { FibkeeperConfig } from '../config/index.js';
import { NotSupportedError } from '../errors/index.js';
import type { RefreshMode } from './types.js';

/**
 * The config's `neighbor.*` options under their own names (`refresh`, `resyncInterval`,
 * `retryMin`, `retryMax` in ms, `rateLimit`), plus `devices` (names or globs a device must
 * match to be selected) and `holderName` (extip.holderName: never selected). Validated by
 * src/config before they get here.
 */
export type NeighborConfig = Omit<FibkeeperConfig['neighbor'], 'enabled'> &
  Pick<FibkeeperConfig, 'devices'> &
  Pick<FibkeeperConfig['extip'], 'holderName'>;

/** Knobs for tests and benchmarks; the defaults are what the agent runs with. */
export interface NeighborTuning {
  /** Receive buffer of the neighbor-event socket, bytes (the kernel doubles it). */
  neighRcvbuf: number;
  /** Receive buffer of the route-event socket, bytes. */
  routeRcvbuf: number;
  /** Receive buffer of the link/address-event socket, bytes. */
  linkRcvbuf: number;
  /** Next-hop lookups per pipelined routeGetMany call. */
  lookupChunk: number;
  /** Entries per neighSetMany/neighDelMany call of the reconciler. */
  writeBatch: number;
  /** Coalescing delay before re-dumping routes after a link or address went away, ms. */
  routeRedumpDelayMs: number;
  /**
   * Write new legacy entries in two steps (create with extern_learn, then NTF_USE), for
   * kernels before 5.16 that drop NTF_EXT_LEARNED when NTF_USE is set. Default: when the
   * kernel has no managed neighbors.
   */
  legacyTwoStep: boolean | undefined;
  /**
   * Share one next-hop lookup among the IPs the kernel must answer alike (same longest
   * route prefix) while the policy rules are the defaults. Off: one lookup per IP and
   * device, whatever the rules.
   */
  shareLookups: boolean;
  /**
   * Events of the entries written that may be unread at most before a write waits for them
   * (a writer that runs ahead of its events overflows the event socket); 0: never wait;
   * undefined: most of what the neighbor-event socket holds (writeBacklog()).
   */
  writeBacklog: number | undefined;
  /**
   * Key the observed entries of on-link next hops with the forwardable IP's own string (one
   * copy of each address in memory instead of two, for a lookup per new entry).
   */
  internAddresses: boolean;
  /** Legacy refresh: desired rows the sweep looks at per turn, at most (refresh.ts). */
  refreshScan: number;
  /** Legacy refresh: time between turns of the sweep, ms. */
  refreshTickMs: number;
}

export function defaultTuning(): NeighborTuning {
  return {
    // 192 MiB asked, 384 MiB granted: about 520,000 neighbor events queued (skb truesize is
    // ~768 B) before an overflow. The entries written within the same ~2 s go STALE in one
    // tick of the kernel's timer wheel: ~250,000 events at once, 20 s after 1,000,000 were
    // written, arrive faster than any reader; with 64 MiB the socket overflowed 2-4 times in
    // that wave in 3 of 6 runs (each overflow a dump of the whole table, route changes
    // delayed by up to a second meanwhile). Kernel memory, used only while events wait.
    neighRcvbuf: 192 << 20,
    // Route and link events come in small bursts (a routing daemon's update, a link flap).
    routeRcvbuf: 8 << 20,
    linkRcvbuf: 4 << 20,
    // IPs per chunk of the calculation (with shared lookups, a chunk costs one lookup per
    // route prefix in it, and up to one per IP when they cannot be shared). A chunk is one
    // synchronous task of the JS thread (~10 ms at 4096), and while it runs the acks of the
    // writes wait and the send thread may run dry: at 1,000,000 IPs 4096 (with writeBatch
    // 4096) converged in 8.9-9.2 s where 16384 (with 8192) took 10.3-11.6 s (docs/neighbor.md).
    lookupChunk: 4096,
    // Entries per neighSetMany call; two calls run at once (the reconciler's pipeline), so
    // ~8,000 entries (~40 ms of kernel work) are on their way while the next batch is made.
    writeBatch: 4096,
    // A link going down removes its IPv4 routes without notifications: re-dump once the
    // burst of link and address events has passed.
    routeRedumpDelayMs: 50,
    legacyTwoStep: undefined,
    // Exact (see share.ts), and the calculation then costs one lookup per route prefix
    // instead of one per forwardable IP.
    shareLookups: true,
    // Derived from neighRcvbuf (writeBacklog()): at 192 MiB about 105,000 events, so a table
    // of 100,000 legacy entries (one event each) is written without a wait; larger ones
    // then at the pace their events come back.
    writeBacklog: undefined,
    internAddresses: true,
    // A turn looks at up to 1024 rows (~0.2 ms) 20 times a second: a STALE entry of a small
    // table is refreshed within 50 ms, and a pass over 1,000,000 rows of which few are STALE
    // takes under a minute (4096 cost a second of CPU while 1,000,000 fresh entries were
    // written); when most are STALE (the steady state of a large table), a turn finds its
    // handful after a few rows.
    refreshScan: 1024,
    refreshTickMs: 50,
  };
}

/** The kernel's truesize of one queued neighbor event (an skb of ~768 B). */
const EVENT_TRUESIZE = 768;

/**
 * Events of the entries written that may be unread at most: a fifth of what the
 * neighbor-event socket holds (the kernel doubles the buffer asked for; at 192 MiB about
 * 105,000 events), the rest for everyone else's events meanwhile: a STALE wave of 250,000.
 */
export function writeBacklog(t: NeighborTuning): number {
  if (t.writeBacklog !== undefined) return t.writeBacklog;
  return Math.floor((0.2 * (2 * t.neighRcvbuf)) / EVENT_TRUESIZE);
}

/** Neighbor events in `bytes` of a socket's receive queue (0 when it cannot tell). */
export function queuedEvents(bytes: number | undefined): number {
  return bytes === undefined ? 0 : Math.floor(bytes / EVENT_TRUESIZE);
}

/**
 * The refresh path to run: `auto` takes managed when the kernel supports it. Forcing
 * `managed` on a kernel without it throws NotSupportedError (managed neighbors: 5.16).
 */
export function resolveMode(refresh: NeighborConfig['refresh'], managed: boolean): RefreshMode {
  if (refresh === 'legacy') return 'legacy';
  if (refresh === 'managed' && !managed) {
    throw new NotSupportedError(
      'managed-neighbors',
      'neighbor.refresh=managed: this kernel has no managed neighbor entries (NTF_EXT_MANAGED); use auto or legacy',
      { minKernel: '5.16' },
    );
  }
  return managed ? 'managed' : 'legacy';
}

export { matchGlob } from '../netlink/index.js';
