// Cluster mode over BGP, single holder: two nodes peered to a real FRR router, a real etcd,
// a client behind the router. The node that holds a cluster IP announces it; when the
// holder's agent is SIGKILLed, or stopped, the other node takes it and announces it, the
// client reaches it through the router — and the router's FIB never has two next hops for
// the IP: every route change of the router namespace is recorded (`ip monitor route`, the
// kernel's own report of each change) and checked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEtcd } from '../../src/cluster/index.js';
import { makeNetns, privileged, waitFor } from '../helpers/netns.js';
import {
  makeRouter,
  monitor,
  nextHops,
  nodeV4,
  nodeV6,
  pingOnce,
  startAgent,
  type AgentHandle,
  type Router,
} from '../bgp/lab.js';

const { skip } = privileged();
const IP = '192.0.2.30';

let etcd: LocalEtcd | undefined;
beforeAll(async () => {
  if (!skip) etcd = await LocalEtcd.start();
}, 30_000);
afterAll(async () => {
  await etcd?.destroy();
});

async function world(): Promise<{ router: Router; client: string; agents: AgentHandle[] }> {
  const nodes = [makeNetns('bgcn1'), makeNetns('bgcn2')];
  const client = makeNetns('bgcc');
  const router = await makeRouter(nodes, client, { nodes: 2, bfd: true });
  const agents: AgentHandle[] = [];
  const prefix = `/fkbgp${process.pid}x${Date.now()}/`;
  for (const [k, ns] of nodes.entries()) {
    const i = k + 1;
    agents.push(
      await startAgent(ns, i, [
        '  bfd:',
        '    interval: 100ms',
        'cluster:',
        '  enabled: true',
        `  nodeName: n${i}`,
        `  nodeIPs: ["${nodeV4(i)}", "${nodeV6(i)}"]`,
        `  prefix: ${prefix}`,
        `  etcd:\n    endpoints: ["${etcd!.endpoint}"]`,
      ]),
    );
  }
  return { router, client, agents };
}

/** The node (1-based) the router's FIB sends IP to, once there is exactly one. */
async function holderByRouter(router: Router, not?: number): Promise<number> {
  const gw = await waitFor(
    () => {
      const r = router.kernelRoute(`${IP}/32`);
      const g = r.length === 1 && r[0]!.nexthops === undefined ? r[0]!.gateway : undefined;
      return g !== undefined && g !== (not ? nodeV4(not) : undefined) ? g : undefined;
    },
    {
      timeoutMs: 20_000,
      what: () => `one route to ${IP}: ${JSON.stringify(router.kernelRoute(`${IP}/32`))}`,
    },
  );
  return [1, 2].find((i) => nodeV4(i) === gw)!;
}

describe.skipIf(skip)(
  'cluster mode over BGP: the holder announces, failover moves the route',
  () => {
    for (const how of ['SIGKILL', 'stop'] as const) {
      it(`${how} of the holder: the other node announces, never two next hops`, async () => {
        const { router, client, agents } = await world();
        const mon = monitor(router, IP);
        try {
          const add = agents[0]!.cli('cluster', 'extip', 'add', IP);
          expect(add.status, add.stderr).toBe(0);
          const first = await holderByRouter(router).catch((err: unknown) => {
            const dump = agents.map(
              (a) =>
                `${a.cli('extip', 'list', '--json').stdout} ${a.cli('bgp', 'status', '--json').stdout} ${a.cli('cluster', 'status', '--json').stdout} ${a.log().slice(-1500)}`,
            );
            throw new Error(`${String(err)}\n${dump.join('\n----\n')}`);
          });
          await waitFor(() => pingOnce(client, IP), {
            timeoutMs: 5000,
            what: `ping ${IP} via n${first}`,
          });
          const holder = agents[first - 1]!;
          if (how === 'SIGKILL') holder.proc.kill('SIGKILL');
          else holder.proc.kill('SIGTERM');
          const t0 = performance.now();
          const second = await holderByRouter(router, first).catch((err: unknown) => {
            const dump = agents.map(
              (a) =>
                `${a.cli('extip', 'list', '--json').stdout} ${a.cli('bgp', 'status', '--json').stdout} ${a.cli('cluster', 'status', '--json').stdout.slice(0, 1500)} ${a.log().slice(-1500)}`,
            );
            throw new Error(`${String(err)}\n${dump.join('\n----\n')}`);
          });
          console.log(
            `${how} of n${first}'s agent -> route via n${second} in ${(performance.now() - t0).toFixed(0)} ms`,
          );
          expect(second).not.toBe(first);
          await waitFor(() => pingOnce(client, IP), {
            timeoutMs: 5000,
            what: `ping ${IP} via n${second}`,
          });
          expect(mon.events.length).toBeGreaterThanOrEqual(2);
          for (const e of mon.events)
            expect(
              nextHops(e),
              `router FIB event: ${e}\nall: ${mon.events.join('\n')}`,
            ).toBeLessThanOrEqual(1);
        } finally {
          mon.stop();
        }
      });
    }
  },
);
