// etcd failing under a cluster of real agents (see failover.netns.test.ts for the lab): the
// policy of docs/cluster.md, checked in the kernel of every node, in the agents' hold
// histories and on the client's wire. An etcd restart and an outage for everyone (etcd
// killed, down for 3 s: three times the lease TTL) are not data-plane outages: the holders
// keep their IPs on each other's promises (the peer heartbeat), every IP answers the client
// throughout, no IP is held by another node meanwhile, and when etcd returns nothing moves.
// A member cut off while the desired set changed and etcd compacted its history reads
// everything again when it returns and converges with the others.
import { beforeAll, describe, expect, it } from 'vitest';
import { EtcdStore } from '../../src/cluster/index.js';
import { privileged } from '../helpers/netns.js';
import { documentFields, documentedFields, undocumented } from '../helpers/status-doc.js';
import { ClusterWorld, now, until, type AgentNode } from './world.js';

const { skip } = privileged();

let w: ClusterWorld;
const IPS = ['10.78.0.210', '10.78.0.211', '10.78.0.212', 'fd78::210', 'fd78::211', 'fd78::212'];

/** ip → the one node whose holder carries it (throws unless exactly one). */
function owners(ips: readonly string[]): Map<string, string> {
  return new Map(
    ips.map((ip) => {
      const on = w.holdersOf(ip);
      if (on.length !== 1) throw new Error(`${ip} is on ${on.length} holders`);
      return [ip, on[0] as string];
    }),
  );
}

/**
 * Waits until every IP is on exactly one holder, every live node holding some, and every live
 * agent agrees that each is where placement puts it: no round will move them.
 */
async function settled(
  ips: readonly string[],
  live: readonly AgentNode[] = w.nodes,
): Promise<Map<string, string>> {
  const even = (m: Map<string, string>) =>
    live.every((n) => [...m.values()].filter((v) => v === n.name).length >= 1);
  await until(
    async () => (await w.placed(ips, [...live])) && even(owners(ips)),
    20_000,
    'every IP on its placed holder, spread over the nodes',
  );
  return owners(ips);
}

/** Successful keep-alives a node has had answered (its etcd request histogram's count). */
async function keepalives(n: AgentNode): Promise<number> {
  return (
    (await w.metrics(n)).get(
      'fibkeeper_cluster_etcd_request_duration_seconds_count{op="keepalive"}',
    ) ?? 0
  );
}

/**
 * Waits until every node holds on its own lease again and has had `k` more keep-alives
 * answered since: by then a promise or grace from before has run out (a promise lasts
 * TTL − margin, under 1 s; 10 renewals are 1.5 s), so a late fence or claim would have shown.
 */
async function backOnLeases(k = 10): Promise<void> {
  const base = await Promise.all(w.nodes.map((n) => keepalives(n)));
  await until(
    async () => {
      for (const [i, n] of w.nodes.entries()) {
        const st = (await w.api(n, 'GET', '/v1/cluster/status')) as { holding: string };
        if (st.holding === 'grace') return false;
        if ((await keepalives(n)) < base[i]! + k) return false;
      }
      return true;
    },
    15_000,
    `every node on its own lease, ${k} keep-alives answered`,
  );
}

/** Since `mark`, every hold set of every agent held only IPs that `before` gives to it. */
function onlyTheirOwn(before: Map<string, string>, mark: number): void {
  const wrong = w
    .holdRecords()
    .filter((r) => r.at >= mark)
    .flatMap((r) => r.ips.filter((ip) => before.get(ip) !== r.node).map((ip) => `${r.node} ${ip}`));
  expect(wrong).toEqual([]);
}

describe.skipIf(skip)('cluster mode when etcd fails', () => {
  beforeAll(async () => {
    w = await ClusterWorld.create('o');
    await Promise.all(w.nodes.map((n) => w.start(n)));
    await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips: IPS });
  }, 90_000);

  it('an etcd restart leaves every IP where it was', async () => {
    const before = await settled(IPS);
    // The status document's cluster section, with members and IPs, is what docs/status.md says.
    const doc = await w.api(w.nodes[0]!, 'GET', '/v1/status');
    const documented = documentedFields();
    const real = documentFields(doc, documented);
    for (const p of ['cluster.members[].labels', 'cluster.ips[].owner', 'cluster.sysctls[].want'])
      expect(real.has(p), p).toBe(true);
    expect(undocumented(real, documented)).toEqual([]);
    const mark = now();
    await w.etcd.restart('SIGTERM');
    await Promise.all(w.nodes.map((n) => w.ready(n)));
    await backOnLeases(); // a late fence or claim would show by then
    expect(await settled(IPS)).toEqual(before);
    onlyTheirOwn(before, mark);
    w.expectNeverTwoHolders();
  });

  it('an outage for everyone (etcd killed): every IP keeps answering; back, nothing moved', async () => {
    const before = await settled(IPS);
    const mark = now();
    const pings = w.keepPinging(IPS, 50);
    await w.etcd.stop('SIGKILL');
    // Past every lease's proof (TTL 1 s) and well beyond (its proof ended 2 s ago on every
    // node): each holder keeps its IPs, on the others' promises, its kernel fence moved
    // forward with them.
    await until(
      async () => {
        expect(owners(IPS)).toEqual(before);
        for (const n of w.nodes) {
          const st = (await w.api(n, 'GET', '/v1/cluster/status')) as {
            holding: string;
            lease: { holdForMs?: number };
          };
          if (st.holding !== 'grace' || !((st.lease.holdForMs ?? 0) < -2000)) return false;
        }
        return true;
      },
      15_000,
      'every node holding on grace, 2 s past its lease',
    );
    for (const n of w.nodes) {
      const st = (await w.api(n, 'GET', '/v1/cluster/status')) as { holding: string };
      expect(st.holding).toBe('grace');
    }
    await w.etcd.resume();
    await until(
      () => {
        try {
          return JSON.stringify([...owners(IPS)]) === JSON.stringify([...before]);
        } catch {
          return false;
        }
      },
      15_000,
      'the same nodes hold the same IPs again',
    );
    await backOnLeases(); // a late fence or claim would show by then
    expect(owners(IPS)).toEqual(before);
    const lost = pings.stop();
    // Every IP answered the client all along (50 ms apart; a ping gets 200 ms).
    expect(lost).toEqual([]);
    onlyTheirOwn(before, mark);
    w.expectNeverTwoHolders();
  });

  it('a member cut off while the set changed and etcd compacted converges when it returns', async () => {
    await settled(IPS);
    const n3 = w.node('n3');
    await n3.proxy.cut();
    await until(() => w.held(n3).length === 0, 3000, 'the cut-off member dropped its IPs');
    const added = ['10.78.0.220', 'fd78::220'];
    await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips: added });
    await w.api(w.node('n1'), 'DELETE', '/v1/cluster/extip', { ips: ['10.78.0.210'] });
    const desired = [...IPS.filter((ip) => ip !== '10.78.0.210'), ...added];
    await settled(desired, [w.node('n1'), w.node('n2')]);
    const store = new EtcdStore({ endpoints: [w.etcd.endpoint], requestTimeoutMs: 2000 });
    try {
      const { revision } = await store.getPrefix('/');
      await store.compact(revision);
    } finally {
      store.close();
    }
    await n3.proxy.heal();
    await w.ready(n3);
    const view = async (name: string) => {
      const s = (await w.api(w.node(name), 'GET', '/v1/cluster/status')) as {
        ips: { ip: string; owner?: string }[];
      };
      return JSON.stringify(s.ips.map((i) => [i.ip, i.owner ?? '']));
    };
    await until(
      async () => (await view('n3')) === (await view('n1')),
      15_000,
      'n3 sees what n1 sees',
    );
    expect(
      JSON.parse(await view('n3'))
        .map((x: string[]) => x[0])
        .sort(),
    ).toEqual([...desired].sort());
    const final = await settled(desired);
    expect([...final.values()]).toContain('n3'); // it holds its share again
    expect(w.holdersOf('10.78.0.210')).toEqual([]);
    expect(
      w.logLines(n3).some((l) => l.msg === 'cluster watch compacted; reading everything again'),
    ).toBe(true);
    w.expectNeverTwoHolders();
  });
});
