// The control API's handlers over the running agent. The API has checked the request (the
// shared rules of src/config/rules); every change goes through the agent's write queue,
// which answers once it is durable and applied. Until the agent runs (and while it stops),
// every call but status answers 503.
import type { ControlHandlers } from '../api/index.js';
import { NotSupportedError } from '../errors/index.js';
import type { Agent } from './agent.js';
import { buildStatus } from './status.js';

export function handlersFor(agent: Agent): ControlHandlers {
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
  const submit = (...args: Parameters<Agent['control']['submit']>) => {
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
      await submit({ op: 'extip.del', ips }, signal);
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
    async status() {
      return buildStatus(agent);
    },
    async probe() {
      agent.assertRunning();
      return agent.probeReport ?? null;
    },
    async xdpDetach() {
      agent.assertRunning();
      if (!agent.xdp) throw new NotSupportedError('xdp', 'XDP is off (xdp.enabled: false)');
      return { detached: await agent.xdp.detach() };
    },
  };
}
