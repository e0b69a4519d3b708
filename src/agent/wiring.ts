// The agent's wiring list: every part, who owns its table, who writes the kernel, which feed
// it reads. agent.ts starts them in this order and stops them in reverse; the functions below
// give each subsystem its parameters from the agent.
//
//   NetlinkHandle  the agent's one request socket in the namespace (plus a subscription per
//                  reader), health-probed; every part below talks to the kernel through it.
//   DeviceFeed     links and addresses: started once by the agent; read by xdp, neighbor, extip.
//   RouteFeed      routes and rules: created once by the agent, started by its first
//                  listener; read by xdp (its route mirror) and neighbor (next-hop changes).
//   XdpForwarder   owns the XDP programs, pins and maps and writes them (libbpf); reads the
//                  device and route feeds, netconf, the node's policy (src/fib/wiring.ts).
//   NeighborSubsystem  owns the forwardable-IP and desired-neighbor tables and writes the
//                  kernel's neighbor entries; reads both feeds and the neighbor events.
//   ExternalIpSubsystem  owns the external-IP table; writes the holder's addresses and
//                  ARP/NDP announcements; reads the device feed.
//   AgentCluster   (cluster.ts) this node's share of the cluster IPs from etcd: hands them to
//                  extip, its peers' node IPs to neighbor (owner `cluster`) through the queue.
//   MissTracker    reads the XDP miss map; writes forwardable IPs (owner xdp-miss) through
//                  the ControlPlane, the one write queue (API, reload, miss tracker, peers).
//   ApiServer, MetricsServer  read the agent (handlers.ts, status.ts, health.ts); write nothing.
import type { Registry } from 'prom-client';
import type { ExternalIpParams } from '../extip/index.js';
import type { XdpForwarderParams } from '../fib/index.js';
import type { NeighborSubsystemParams } from '../neighbor/index.js';
import type { DeviceFeed, NetlinkHandle, RouteFeed, SocketName } from '../netlink/index.js';
import type { MissTrackerParams } from './miss-tracker.js';
import type { AgentView } from './view.js';

/** The agent as the wiring reads it, after its handle and feeds are open. */
export interface Wired extends AgentView {
  readonly registry: Registry;
  readonly routes: RouteFeed | undefined;
  socketReopened(socket: SocketName, cause: string, err?: unknown): void;
}

/** The namespace, handle and feeds every subsystem shares. */
function shared(a: Wired) {
  return {
    ...(a.netns ? { netns: a.netns } : {}),
    netlink: a.netlink as NetlinkHandle,
    devices: a.devices as DeviceFeed,
  };
}

export function xdpParams(a: Wired, objectPath: string | undefined): XdpForwarderParams {
  return {
    ...shared(a),
    routes: a.routes as RouteFeed,
    ...(objectPath ? { objectPath } : {}),
    config: a.xdpConfig(a.cfg),
    onSocketReopen: (cause, err) => a.socketReopened('genl', cause, err),
    onPass: (devices) => a.events.xdpPass(devices),
    registry: a.registry,
    log: a.log.child({ component: 'xdp' }),
  };
}

export function neighborParams(a: Wired, managedSupported: boolean): NeighborSubsystemParams {
  return {
    ...shared(a),
    routes: a.routes as RouteFeed,
    // The validated section under the config's own names, with the two shared options.
    config: { ...a.cfg.neighbor, devices: a.cfg.devices, holderName: a.cfg.extip.holderName },
    managedSupported,
    registry: a.registry,
    log: a.log, // the subsystem names itself (component: neighbor)
    events: a.events.sink,
  };
}

export function extipParams(a: Wired): ExternalIpParams {
  return {
    ...shared(a),
    config: a.cfg.extip, // validated; the subsystem reads its options under these names
    registry: a.registry,
    log: a.log.child({ component: 'extip' }),
    onSocketReopen: (cause, err) => a.socketReopened('packet', cause, err),
    events: a.events.sink,
    ...(a.cfg.cluster.enabled
      ? {
          cluster: {
            mayHold: (ip: string) => a.cluster?.member.mayHold(ip) === true,
            routedOnly: (ip: string) => a.cluster?.member.isActiveActive(ip) === true,
            holderName: a.cfg.cluster.holderName,
          },
          onExternalUp: (up: boolean) => a.cluster?.member.setAble(up),
        }
      : {}),
  };
}

/** The miss tracker over the forwarder's miss map, writing through the agent's queue. */
export function missTrackerParams(
  a: Wired,
  xdp: NonNullable<AgentView['xdp']>,
  neighbor: NonNullable<AgentView['neighbor']>,
): MissTrackerParams {
  const c = a.cfg.xdp.missTracker;
  const queued = (fn: () => unknown) => a.control.exclusive('the XDP miss tracker', fn);
  return {
    source: {
      takeMisses: () => {
        const taken = xdp.takeMisses();
        a.misses.record(taken);
        return taken;
      },
    },
    // Through the write queue, so its changes are ordered with the API's.
    sink: {
      upsert: (o, ips) => queued(() => neighbor.upsert(o, ips)),
      delete: (o, ips) => queued(() => neighbor.delete(o, ips)),
    },
    ttlMs: c.ttl,
    intervalMs: c.interval,
    registry: a.registry,
    log: a.log.child({ component: 'miss-tracker' }),
  };
}
