// Per-IP attributes (bgp.ipAttributes) as a real FRR router receives them: the IP named in
// an entry carries its own communities on top of bgp.communities, the other IP only the
// global ones, IPv4 and IPv6 alike.
import { describe, expect, it } from 'vitest';
import { makeNetns, privileged, waitFor } from '../helpers/netns.js';
import { makeRouter, startAgent, type Router } from './lab.js';

const { skip } = privileged();
const A = '192.0.2.40';
const B = '192.0.2.41';
const A6 = '2001:db8:5::40';

interface Path {
  community?: { string: string };
  largeCommunity?: { string: string };
}

function paths(router: Router, prefix: string): Path[] {
  const fam = prefix.includes(':') ? 6 : 4;
  const r = JSON.parse(router.vtysh(`show bgp ipv${fam} unicast ${prefix} json`)) as {
    paths?: Path[];
  };
  return r.paths ?? [];
}

describe.skipIf(skip)('per-IP BGP attributes', () => {
  it('the router sees each IP with its own communities besides the global ones', async () => {
    const node = makeNetns('bgan');
    const client = makeNetns('bgac');
    const router = await makeRouter([node], client, { nodes: 1 });
    const agent = await startAgent(node, 1, [
      '  communities: ["65001:1"]',
      `  ipAttributes: ["${A} community 65001:40 large-community 65001:4:0", "${A6} community 65001:46"]`,
    ]);
    const add = agent.cli('extip', 'add', A, B, A6);
    expect(add.status, add.stderr).toBe(0);
    for (const p of [`${A}/32`, `${B}/32`, `${A6}/128`]) {
      await waitFor(() => paths(router, p).length === 1, { timeoutMs: 20_000, what: p });
    }
    const a = paths(router, `${A}/32`)[0]!;
    expect(a.community?.string.split(' ').sort()).toEqual(['65001:1', '65001:40']);
    expect(a.largeCommunity?.string).toBe('65001:4:0');
    const b = paths(router, `${B}/32`)[0]!;
    expect(b.community?.string).toBe('65001:1');
    expect(b.largeCommunity).toBeUndefined();
    const a6 = paths(router, `${A6}/128`)[0]!;
    expect(a6.community?.string.split(' ').sort()).toEqual(['65001:1', '65001:46']);
  });
});
