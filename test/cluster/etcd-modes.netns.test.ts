// Cluster mode against the etcd setups users run (see failover.netns.test.ts for the lab):
//  - etcd over TLS with client certificates, from a real CA made here with openssl: the
//    agents get the README's flags (--cluster-etcd-ca-file, -cert-file, -key-file) and hold
//    their IPs; a client without a certificate, or trusting another CA, is refused by etcd;
//  - a 3-member etcd: one member cut off from the others and from its clients (SIGSTOP: a
//    minority partition as everyone sees it), then the leader killed: the agents' IPs never
//    move and answer the client throughout (their keep-alives fail for an election's length;
//    the peers' promises bridge it), no IP is held by two nodes.
import { Etcd3 } from 'etcd3';
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { EtcdStore } from '../../src/cluster/index.js';
import { privileged } from '../helpers/netns.js';
import { makeTestCa, type TestCa } from './tls-ca.js';
import { ClusterWorld, until, type AgentNode } from './world.js';

const { skip } = privileged();
function owners(w: ClusterWorld, ips: readonly string[]): Map<string, string> {
  return new Map(ips.map((ip) => [ip, w.holdersOf(ip).join('+')]));
}

/** Every IP where placement puts it, as every agent agrees: nothing will move it. */
async function settled(w: ClusterWorld, ips: readonly string[]): Promise<Map<string, string>> {
  await until(() => w.placed(ips), 20_000, 'every IP on its placed holder');
  return owners(w, ips);
}

/** Lease keep-alives answered, per agent. */
async function renewals(w: ClusterWorld): Promise<number[]> {
  return Promise.all(
    w.nodes.map(async (n) => {
      const m = await w.metrics(n);
      const sent = m.get('fibkeeper_cluster_etcd_request_duration_seconds_count{op="keepalive"}');
      const failed = m.get('fibkeeper_cluster_etcd_request_errors_total{op="keepalive"}');
      return (sent ?? 0) - (failed ?? 0);
    }),
  );
}

/**
 * Lets a fault last until every agent has had `n` more keep-alives answered (it worked
 * through the fault, its lease renewed all along), checking at every step that no IP moved.
 */
async function through(
  w: ClusterWorld,
  ips: readonly string[],
  before: Map<string, string>,
  n: number,
): Promise<void> {
  const from = await renewals(w);
  await until(
    async () => {
      expect(owners(w, ips)).toEqual(before);
      return (await renewals(w)).every((r, i) => r >= from[i]! + n);
    },
    20_000,
    `${n} keep-alives answered on every agent`,
  );
}

describe.skipIf(skip)('cluster mode over TLS to etcd', () => {
  let ca: TestCa;
  let w: ClusterWorld;
  afterAll(() => rmSync(ca.dir, { recursive: true, force: true }));

  it('agents with the TLS flags hold their IPs; no certificate, or another CA, is refused', async () => {
    ca = makeTestCa();
    w = await ClusterWorld.create('t', [], {
      tls: { ca: ca.ca, cert: ca.serverCert, key: ca.serverKey },
    });
    // The agents' files are the client's (the world passed the server's to etcd).
    for (const n of w.nodes) {
      n.flags = [
        `--cluster-etcd-ca-file=${ca.ca}`,
        `--cluster-etcd-cert-file=${ca.clientCert}`,
        `--cluster-etcd-key-file=${ca.clientKey}`,
      ];
    }
    await Promise.all(w.nodes.map((n) => w.start(n)));
    const ips = ['10.78.0.241', 'fd78::241'];
    await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips });
    await settled(w, ips);
    expect(await w.clientPing('10.78.0.241')).toBe(true);
    const endpoint = w.etcd.endpoint;
    expect(endpoint.startsWith('https://')).toBe(true);
    const refused = async (tls?: { ca: string; cert?: string; key?: string }) => {
      const s = new EtcdStore({
        endpoints: [endpoint],
        requestTimeoutMs: 2000,
        ...(tls ? { tls } : {}),
      });
      try {
        await s.getPrefix('/fibkeeper/');
        return false;
      } catch {
        return true;
      } finally {
        s.close();
      }
    };
    expect(await refused({ ca: ca.ca, cert: ca.clientCert, key: ca.clientKey })).toBe(false);
    expect(await refused({ ca: ca.ca })).toBe(true); // no client certificate
    expect(await refused({ ca: ca.otherCa, cert: ca.clientCert, key: ca.clientKey })).toBe(true);
    expect(readFileSync(w.nodes[0]!.logFile, 'utf8')).toContain('cluster member registered');
    w.expectNeverTwoHolders();
  });
});

/** The member that leads now (its member id is the leader every member reports). */
async function leader(endpoints: readonly string[]): Promise<number> {
  for (let i = 0; i < endpoints.length; i++) {
    const c = new Etcd3({ hosts: endpoints[i]!, dialTimeout: 1000 });
    try {
      const st = await c.maintenance.status();
      if (st.leader === st.header.member_id) return i;
    } catch {
      // stopped, or no leader: ask the next
    } finally {
      c.close();
    }
  }
  throw new Error('no leader');
}

describe.skipIf(skip)('cluster mode on a 3-member etcd', () => {
  it('a member cut off, then the leader killed: no IP moves or stops answering', async () => {
    const w = await ClusterWorld.create('3', [], { members: 3 });
    await Promise.all(w.nodes.map((n: AgentNode) => w.start(n)));
    const ips = ['10.78.0.242', '10.78.0.243', '10.78.0.244', 'fd78::242', 'fd78::243'];
    await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips });
    const before = await settled(w, ips);
    const members = w.etcdCluster!;
    const failures = async () => {
      let sum = 0;
      for (const n of w.nodes) {
        for (const [k, v] of await w.metrics(n)) {
          if (k.startsWith('fibkeeper_cluster_lease_renew_failures_total')) sum += v;
        }
      }
      return sum;
    };
    const failedBefore = await failures();
    const pings = w.keepPinging(ips, 50);
    // A follower cut off from everyone for 3 s (SIGSTOP: it answers no peer and no client).
    const lead = await leader(members.endpoints);
    const follower = members.members[(lead + 1) % 3]!;
    process.kill(follower.pid!, 'SIGSTOP');
    await through(w, ips, before, 12); // about 2 s of renewals (every 150 ms)
    process.kill(follower.pid!, 'SIGCONT');
    await until(() => follower.healthy(), 10_000, 'the follower back in the cluster');
    expect(await settled(w, ips)).toEqual(before);
    // The leader killed: an election, a new leader that extends every lease.
    const lead2 = await leader(members.endpoints);
    await members.members[lead2]!.stop('SIGKILL');
    await through(w, ips, before, 12); // through the election, on the new leader
    await members.members[lead2]!.resume();
    await until(() => members.members[lead2]!.healthy(), 10_000, 'the old leader back');
    expect(await settled(w, ips)).toEqual(before);
    const lost = pings.stop();
    if (lost.length > 0 && process.env.FK_DEBUG) {
      for (const n of w.nodes) {
        for (const l of w.logLines(n)) {
          if (l.msg === 'cluster hold set' && l.reason !== 'renew') {
            console.log(
              n.name,
              new Date(l.time as number).toISOString(),
              l.reason,
              JSON.stringify(l.ips),
              l.deadline !== null ? Math.round((l.deadline as number) - (l.at as number)) : '',
            );
          } else if (String(l.msg).includes('keep-alive') || String(l.msg).includes('peer')) {
            console.log(
              n.name,
              new Date(l.time as number).toISOString(),
              l.msg,
              JSON.stringify(l.err ?? ''),
            );
          }
        }
      }
    }
    expect(lost).toEqual([]);
    // The agents did lose etcd meanwhile (their keep-alives failed): the IPs stayed anyway.
    expect(await failures()).toBeGreaterThan(failedBefore);
    w.expectNeverTwoHolders();
  });
});
