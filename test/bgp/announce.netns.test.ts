// Node-local external IPs announced over BGP to a real FRR router: after `extip add` the
// route is in the router's BGP table and kernel FIB with the node as next hop and the client
// behind the router pings the IP; after `extip del` both are gone. IPv4 and IPv6 (MP-BGP).
import { describe, expect, it } from 'vitest';
import { makeNetns, privileged, waitFor } from '../helpers/netns.js';
import { CLIENT_V4, makeRouter, nodeV4, nodeV6, pingOnce, startAgent } from './lab.js';

const { skip } = privileged();
const V4 = '192.0.2.10';
const V6 = '2001:db8:5::10';

describe.skipIf(skip)('BGP announcement of node-local external IPs', () => {
  it('announces on extip add, withdraws on del, IPv4 and IPv6, reachable through the router', async () => {
    const node = makeNetns('bgpn');
    const client = makeNetns('bgpc');
    const router = await makeRouter([node], client, { nodes: 1 });
    const agent = await startAgent(node, 1);
    const established = () => {
      const s = JSON.parse(router.vtysh('show bgp neighbors json')) as Record<
        string,
        { bgpState: string }
      >;
      return s[nodeV4(1)]?.bgpState === 'Established' && s[nodeV6(1)]?.bgpState === 'Established';
    };
    await waitFor(established, { timeoutMs: 20_000, what: 'both sessions established' });

    const add = agent.cli('extip', 'add', V4, V6);
    expect(add.status, add.stderr).toBe(0);
    await waitFor(() => router.kernelRoute(`${V4}/32`)[0]?.gateway === nodeV4(1), {
      timeoutMs: 10_000,
      what: () =>
        `${V4} via ${nodeV4(1)} in the router: ${JSON.stringify(router.kernelRoute(`${V4}/32`))}`,
    });
    await waitFor(() => router.kernelRoute(`${V6}/128`).length === 1, {
      timeoutMs: 10_000,
      what: `${V6} in the router's FIB`,
    });
    const v4 = router.bgpRoutes(4)[`${V4}/32`];
    expect(v4?.map((p) => p.nexthops[0]?.ip)).toEqual([nodeV4(1)]);
    const v6 = router.bgpRoutes(6)[`${V6}/128`];
    expect(v6).toHaveLength(1);
    expect(v6![0]!.nexthops.map((n) => n.ip)).toContain(nodeV6(1));
    // only the external IPs: not the node's own addresses
    expect(Object.keys(router.bgpRoutes(4))).toEqual([`${V4}/32`]);
    expect(Object.keys(router.bgpRoutes(6))).toEqual([`${V6}/128`]);
    expect(await waitFor(() => pingOnce(client, V4), { timeoutMs: 5000, what: `ping ${V4}` })).toBe(
      true,
    );
    expect(await waitFor(() => pingOnce(client, V6), { timeoutMs: 5000, what: `ping ${V6}` })).toBe(
      true,
    );

    // status: both sessions established, one route advertised to each
    const st = agent.cli('bgp', 'status', '--json');
    expect(st.status, st.stderr).toBe(0);
    const doc = JSON.parse(st.stdout) as {
      peers: { address: string; session: string; advertised: number }[];
      announced: string[];
    };
    expect(doc.announced).toEqual([V6, V4].sort());
    expect(doc.peers.map((p) => [p.address, p.session, p.advertised])).toEqual([
      [`10.77.1.1`, 'Established', 1],
      ['fd77:1::1', 'Established', 1],
    ]);

    const text = agent.cli('bgp', 'status').stdout;
    expect(text).toMatch(
      /^10\.77\.1\.1\s+65000\s+fk_peer0\s+up\s+Established\s+\S+\s+on\s+off\s+1\s+-$/m,
    );
    expect(text).toContain('announced: 2 (2 advertised, 0 withdrawn since start)');
    expect(text).toContain('graceful restart: off');

    const del = agent.cli('extip', 'del', V4, V6);
    expect(del.status, del.stderr).toBe(0);
    await waitFor(
      () =>
        router.bgpRoutes(4)[`${V4}/32`] === undefined &&
        router.bgpRoutes(6)[`${V6}/128`] === undefined,
      {
        timeoutMs: 10_000,
        what: 'both routes withdrawn',
      },
    );
    expect(router.kernelRoute(`${V4}/32`)).toEqual([]);
    expect(router.kernelRoute(`${V6}/128`)).toEqual([]);
    // the sessions stay up
    expect(established()).toBe(true);
    expect(pingOnce(client, CLIENT_V4)).toBe(true);
  });
});
