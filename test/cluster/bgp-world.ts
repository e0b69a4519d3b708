// Cluster mode over BGP, the lab both of its test files build: `count` fibkeeper nodes in
// cluster mode on one real etcd (each through a proxy of its own that a test can cut),
// peered with BFD to a real FRR router, and a client behind the router.
import { afterAll, beforeAll, onTestFinished } from 'vitest';
import { LocalEtcd } from '../../src/cluster/index.js';
import { makeNetns } from '../helpers/netns.js';
import {
  makeRouter,
  nodeV4,
  nodeV6,
  startAgent,
  type AgentHandle,
  type Router,
} from '../bgp/lab.js';
import { ProxyProc } from './world.js';

export interface BgpWorld {
  router: Router;
  client: string;
  agents: AgentHandle[];
  nodes: string[];
  /** Each node's own path to etcd. */
  proxies: ProxyProc[];
}

/** One real etcd for the file (started unless `skip`); the getter gives it to the tests. */
export function fileEtcd(skip: boolean): () => LocalEtcd {
  let etcd: LocalEtcd | undefined;
  beforeAll(async () => {
    if (!skip) etcd = await LocalEtcd.start();
  }, 30_000);
  afterAll(async () => {
    await etcd?.destroy();
  });
  return () => etcd!;
}

/** Node i's agent is named n<i>; `extra` adds lines to every agent's config. */
export async function bgpWorld(
  etcd: LocalEtcd,
  count: number,
  tag: string,
  extra: string[] = [],
): Promise<BgpWorld> {
  const nodes = Array.from({ length: count }, (_, k) => makeNetns(`${tag}n${k + 1}`));
  const port = Number(etcd.endpoint.split(':').pop());
  // In processes of their own: the test's spawnSync calls must not stall the agents' etcd.
  const proxies: ProxyProc[] = [];
  onTestFinished(() => {
    for (const p of proxies) p.close();
  });
  for (let k = 0; k < count; k++) proxies.push(await ProxyProc.start(port));
  const client = makeNetns(`${tag}c`);
  const router = await makeRouter(nodes, client, { nodes: count, bfd: true });
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
        `  etcd:\n    endpoints: ["${proxies[k]!.endpoint}"]`,
        ...extra,
      ]),
    );
  }
  return { router, client, agents, nodes, proxies };
}
