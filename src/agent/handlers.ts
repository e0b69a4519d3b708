// The control API's handlers over the running agent. The API has checked the request (the
// shared rules of src/config/rules); every change goes through the agent's write queue,
// which answers once it is durable and applied. Until the agent runs (and while it stops),
// every call but status answers 503.
//
// HANDLERS is a table of one small handler per operation of the API (ControlHandlers), each
// given the agent first; handlersFor binds them to one agent.
import type { ControlHandlers } from '../api/index.js';
import { conflictError } from '../config/index.js';
import {
  ConflictError,
  FibkeeperError,
  NotFoundError,
  NotSupportedError,
  TimeoutError,
  describeError,
} from '../errors/index.js';
import { DuplicateAddressError } from '../extip/index.js';
import { explainIp } from './explain.js';
import { typeMatches } from '../events/index.js';
import type { AgentView } from './view.js';
import { staticSets } from './restore.js';
import { buildStatus, clusterStatus } from './status.js';

/** One handler per operation: the agent first, then the operation's own arguments. */
type HandlerTable = {
  [K in keyof ControlHandlers]: (
    agent: AgentView,
    ...args: Parameters<ControlHandlers[K]>
  ) => ReturnType<ControlHandlers[K]>;
};

export const HANDLERS: HandlerTable = {
  forwardableAdd: async (a, owner, ips, signal) =>
    submit(a, { op: 'forwardable.add', owner, ips }, signal),
  forwardableDelete: async (a, owner, ips, signal) =>
    submit(a, { op: 'forwardable.del', owner, ips }, signal),
  forwardableSetOwner: async (a, owner, ips, signal) =>
    submit(a, { op: 'forwardable.set', owner, ips }, signal),
  forwardableList: async (a) =>
    neighborOf(a)
      .list()
      .map((r) => ({ ip: r.ip, owners: [...r.owners] })),
  extipAdd: async (a, ips, signal) => {
    await submit(a, { op: 'extip.add', ips }, signal);
  },
  extipDelete: async (a, ips, signal) => {
    const r = await submit(a, { op: 'extip.del', ips }, signal);
    return { absent: r?.absent ?? [] };
  },
  extipList: async (a) =>
    extipOf(a)
      .list()
      .map((s) => ({
        ip: s.ip,
        state: s.state,
        announcedAt: s.announcedAt === undefined ? null : new Date(s.announcedAt).toISOString(),
        lastError: s.lastError ?? null,
        conflict: s.conflict ?? null,
      })),
  status: async (a, q) => {
    if (q === undefined) return buildStatus(a);
    let ifindex: number | undefined;
    if (q.device !== undefined) {
      ifindex = a.devices?.linkByName(q.device)?.index;
      if (ifindex === undefined) {
        throw new NotFoundError(
          `no device ${q.device} in the namespace the agent manages (ip link shows them)`,
        );
      }
    }
    const explain = q.ip === undefined ? undefined : await explainIp(a, q.ip);
    return buildStatus(a, {
      ...(q.limit !== undefined ? { limit: q.limit } : {}),
      query: { ...q, ...(ifindex !== undefined ? { ifindex } : {}) },
      ...(explain ? { explain } : {}),
    });
  },
  events: (a, q) => {
    const log = a.events.log;
    const initial = log.read(q);
    if (!q.follow) return { initial };
    return {
      initial,
      follow: (push) =>
        log.follow((e) => {
          if (typeMatches(e.type, q.types)) push(e);
        }),
      onCut: () => a.metrics.eventFollowersCut.inc(),
    };
  },
  xdpMisses: async (a, limit) => {
    const x = xdpOf(a);
    const nameOf = (i: number) => a.devices?.link(i)?.name ?? `if${i}`;
    return {
      tracker: a.missTracker !== undefined,
      misses: a.misses.top(limit, x.readMisses(), nameOf),
    };
  },
  probe: async (a) => {
    a.assertRunning();
    return a.probeReport ?? null;
  },
  xdpDetach: async (a) => {
    const detached = await xdpOf(a).detach();
    a.events.xdpDetached(detached);
    return { detached };
  },
  bgpStatus: async (a) => {
    a.assertRunning();
    if (!a.bgp) throw new NotSupportedError('bgp', 'BGP announcement is off (bgp.enabled: false)');
    return a.bgp.speaker.status();
  },
  clusterStatus: async (a) => {
    clusterOf(a);
    return clusterStatus(a);
  },
  clusterExtipList: async (a) => {
    const list = await etcd('cluster extip list', () => clusterOf(a).admin.list());
    return list.map((d) => ({
      ip: d.ip,
      nodes: [...(d.eligible.nodes ?? [])],
      labels: { ...(d.eligible.labels ?? {}) },
      mode: d.eligible.mode ?? 'single',
      owner: d.owner ?? null,
    }));
  },
  clusterExtipAdd: async (a, ips, eligible) => {
    const c = clusterOf(a);
    // In the write queue: checked against the node-local IPs as they are now, and no
    // extip add of the same IP can pass in between.
    await a.control.exclusive('a cluster extip add', async () => {
      checkClusterIps(a, ips);
      await probeNew(a, ips, c.member.desiredIps());
      await etcd('cluster extip add', () => c.add(ips, eligible));
    });
  },
  clusterExtipDelete: async (a, ips) => {
    const c = clusterOf(a);
    return etcd('cluster extip del', () => c.del(ips));
  },
  clusterDrain: async (a, node) => {
    const c = clusterOf(a);
    return etcd('cluster drain', () => c.drain(node));
  },
  clusterUncordon: async (a, node) => {
    const c = clusterOf(a);
    return etcd('cluster uncordon', () => c.uncordon(node));
  },
};

/** The API's handlers over `agent`: HANDLERS, each bound to it. */
export function handlersFor(agent: AgentView): ControlHandlers {
  const bound: Record<string, unknown> = {};
  for (const [name, h] of Object.entries(HANDLERS)) {
    bound[name] = (...args: unknown[]) => (h as (...a: unknown[]) => unknown)(agent, ...args);
  }
  return bound as unknown as ControlHandlers;
}

// --- what the handlers share --------------------------------------------------------------

/** A change through the agent's write queue (503 until the agent runs). */
function submit(agent: AgentView, ...args: Parameters<AgentView['control']['submit']>) {
  agent.assertRunning();
  return agent.control.submit(...args);
}

function neighborOf(agent: AgentView): NonNullable<AgentView['neighbor']> {
  agent.assertRunning();
  if (!agent.neighbor) {
    throw new NotSupportedError(
      'neighbor',
      'the neighbor subsystem is off (neighbor.enabled: false)',
    );
  }
  return agent.neighbor;
}

function extipOf(agent: AgentView): NonNullable<AgentView['extip']> {
  agent.assertRunning();
  if (!agent.extip)
    throw new NotSupportedError('extip', 'external IPs are off (extip.enabled: false)');
  return agent.extip;
}

function xdpOf(agent: AgentView): NonNullable<AgentView['xdp']> {
  agent.assertRunning();
  if (!agent.xdp) throw new NotSupportedError('xdp', 'XDP is off (xdp.enabled: false)');
  return agent.xdp;
}

function clusterOf(agent: AgentView): NonNullable<AgentView['cluster']> {
  agent.assertRunning();
  if (!agent.cluster) {
    throw new NotSupportedError('cluster', 'cluster mode is off (cluster.enabled: false)');
  }
  return agent.cluster;
}

/** An etcd request: what failed below our own errors is etcd being out of reach. */
async function etcd<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof FibkeeperError && err.code !== 'FIBKEEPER_ERR_TIMEOUT') throw err;
    throw new TimeoutError(
      `${what}: etcd did not answer (${describeError(err)}); the desired set may or may not have changed: fibkeeper cluster extip list shows it`,
      { cause: err },
    );
  }
}

/** A cluster IP must not be node-local or forwardable here, nor one of this node's addresses. */
function checkClusterIps(agent: AgentView, ips: readonly string[]): void {
  const local = new Set([...agent.store.state.extip, ...staticSets(agent.cfg).extip]);
  for (const ip of ips) {
    if (local.has(ip)) {
      throw new ConflictError(
        `${ip} is a node-local external IP of this node, so it cannot also be a cluster external IP; remove it first (fibkeeper extip del ${ip}, or from extip.static)`,
      );
    }
    const owners = agent.neighbor?.owners(ip) ?? [];
    if (owners.length > 0) {
      throw conflictError(
        ip,
        `forwardable (owner ${owners.join(', ')})`,
        'external',
        `remove it first: fibkeeper forwardable del ${ip} --owner ${owners[0]}`,
      );
    }
  }
  agent.extip?.validate(ips, { forCluster: true });
}

/**
 * Duplicate address detection on this node's external interface for the IPs that are new
 * to the desired set: one that another host uses is refused with its MAC, never stored.
 */
async function probeNew(
  agent: AgentView,
  ips: readonly string[],
  known: ReadonlySet<string>,
): Promise<void> {
  const x = agent.extip;
  if (x === undefined) return;
  await Promise.all(
    ips
      .filter((ip) => !known.has(ip))
      .map((ip) =>
        x.probe(ip).catch((err: unknown) => {
          if (!(err instanceof DuplicateAddressError)) throw err;
          const e = new ConflictError(
            `${ip} is in use on the segment: ${err.what} from ${err.mac}; not added to the cluster (a cluster IP is announced and defended by its holder, and would take this address from that host); free it there, or choose another`,
            { cause: err },
          );
          throw Object.assign(e, { details: { ip, mac: err.mac, what: err.what } });
        }),
      ),
  );
}
