// Cluster mode over BGP, single holder: two nodes peered to a real FRR router, a real etcd,
// a client behind the router. The node that holds a cluster IP announces it; when the
// holder's agent is SIGKILLed, or stopped, the other node takes it and announces it, the
// client reaches it through the router — and the router's FIB never has two next hops for
// the IP: every route change of the router namespace is recorded (`ip monitor route`, the
// kernel's own report of each change) and checked. A cut of the holder's link (its BGP/BFD
// path to the router and its path to etcd black-holed at once, the link itself up) has the
// router drop the route by BFD and the other node take the IP after the lease.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { privileged, waitFor } from '../helpers/netns.js';
import { bgpWorld, fileEtcd, type BgpWorld } from './bgp-world.js';
import { monitor, nextHops, nodeV4, pingOnce, type Router } from '../bgp/lab.js';

const { skip } = privileged();
const IP = '192.0.2.30';

const etcd = fileEtcd(skip);

const world = (): Promise<BgpWorld> => bgpWorld(etcd(), 2, 'bgc');

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

/** Node i's link cut, its carrier up: every packet to and from the router dropped, and its
 * path to etcd black-holed (the link carries both). */
async function cutLink(w: BgpWorld, i: number): Promise<void> {
  const nft = [
    'table inet fkcut {',
    '  chain i { type filter hook input priority -300; policy drop; }',
    '  chain o { type filter hook output priority -300; policy drop; }',
    '}',
  ].join('\n');
  const r = spawnSync('ip', ['netns', 'exec', w.nodes[i - 1]!, 'nft', '-f', '-'], {
    input: nft,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`nft: ${r.stderr}`);
  await w.proxies[i - 1]!.cut();
}

describe.skipIf(skip)(
  'cluster mode over BGP: the holder announces, failover moves the route',
  () => {
    for (const how of ['SIGKILL', 'stop', 'link cut'] as const) {
      it(`${how} of the holder: the other node announces, never two next hops`, async () => {
        const w = await world();
        const { router, client, agents } = w;
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
          const t0 = performance.now();
          if (how === 'SIGKILL') holder.proc.kill('SIGKILL');
          else if (how === 'stop') holder.proc.kill('SIGTERM');
          else await cutLink(w, first);
          let gone: number | undefined;
          if (how === 'link cut') {
            // BFD (3 x 100 ms) drops the cut node's route long before the lease moves the IP.
            await waitFor(() => router.kernelRoute(`${IP}/32`).length === 0, {
              timeoutMs: 5000,
              intervalMs: 5,
              what: `the route via n${first} withdrawn`,
            });
            gone = performance.now() - t0;
          }
          const second = await holderByRouter(router, first).catch((err: unknown) => {
            const dump = agents.map(
              (a) =>
                `${a.cli('extip', 'list', '--json').stdout} ${a.cli('bgp', 'status', '--json').stdout} ${a.cli('cluster', 'status', '--json').stdout.slice(0, 1500)} ${a.log().slice(-1500)}`,
            );
            throw new Error(`${String(err)}\n${dump.join('\n----\n')}`);
          });
          console.log(
            `${how} of n${first}'s agent -> route via n${second} in ${(performance.now() - t0).toFixed(0)} ms${how === 'link cut' ? ` (route via n${first} gone from the router after ${gone?.toFixed(0)} ms)` : ''}`,
          );
          if (how === 'link cut') expect(gone, 'BFD dropped the route first').toBeDefined();
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
