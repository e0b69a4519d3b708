// The external-IP subsystem's wiring list: every part, one sentence each (who owns the table,
// who writes the kernel, which feed it reads), built in this order by wireExtip() and torn
// down in reverse by unwireExtip(). subsystem.ts is the facade over these parts: requests,
// validation and health.
import type { EventSink } from '../events/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { PacketSocketOptions } from '../native/index.js';
import { DeviceFeed, NetlinkHandle } from '../netlink/index.js';
import type { Clock } from '../sched/index.js';
import { Announcer } from './announcer.js';
import { Assigner } from './assigner.js';
import type { ClusterIps } from './cluster.js';
import { ConflictLog } from './conflict-log.js';
import { DeviceSync } from './device-sync.js';
import { ExternalWatch } from './external-watch.js';
import { Holder } from './holder.js';
import type { FrameSocket } from './linkio.js';
import type { ExtipMetrics } from './metrics.js';
import type { NodeAddresses } from './node-addresses.js';
import type { ExternalIpConfig } from './options.js';
import { HolderRepair } from './repair.js';

export interface ExtipParts {
  /** Netlink requests (link and address writes, single gets): the agent's handle, or ours. */
  nl: NetlinkHandle;
  /** The namespace's links and addresses, the only ones extip reads: the agent's feed, or ours. */
  feed: DeviceFeed;
  /** Hears the feed, routes each event to the part that owns it, runs the periodic check. */
  sync: DeviceSync;
  /** Owns the holder device: creates or adopts it, writes its addresses (the assigner's ops). */
  holder: Holder;
  /** Logs other hosts' claims on our IPs, one line per interval however many frames. */
  conflictLog: ConflictLog;
  /** The external interface (found in the feed): its packet sockets, DAD, ARP/NDP answers. */
  ext: ExternalWatch;
  /** Owns the announcement schedule (bursts, refresh, defence); sends through `ext`. */
  announcer: Announcer;
  /** Owns the table of node-local external IPs; drives the holder's addresses towards it. */
  assigner: Assigner;
  /** Sets the holder up again, or recreates it, when someone else changed it. */
  repair: HolderRepair;
  /** Cluster mode: owns the cluster IPs, on a holder and fence of their own (cluster.ts). */
  cluster: ClusterIps | undefined;
}

/** What the parts need from the facade and the agent. */
export interface WiringContext {
  cfg: ExternalIpConfig;
  netns: string | undefined;
  /** Shared by the agent (not made, not closed here). */
  netlink?: NetlinkHandle;
  devices?: DeviceFeed;
  node: NodeAddresses;
  metrics: ExtipMetrics;
  log: Logger;
  clock: Clock;
  events?: EventSink;
  cluster: ClusterIps | undefined;
  /** Assigned and, a cluster IP, held with a valid lease: answer for it and defend it. */
  owns(ip: string): boolean;
  openSocket?: (o: PacketSocketOptions) => FrameSocket;
  onSocketReopen?: (cause: string, err?: unknown) => void;
  onExternalUp?: (up: boolean) => void;
  /** Throws when the facade was stopped meanwhile (checked after every await). */
  checkStopped(): void;
}

/**
 * Builds the parts into `parts` in order (so that unwireExtip() closes whatever was made
 * when start-up fails half-way): the feed first, its listener at once, then the holder, the
 * external interface, the announcer, the assigner and the repair; the cluster IPs; last the
 * listener begins (adopts what the holder carries, replays the events held meanwhile).
 */
export async function wireExtip(ctx: WiringContext, parts: Partial<ExtipParts>): Promise<void> {
  const { cfg, log, clock, metrics } = ctx;
  const nl = (parts.nl = ctx.netlink ?? NetlinkHandle.open({ netns: ctx.netns }));
  const feed = (parts.feed = ctx.devices ?? new DeviceFeed({ nl, log, clock }));
  const sync = (parts.sync = new DeviceSync({
    feed,
    node: ctx.node,
    metrics,
    log,
    clock,
    checkIntervalMs: cfg.checkInterval,
  }));
  await feed.start();
  ctx.checkStopped();
  const holder = (parts.holder = new Holder({
    nl,
    devices: feed,
    name: cfg.holderName,
    kind: cfg.holderKind,
    // the holder sees no segment: DAD there proves nothing (ours runs on the interface)
    nodad: true,
    log,
    onMissing: () => void parts.repair?.recreate(),
  }));
  await holder.ensure();
  ctx.checkStopped();
  const ext = (parts.ext = await openExternal(ctx, parts));
  ctx.checkStopped();
  const announcer = (parts.announcer = new Announcer({
    count: cfg.announceCount,
    intervalMs: cfg.announceInterval,
    refreshIntervalMs: cfg.refreshInterval,
    defendIntervalMs: cfg.defendInterval,
    defendRatePerSecond: cfg.defendRate,
    sink: ext,
    clock,
    log,
    metrics,
    ...(ctx.cluster ? { allowed: (ip: string) => ctx.cluster!.mayAnswer(ip) } : {}),
  }));
  const assigner = (parts.assigner = new Assigner({
    ops: holder,
    announcer,
    clock,
    log,
    metrics,
    ...(cfg.dad ? { dad: (ip: ParsedIp) => ext.dad.probe(ip) } : {}),
    ...(ctx.events ? { events: ctx.events } : {}),
  }));
  const repair = (parts.repair = new HolderRepair({ nl, holder, assigner, metrics, log, clock }));
  parts.cluster = ctx.cluster;
  await ctx.cluster?.start({ nl, netns: ctx.netns, announcer, extIfindex: ext.link.ifindex });
  ctx.checkStopped();
  sync.begin({ holder, assigner, ext, cluster: ctx.cluster, repair });
}

/** The external interface's watch; what its listeners see goes to the announcer and log. */
function openExternal(ctx: WiringContext, parts: Partial<ExtipParts>): Promise<ExternalWatch> {
  const conflictLog = (parts.conflictLog = new ConflictLog({
    log: ctx.log,
    clock: ctx.clock,
    intervalMs: Math.max(1000, ctx.cfg.defendInterval),
    ...(ctx.events ? { events: ctx.events } : {}),
  }));
  return ExternalWatch.open({
    devices: parts.feed!,
    netns: ctx.netns,
    cfg: ctx.cfg,
    log: ctx.log,
    metrics: ctx.metrics,
    clock: ctx.clock,
    owns: ctx.owns,
    onConflict: (c) => {
      ctx.metrics.conflict(c.family === 4 ? 'ipv4' : 'ipv6');
      conflictLog.record(c, parts.announcer?.defend(c.ip) === true);
    },
    onLinkChange: () => {
      parts.announcer?.burstAll('link');
      parts.assigner?.retryFailed(); // probes can go out again
    },
    ...(ctx.onExternalUp ? { onUpChange: ctx.onExternalUp } : {}),
    openSocket: ctx.openSocket,
    onSocketReopen: ctx.onSocketReopen,
    clusterMode: ctx.cluster !== undefined,
  });
}

/**
 * Stops what wireExtip() made, in reverse order (also half-way through a failed start);
 * the feed and the handle only when they are ours. Addresses stay. Idempotent.
 */
export async function unwireExtip(
  parts: Partial<ExtipParts>,
  shared: { netlink: boolean; devices: boolean },
  cluster: ClusterIps | undefined,
): Promise<void> {
  const syncing = parts.sync?.stop();
  const repairing = parts.repair?.stop();
  parts.assigner?.stop();
  cluster?.stop();
  parts.announcer?.stop();
  parts.conflictLog?.stop();
  parts.ext?.close();
  if (!shared.devices) parts.feed?.stop();
  if (!shared.netlink) parts.nl?.close();
  await Promise.allSettled([syncing, repairing]);
}
