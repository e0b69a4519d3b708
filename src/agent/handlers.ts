// The control API's handlers over the running agent.
import type { ControlHandlers } from '../api/index.js';
import { InvalidArgumentError, NotSupportedError } from '../errors/index.js';
import { canonicalIp } from '../ipaddr/index.js';
import type { Agent } from './agent.js';
import { RESERVED_OWNERS } from './agent.js';
import { buildStatus } from './status.js';

function checkOwnerFree(owner: string): void {
  if (RESERVED_OWNERS.has(owner)) {
    throw new InvalidArgumentError(
      `owner "${owner}" is managed by the agent itself (${owner === 'config' ? 'forwardable.static in the config file' : 'the XDP miss tracker'}); use another owner name`,
    );
  }
}

export function handlersFor(agent: Agent): ControlHandlers {
  const neighbor = () => {
    if (!agent.neighbor) {
      throw new NotSupportedError(
        'neighbor',
        'the neighbor subsystem is off (neighbor.enabled: false)',
      );
    }
    return agent.neighbor;
  };
  const extip = () => {
    if (!agent.extip)
      throw new NotSupportedError('extip', 'external IPs are off (extip.enabled: false)');
    return agent.extip;
  };
  const state = () => agent.state;
  /**
   * Applies `next` as the owner's whole set, then writes the state file; if the write
   * fails the owner's previous set is restored, so the API never half-applies.
   */
  const commitOwner = <T>(
    owner: string,
    apply: () => T,
    next: (prev: Set<string>) => Set<string>,
  ): T => {
    const prev = state().owner(owner);
    const changed = apply();
    try {
      state().setOwner(owner, [...next(new Set(prev))]);
    } catch (err) {
      neighbor().setOwner(owner, prev);
      throw err;
    }
    return changed;
  };
  const canon = (ips: readonly string[]) => ips.map((ip) => canonicalIp(ip));
  return {
    async forwardableAdd(owner, ips) {
      checkOwnerFree(owner);
      return commitOwner(
        owner,
        () => neighbor().upsert(owner, ips),
        (prev) => new Set([...prev, ...canon(ips)]),
      );
    },
    async forwardableDelete(owner, ips) {
      checkOwnerFree(owner);
      return commitOwner(
        owner,
        () => neighbor().delete(owner, ips),
        (prev) => {
          for (const ip of canon(ips)) prev.delete(ip);
          return prev;
        },
      );
    },
    async forwardableSetOwner(owner, ips) {
      checkOwnerFree(owner);
      return commitOwner(
        owner,
        () => neighbor().setOwner(owner, ips),
        () => new Set(canon(ips)),
      );
    },
    async forwardableList() {
      return neighbor()
        .list()
        .map((r) => ({ ip: r.ip, owners: [...r.owners] }));
    },
    async extipAdd(ips) {
      const prev = state().extip;
      await extip().assign(ips);
      const added = canon(ips).filter((ip) => !prev.includes(ip));
      try {
        state().setExtip([...prev, ...added]);
      } catch (err) {
        await extip().unassign(added);
        throw err;
      }
    },
    async extipDelete(ips) {
      const prev = state().extip;
      await extip().unassign(ips);
      const gone = new Set(canon(ips));
      try {
        state().setExtip(prev.filter((ip) => !gone.has(ip)));
      } catch (err) {
        await extip().assign(prev.filter((ip) => gone.has(ip)));
        throw err;
      }
    },
    async extipList() {
      return extip()
        .list()
        .map((s) => ({
          ip: s.ip,
          state: s.state,
          announcedAt: s.announcedAt === undefined ? null : new Date(s.announcedAt).toISOString(),
          lastError: s.lastError ?? null,
        }));
    },
    async status() {
      return buildStatus(agent);
    },
    async probe() {
      return agent.probeReport ?? null;
    },
    async xdpDetach() {
      if (!agent.xdp) throw new NotSupportedError('xdp', 'XDP is off (xdp.enabled: false)');
      return { detached: await agent.xdp.detach() };
    },
  };
}
