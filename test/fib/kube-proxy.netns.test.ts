// A kube-proxy-shaped ruleset on the router (iptables mode, the chains kube-proxy writes:
// KUBE-SERVICES DNAT of a ClusterIP to an endpoint, KUBE-MARK-MASQ, KUBE-POSTROUTING
// masquerade, KUBE-FORWARD, KUBE-FIREWALL), through iptables-nft and iptables-legacy: every
// frame of the Service's traffic (the request, the endpoint's reply un-NATed, the next request
// of the flow, a port without a Service) leaves the router exactly as it does without
// fibkeeper, and the counters say netfilter.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateBpffs } from '../helpers/cleanup.js';
import { privileged } from '../helpers/netns.js';
import { c, f4, f6, type Scenario } from './corpus/case.js';
import { fromServer, nftCounters, shQuiet } from './corpus/cases-policy.js';
import { A, makeDiffLab, type DiffLab } from './corpus/lab.js';
import { table, type Row } from './corpus/report.js';
import { problems, runScenario } from './corpus/runner.js';
import { udp } from './corpus/packets.js';

const { skip } = privileged();

const CLUSTER_IP = '10.96.0.10';
const SVC = 'KUBE-SVC-TCOU7JCQXEZGVUNU';
const SEP = 'KUBE-SEP-IT2ZTR26TO4XFPTO';

/** The rules as kube-proxy writes them (iptables-save form), one Service with one endpoint. */
const RULES = `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SERVICES - [0:0]
:${SVC} - [0:0]
:${SEP} - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE
-A KUBE-SERVICES -d ${CLUSTER_IP}/32 -p udp -m comment --comment "kube-system/kube-dns:dns cluster IP" -m udp --dport 53 -j ${SVC}
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A ${SVC} ! -s 10.244.0.0/16 -d ${CLUSTER_IP}/32 -p udp -m comment --comment "kube-system/kube-dns:dns cluster IP" -m udp --dport 53 -j KUBE-MARK-MASQ
-A ${SVC} -m comment --comment "kube-system/kube-dns:dns -> ${A.server}:53" -j ${SEP}
-A ${SEP} -s ${A.server}/32 -m comment --comment "kube-system/kube-dns:dns" -j KUBE-MARK-MASQ
-A ${SEP} -p udp -m comment --comment "kube-system/kube-dns:dns" -m udp -j DNAT --to-destination ${A.server}:53
COMMIT
`;

function restore(lab: DiffLab, cmd: string): void {
  // -w: wait for the xtables lock (one file for the whole host) that another test may hold.
  const r = spawnSync('ip', ['netns', 'exec', lab.router, cmd, '-w'], {
    input: RULES,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
}

function scenario(backend: 'nft' | 'legacy'): Scenario {
  const tool = `iptables-${backend}`;
  return {
    name: `kube-proxy-${backend}`,
    sysctls: [],
    setup: (lab) => restore(lab, `${tool}-restore`),
    between: (lab) => shQuiet(lab, 'conntrack -F'),
    teardown: (lab) =>
      shQuiet(
        lab,
        backend === 'nft'
          ? 'nft delete table ip filter; nft delete table ip nat; conntrack -F'
          : 'iptables-legacy -w -F; iptables-legacy -w -X; iptables-legacy -w -t nat -F; iptables-legacy -w -t nat -X; conntrack -F',
      ),
    ...(backend === 'nft' ? { counters: nftCounters } : {}),
    cases: [
      c(
        'to the ClusterIP: DNAT to the endpoint, masqueraded',
        f4({ dst: CLUSTER_IP, l4: udp(40000, 53) }),
        'reason:netfilter',
      ),
      {
        ...c(
          "the endpoint's reply: back to the client from the ClusterIP",
          fromServer(A.server, A.r2, 53, 40000),
          'reason:netfilter',
        ),
        from: 's0',
      },
      c(
        'the next request of the flow',
        f4({ dst: CLUSTER_IP, l4: udp(40000, 53) }),
        'reason:netfilter',
      ),
      c(
        'a port without a Service: routed as it is',
        f4({ dst: CLUSTER_IP, l4: udp(40000, 54) }),
        'reason:netfilter',
      ),
      c('to the endpoint directly', f4({ l4: udp(40001, 53) }), 'reason:netfilter'),
      c('IPv6: kube-proxy wrote no IPv6 rules', f6(), 'fwd'),
    ],
  };
}

describe.skipIf(skip)('a kube-proxy-shaped ruleset: Service traffic as without fibkeeper', () => {
  let lab: DiffLab;
  let pinDir: string;
  const all: Row[] = [];

  beforeAll(() => {
    lab = makeDiffLab('kp');
    pinDir = privateBpffs();
  });

  afterAll(() => console.log(table(all)));

  for (const backend of ['nft', 'legacy'] as const) {
    it(`iptables-${backend}: every frame leaves the router as without fibkeeper`, async (ctx) => {
      if (spawnSync(`iptables-${backend}-restore`, ['--version']).status !== 0) {
        console.log(`skipping: no iptables-${backend}-restore on this system`);
        ctx.skip();
      }
      const s = scenario(backend);
      const { rows, broken, counters } = await runScenario(lab, s, pinDir);
      all.push(...rows);
      expect(broken.slice(0, 5)).toEqual([]);
      expect(problems(rows)).toEqual([]);
      // the DNAT really happened: the endpoint got the request on port 53 from the router
      const first = rows[0]?.kernel.find((x) => x.sink === 's0')?.frame;
      expect(first?.subarray(26, 34).toString('hex')).toBe('0a3d02010a3d0202'); // 10.61.2.1 -> 10.61.2.2
      if (counters !== undefined) expect(counters.xdp).toEqual(counters.kernel);
    });
  }
});
