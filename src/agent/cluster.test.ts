// AgentCluster's own timers run on the injected clock: with etcd unreachable, the neighbor
// subsystem's wait for the peers ends when that clock reaches PEERS_WAIT_MS (5 s), not before,
// and never by the process's time.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../config/index.js';
import { silentLogger } from '../log/index.js';
import { FakeClock } from '../sched/testing.js';
import { AgentCluster } from './cluster.js';

let running: AgentCluster | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe('AgentCluster timers', () => {
  it('the wait for the peers ends on the injected clock after 5 s when etcd does not answer', async () => {
    const cfg = defaultConfig();
    cfg.cluster.enabled = true;
    cfg.cluster.nodeName = 'n1';
    cfg.cluster.etcd.endpoints = ['127.0.0.1:1']; // refused: the member never becomes ready
    const clock = new FakeClock();
    const c = (running = new AgentCluster({
      cfg,
      registry: new Registry(),
      log: silentLogger(),
      hold: async () => undefined,
      deadline: () => undefined,
      peers: () => undefined,
      clock,
    }));
    let loaded = 0;
    await c.start([], () => loaded++);
    await clock.advanceAsync(4999);
    expect(loaded).toBe(0);
    await clock.advanceAsync(1);
    expect(loaded).toBe(1);
  });
});
