// Active-active: the same external IP on two nodes, each announcing it; the router installs
// one route with both nodes as next hops (ECMP), the client reaches the IP; when one node
// gives the IP up (extip del, as a drained node does) its next hop leaves the route and the
// other stays, the client still reaching the IP.
import { describe, expect, it } from 'vitest';
import { makeNetns, privileged, waitFor } from '../helpers/netns.js';
import { makeRouter, monitor, nextHops, nodeV4, pingOnce, startAgent } from './lab.js';

const { skip } = privileged();
const IP = '192.0.2.40';

describe.skipIf(skip)('active-active: one IP announced by two nodes', () => {
  it('the router spreads it over both (ECMP); a node that withdraws leaves the other', async () => {
    const nodes = [makeNetns('bgen1'), makeNetns('bgen2')];
    const client = makeNetns('bgec');
    const router = await makeRouter(nodes, client, { nodes: 2 });
    const agents = [await startAgent(nodes[0]!, 1), await startAgent(nodes[1]!, 2)];
    const mon = monitor(router, IP);
    for (const a of agents) expect(a.cli('extip', 'add', IP).status).toBe(0);
    const hops = () =>
      (router.kernelRoute(`${IP}/32`)[0]?.nexthops ?? [])
        .map((n) => n.gateway)
        .sort()
        .join(' ');
    await waitFor(() => hops() === `${nodeV4(1)} ${nodeV4(2)}`, {
      timeoutMs: 20_000,
      what: () => `ECMP route: ${JSON.stringify(router.kernelRoute(`${IP}/32`))}`,
    });
    expect(router.bgpRoutes(4)[`${IP}/32`]).toHaveLength(2);
    await waitFor(() => pingOnce(client, IP), { timeoutMs: 5000, what: `ping ${IP}` });

    expect(agents[0]!.cli('extip', 'del', IP).status).toBe(0);
    await waitFor(() => router.kernelRoute(`${IP}/32`)[0]?.gateway === nodeV4(2), {
      timeoutMs: 10_000,
      what: () => `only n2: ${JSON.stringify(router.kernelRoute(`${IP}/32`))}`,
    });
    expect(router.bgpRoutes(4)[`${IP}/32`]).toHaveLength(1);
    expect(pingOnce(client, IP)).toBe(true);
    // the route events as the kernel reported them: two next hops, then one (the monitor is
    // a process of its own: its last event can come after the route table was read)
    await waitFor(() => mon.events.length > 0 && nextHops(mon.events.at(-1)!) === 1, {
      timeoutMs: 5000,
      what: () => `the monitor's one-next-hop event: ${mon.events.map(nextHops).join(',')}`,
    });
    mon.stop();
    expect(mon.events.map(nextHops)).toContain(2);
  });
});
