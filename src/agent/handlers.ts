// The control API's handlers over the running agent. The API has checked the request (the
// shared rules of src/config/rules); every change goes through the agent's write queue,
// which answers once it is durable and applied. Until the agent runs (and while it stops),
// every call but status answers 503.
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

export function handlersFor(agent: AgentView): ControlHandlers {
  const neighbor = () => {
    agent.assertRunning();
    if (!agent.neighbor) {
      throw new NotSupportedError(
        'neighbor',
        'the neighbor subsystem is off (neighbor.enabled: false)',
      );
    }
    return agent.neighbor;
  };
  const extip = () => {
    agent.assertRunning();
    if (!agent.extip)
      throw new NotSupportedError('extip', 'external IPs are off (extip.enabled: false)');
    return agent.extip;
  };
  const cluster = () => {
    agent.assertRunning();
    if (!agent.cluster) {
      throw new NotSupportedError('cluster', 'cluster mode is off (cluster.enabled: false)');
    }
    return agent.cluster;
  };
  /** An etcd request: what failed below our own errors is etcd being out of reach. */
  const etcd = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof FibkeeperError && err.code !== 'FIBKEEPER_ERR_TIMEOUT') throw err;
      throw new TimeoutError(
        `${what}: etcd did not answer (${describeError(err)}); the desired set may or may not have changed: fibkeeper cluster extip list shows it`,
        { cause: err },
      );
    }
  };
  /** A cluster IP must not be node-local or forwardable here, nor one of this node's addresses. */
  const checkClusterIps = (ips: readonly string[]): void => {
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
  };
  /**
   * Duplicate address detection on this node's external interface for the IPs that are new
   * to the desired set: one that another host uses is refused with its MAC, never stored.
   */
  const probeNew = async (ips: readonly string[], known: ReadonlySet<string>): Promise<void> => {
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
  };
  const submit = (...args: Parameters<AgentView['control']['submit']>) => {
    agent.assertRunning();
    return agent.control.submit(...args);
  };
  return {
    async forwardableAdd(owner, ips, signal) {
      return submit({ op: 'forwardable.add', owner, ips }, signal);
    },
    async forwardableDelete(owner, ips, signal) {
      return submit({ op: 'forwardable.del', owner, ips }, signal);
    },
    async forwardableSetOwner(owner, ips, signal) {
      return submit({ op: 'forwardable.set', owner, ips }, signal);
    },
    async forwardableList() {
      return neighbor()
        .list()
        .map((r) => ({ ip: r.ip, owners: [...r.owners] }));
    },
    async extipAdd(ips, signal) {
      await submit({ op: 'extip.add', ips }, signal);
    },
    async extipDelete(ips, signal) {
      const r = await submit({ op: 'extip.del', ips }, signal);
      return { absent: r?.absent ?? [] };
    },
    async extipList() {
      return extip()
        .list()
        .map((s) => ({
          ip: s.ip,
          state: s.state,
          announcedAt: s.announcedAt === undefined ? null : new Date(s.announcedAt).toISOString(),
          lastError: s.lastError ?? null,
          conflict: s.conflict ?? null,
        }));
    },
    async status(q) {
      if (q === undefined) return buildStatus(agent);
      let ifindex: number | undefined;
      if (q.device !== undefined) {
        ifindex = agent.devices?.linkByName(q.device)?.index;
        if (ifindex === undefined) {
          throw new NotFoundError(
            `no device ${q.device} in the namespace the agent manages (ip link shows them)`,
          );
        }
      }
      const explain = q.ip === undefined ? undefined : await explainIp(agent, q.ip);
      return buildStatus(agent, {
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        query: { ...q, ...(ifindex !== undefined ? { ifindex } : {}) },
        ...(explain ? { explain } : {}),
      });
    },
    events(q) {
      const log = agent.events.log;
      const initial = log.read(q);
      if (!q.follow) return { initial };
      return {
        initial,
        follow: (push) =>
          log.follow((e) => {
            if (typeMatches(e.type, q.types)) push(e);
          }),
        onCut: () => agent.metrics.eventFollowersCut.inc(),
      };
    },
    async xdpMisses(limit) {
      agent.assertRunning();
      const x = agent.xdp;
      if (!x) throw new NotSupportedError('xdp', 'XDP is off (xdp.enabled: false)');
      const nameOf = (i: number) => agent.devices?.link(i)?.name ?? `if${i}`;
      return {
        tracker: agent.missTracker !== undefined,
        misses: agent.misses.top(limit, x.readMisses(), nameOf),
      };
    },
    async probe() {
      agent.assertRunning();
      return agent.probeReport ?? null;
    },
    async bgpStatus() {
      agent.assertRunning();
      if (!agent.bgp)
        throw new NotSupportedError('bgp', 'BGP announcement is off (bgp.enabled: false)');
      return agent.bgp.speaker.status();
    },
    async clusterStatus() {
      cluster();
      return clusterStatus(agent);
    },
    async clusterExtipList() {
      const list = await etcd('cluster extip list', () => cluster().admin.list());
      return list.map((d) => ({
        ip: d.ip,
        nodes: [...(d.eligible.nodes ?? [])],
        labels: { ...(d.eligible.labels ?? {}) },
        owner: d.owner ?? null,
      }));
    },
    async clusterExtipAdd(ips, eligible) {
      const c = cluster();
      // In the write queue: checked against the node-local IPs as they are now, and no
      // extip add of the same IP can pass in between.
      await agent.control.exclusive('a cluster extip add', async () => {
        checkClusterIps(ips);
        await probeNew(ips, c.member.desiredIps());
        await etcd('cluster extip add', () => c.add(ips, eligible));
      });
    },
    async clusterExtipDelete(ips) {
      const c = cluster();
      return etcd('cluster extip del', () => c.del(ips));
    },
    async clusterDrain(node) {
      const c = cluster();
      return etcd('cluster drain', () => c.drain(node));
    },
    async clusterUncordon(node) {
      const c = cluster();
      return etcd('cluster uncordon', () => c.uncordon(node));
    },
    async xdpDetach() {
      agent.assertRunning();
      if (!agent.xdp) throw new NotSupportedError('xdp', 'XDP is off (xdp.enabled: false)');
      const detached = await agent.xdp.detach();
      agent.events.xdpDetached(detached);
      return { detached };
    },
  };
}
