// The neighbor tests' topology: a router namespace with two L2 devices towards two peer
// namespaces, and the agent's neighbor subsystem running in-process against the router.
//
//   peer A (pa0: 10.1.0.2/24, 10.1.0.3/24, 10.1.0.20/24, fd00:a::2/64) ── ra0 ─┐
//                                                                      router R (10.1.0.1, 10.2.0.1, fd00:a::1)
//   peer B (pb0: 10.2.0.2/24, 10.2.0.20/24)                             ── rb0 ─┘
//
// Routes in R: 10.9.0.0/24 via 10.1.0.2; fd00:99::/64 via fd00:a::2. Every peer address
// answers ARP/NDP, so the entries for them become REACHABLE.
import { onTestFinished } from 'vitest';
import { createLogger, silentLogger, type LogLevel } from '../../src/log/index.js';
import {
  FIBKEEPER_NEIGH_PROTOCOL,
  NeighborSubsystem,
  type NeighborConfig,
  type NeighborTuning,
} from '../../src/neighbor/index.js';
import { ifindexOf, ip, ipJson, makeNetns, sysctl, vethPair, waitFor } from '../helpers/netns.js';

export const PROTO = String(FIBKEEPER_NEIGH_PROTOCOL);

export interface Lab {
  r: string;
  a: string;
  b: string;
  ra0: number;
  rb0: number;
}

export function buildLab(tag: string): Lab {
  const r = makeNetns(`${tag}-r`);
  const a = makeNetns(`${tag}-a`);
  const b = makeNetns(`${tag}-b`);
  vethPair(r, 'ra0', a, 'pa0');
  vethPair(r, 'rb0', b, 'pb0');
  for (const [ns, dev, addrs] of [
    [r, 'ra0', ['10.1.0.1/24']],
    [r, 'rb0', ['10.2.0.1/24']],
    [a, 'pa0', ['10.1.0.2/24', '10.1.0.3/24', '10.1.0.20/24']],
    [b, 'pb0', ['10.2.0.2/24', '10.2.0.20/24']],
  ] as const) {
    for (const x of addrs) ip(ns, 'addr', 'add', x, 'dev', dev);
  }
  ip(r, '-6', 'addr', 'add', 'fd00:a::1/64', 'dev', 'ra0', 'nodad');
  ip(a, '-6', 'addr', 'add', 'fd00:a::2/64', 'dev', 'pa0', 'nodad');
  ip(r, 'route', 'add', '10.9.0.0/24', 'via', '10.1.0.2');
  ip(r, '-6', 'route', 'add', 'fd00:99::/64', 'via', 'fd00:a::2');
  sysctl(r, 'net.ipv4.ip_forward', 1);
  return { r, a, b, ra0: ifindexOf(r, 'ra0'), rb0: ifindexOf(r, 'rb0') };
}

export function config(over: Partial<NeighborConfig> = {}): NeighborConfig {
  return {
    devices: ['ra*', 'rb*'],
    holderName: 'fibkeeper0',
    refresh: 'auto',
    resyncInterval: 300_000,
    retryMin: 50,
    retryMax: 2000,
    unusableAfter: 30_000,
    rateLimit: 1000,
    ...over,
  };
}

/** A started subsystem for the router namespace, stopped when the test ends. */
export async function startAgent(
  ns: string,
  opts: {
    config?: Partial<NeighborConfig>;
    tuning?: Partial<NeighborTuning>;
    managed?: boolean;
    before?: (n: NeighborSubsystem) => void;
  } = {},
): Promise<NeighborSubsystem> {
  const n = new NeighborSubsystem({
    netns: ns,
    config: config(opts.config),
    managedSupported: opts.managed ?? true,
    // FKT_NEIGH_LOG=debug shows the subsystem's log while debugging a test.
    log: process.env.FKT_NEIGH_LOG
      ? createLogger(process.env.FKT_NEIGH_LOG as LogLevel)
      : silentLogger(),
    tuning: opts.tuning,
  });
  onTestFinished(() => n.stop());
  opts.before?.(n);
  await n.start();
  return n;
}

export interface IpNeigh {
  dst: string;
  dev: string;
  lladdr?: string;
  state: string[];
  protocol?: string;
  extern_learn?: null;
  managed?: null;
}

/** `ip -j neigh show nud all` without the kernel's own NOARP multicast entries. */
export function neighs(ns: string): IpNeigh[] {
  return ipJson<IpNeigh[]>(ns, 'neigh', 'show', 'nud', 'all').filter(
    (n) => !n.state.includes('NOARP'),
  );
}

export function entry(ns: string, dst: string, dev: string): IpNeigh | undefined {
  return neighs(ns).find((n) => n.dst === dst && n.dev === dev);
}

/** Entries carrying fibkeeper's mark, as "dst dev" strings, sorted. */
export function owned(ns: string): string[] {
  return neighs(ns)
    .filter((n) => n.protocol === PROTO)
    .map((n) => `${n.dst} ${n.dev}`)
    .sort();
}

/** The entry has extern_learn, fibkeeper's protocol and (when `managed`) the managed flag. */
export function hasMarks(n: IpNeigh | undefined, managed = true): boolean {
  return (
    n !== undefined &&
    n.extern_learn === null &&
    n.protocol === PROTO &&
    (managed ? n.managed === null : n.managed === undefined)
  );
}

export function waitEntry(
  ns: string,
  dst: string,
  dev: string,
  pred: (n: IpNeigh) => boolean = () => true,
  timeoutMs = 5000,
): Promise<IpNeigh> {
  return waitFor(
    () => {
      const n = entry(ns, dst, dev);
      return n !== undefined && pred(n) ? n : undefined;
    },
    { timeoutMs, what: `neighbor ${dst} dev ${dev}` },
  );
}

export function waitGone(ns: string, dst: string, dev: string, timeoutMs = 5000): Promise<boolean> {
  return waitFor(() => entry(ns, dst, dev) === undefined, {
    timeoutMs,
    what: `neighbor ${dst} dev ${dev} to go`,
  });
}

/** Prune rounds the subsystem has finished (the count of its prune duration histogram). */
export async function pruneRounds(n: NeighborSubsystem): Promise<number> {
  const text = await n.metrics.registry.metrics();
  const m = /^fibkeeper_neighbor_reconcile_duration_seconds_count\{op="prune"\} (\d+)$/m.exec(text);
  return m === null ? 0 : Number(m[1]);
}

/**
 * Waits until `k` more prune rounds have finished than when it was called: what "nothing
 * happened" is proven against (a round that did not run proves nothing).
 */
export async function afterPrunes(
  n: NeighborSubsystem,
  k: number,
  timeoutMs = 15_000,
): Promise<void> {
  const base = await pruneRounds(n);
  await waitFor(async () => (await pruneRounds(n)) >= base + k, {
    timeoutMs,
    what: `${k} more prune rounds after round ${base}`,
  });
}
