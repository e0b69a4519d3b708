// Corpus: the node's own policy on the router — nftables (filter, counters, connection
// tracking, DNAT, masquerade, marks feeding policy routing, netdev chains), iptables (nft and
// legacy), tc (ingress and egress filters, a configured qdisc, tcx programs) and xfrm. Each
// scenario sets the policy up in the router namespace only; the kernel decides what the frames
// become, and XDP must hand every frame the policy acts on to it (counted under the reason),
// while frames no policy touches are still forwarded in XDP.
import { spawnSync } from 'node:child_process';
import { tcxQuery } from '../../../src/native/index.js';
import { nsExec, sysctl } from '../../helpers/netns.js';
import { c, f4, f6, type Case, type Scenario } from './case.js';
import { A, A6, PEER_MAC, RMAC, type DiffLab } from './lab.js';
import { ETH_P_IP, PROTO, eth, ipv4, udp } from './packets.js';
import { tcDropObject, tcxTool } from './tcprog.js';

/** A shell script in the router namespace; fails loudly. */
export function sh(lab: DiffLab, script: string): string {
  return nsExec(lab.router, 'sh', '-ec', script);
}

/** Same, for teardown: whatever is already gone is fine. */
export function shQuiet(lab: DiffLab, script: string): void {
  spawnSync('ip', ['netns', 'exec', lab.router, 'sh', '-c', script], { stdio: 'ignore' });
}

/** An nft ruleset loaded in the router (`nft -f -`). */
export function nft(lab: DiffLab, ruleset: string): void {
  // one statement per line: nft wants a newline after a closing brace
  const text = ruleset.replace(/\{/g, '{\n').replace(/;/g, ';\n').replace(/\}/g, '}\n');
  const r = spawnSync('ip', ['netns', 'exec', lab.router, 'nft', '-f', '-'], {
    input: text,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`nft -f in ${lab.router}: ${r.stderr}\n${ruleset}`);
}

/** Every nft rule counter of the router: "table/chain/handle" -> packets. */
export function nftCounters(lab: DiffLab): Record<string, number> {
  const j = JSON.parse(nsExec(lab.router, 'nft', '-j', 'list', 'ruleset')) as {
    nftables: {
      rule?: { table: string; chain: string; handle: number; expr: Record<string, unknown>[] };
    }[];
  };
  const out: Record<string, number> = {};
  for (const o of j.nftables) {
    const r = o.rule;
    if (r === undefined) continue;
    for (const e of r.expr) {
      const ctr = e.counter as { packets?: number } | undefined;
      if (ctr?.packets !== undefined) out[`${r.table}/${r.chain}/${r.handle}`] = ctr.packets;
    }
  }
  return out;
}

const flushConntrack = (lab: DiffLab) => shQuiet(lab, 'conntrack -F');

/** A frame the server (s0) sends into the router's r2. */
export function fromServer(src: string, dst: string, sport: number, dport: number): Buffer {
  return eth(RMAC.r2, PEER_MAC.s0, ETH_P_IP, ipv4({ src, dst }, udp(sport, dport)));
}

/** The two fragments of one UDP datagram from the client to the server. */
function fragments(): [Buffer, Buffer] {
  const dgram = udp(4000, 5000, 200); // 208 bytes: 104 in each
  const ip = (frag: number, part: Buffer) =>
    eth(RMAC.r1, PEER_MAC.c0, ETH_P_IP, ipv4({ src: A.client, dst: A.server, frag }, part));
  return [ip(0x2000, dgram.subarray(0, 104)), ip(104 / 8, dgram.subarray(104))];
}

const toServer4 = () => f4();
const toServer6 = () => f6();
const toDefault4 = () => f4({ dst: '198.18.0.9' });
const toDefault6 = () => f6({ dst: '2001:db8:77::9' });

const NF = 'reason:netfilter' as const;

export function policyScenarios(): Scenario[] {
  return [
    {
      name: 'nft-forward-drop',
      sysctls: [],
      setup: (lab) =>
        nft(lab, 'table inet t { chain f { type filter hook forward priority 0; policy drop; } }'),
      teardown: (lab) => shQuiet(lab, 'nft delete table inet t'),
      cases: [
        c('v4 to the server: dropped by the forward chain', toServer4(), NF),
        c('v6 to the server: dropped by the forward chain', toServer6(), NF),
        c('v4 to the default route', toDefault4(), NF),
        c('v6 to the default route', toDefault6(), NF),
      ],
    },
    {
      name: 'nft-forward-drop-bypass',
      sysctls: [],
      config: { nodePolicy: 'bypass' },
      setup: (lab) =>
        nft(lab, 'table inet t { chain f { type filter hook forward priority 0; policy drop; } }'),
      teardown: (lab) => shQuiet(lab, 'nft delete table inet t'),
      cases: [
        {
          ...c('v4: bypass forwards what the kernel drops', toServer4(), 'fwd'),
          deviation: 'xdp.nodePolicy: bypass',
        },
        {
          ...c('v6: bypass forwards what the kernel drops', toServer6(), 'fwd'),
          deviation: 'xdp.nodePolicy: bypass',
        },
      ],
    },
    {
      name: 'nft-forward-counter',
      sysctls: [],
      setup: (lab) =>
        nft(
          lab,
          'table ip t { chain f { type filter hook forward priority 0; policy accept; ip daddr 10.61.2.2 counter accept; } }',
        ),
      teardown: (lab) => shQuiet(lab, 'nft delete table ip t'),
      counters: nftCounters,
      cases: [
        c('v4 to the server, counted by the rule', toServer4(), NF),
        c('v4 to the server again', f4({ l4: udp(4001, 5000) }), NF),
        c('v4 elsewhere: the chain still sees it', toDefault4(), NF),
        // the table is of family ip: IPv6 meets no policy
        c('v6: no IPv6 policy, forwarded in XDP', toServer6(), 'fwd'),
      ],
    },
    {
      name: 'nft-ct-state',
      sysctls: [],
      setup: (lab) =>
        nft(
          lab,
          `table inet t { chain f { type filter hook forward priority 0; policy drop;
             ct state established,related accept; iifname "r2" accept; } }`,
        ),
      between: flushConntrack,
      teardown: (lab) => {
        shQuiet(lab, 'nft delete table inet t');
        flushConntrack(lab);
      },
      cases: [
        c('client to server, new: dropped', f4({ l4: udp(4000, 5000) }), NF),
        {
          ...c(
            'server to client, new from r2: accepted',
            fromServer(A.server, A.client, 5000, 4000),
            NF,
          ),
          from: 's0',
        },
        c('client to server, established: accepted', f4({ l4: udp(4000, 5000) }), NF),
        c('client to server, another flow: dropped', f4({ l4: udp(4002, 5000) }), NF),
      ],
    },
    {
      name: 'nft-dnat',
      sysctls: [],
      setup: (lab) =>
        nft(
          lab,
          `table ip nat { chain pre { type nat hook prerouting priority dstnat;
             ip daddr 10.96.0.10 udp dport 53 dnat to 10.61.2.2:5353; } }`,
        ),
      between: flushConntrack,
      teardown: (lab) => {
        shQuiet(lab, 'nft delete table ip nat');
        flushConntrack(lab);
      },
      cases: [
        c('to the service: DNAT to the server', f4({ dst: '10.96.0.10', l4: udp(4000, 53) }), NF),
        {
          ...c(
            'the reply: its source back to the service',
            fromServer(A.server, A.client, 5353, 4000),
            NF,
          ),
          from: 's0',
        },
        c('to the server directly', toServer4(), NF),
        c('v6: no IPv6 policy', toServer6(), 'fwd'),
      ],
    },
    {
      name: 'nft-masquerade',
      sysctls: [],
      setup: (lab) =>
        nft(
          lab,
          'table ip nat { chain post { type nat hook postrouting priority srcnat; oifname "r2" masquerade; } }',
        ),
      between: flushConntrack,
      teardown: (lab) => {
        shQuiet(lab, 'nft delete table ip nat');
        flushConntrack(lab);
      },
      cases: [
        c('to the server: source masqueraded', toServer4(), NF),
        c('to the default route: not masqueraded, still conntracked', toDefault4(), NF),
      ],
    },
    {
      name: 'nft-mark-fwmark',
      sysctls: [],
      setup: (lab) => {
        nft(
          lab,
          'table ip m { chain pre { type filter hook prerouting priority mangle; ip daddr 10.61.2.2 meta mark set 1; } }',
        );
        sh(
          lab,
          `ip rule add fwmark 1 table 100; ip route add default via ${A.gwA} dev r3 table 100`,
        );
      },
      teardown: (lab) =>
        shQuiet(
          lab,
          'nft delete table ip m; ip rule del fwmark 1 table 100; ip route flush table 100',
        ),
      cases: [
        c('to the server: the mark routes it through gateway A', toServer4(), NF),
        c('v6: no mark', toServer6(), 'fwd'),
      ],
    },
    {
      name: 'iptables-nft-forward-drop',
      sysctls: [],
      setup: (lab) => sh(lab, 'iptables-nft -P FORWARD DROP'),
      teardown: (lab) => shQuiet(lab, 'iptables-nft -P FORWARD ACCEPT; nft delete table ip filter'),
      cases: [
        c('v4: FORWARD policy DROP', toServer4(), NF),
        c('v6: no ip6tables policy', toServer6(), 'fwd'),
      ],
    },
    {
      name: 'iptables-legacy',
      sysctls: [],
      setup: (lab) =>
        sh(
          lab,
          `iptables-legacy -w -P FORWARD DROP; ip6tables-legacy -w -A FORWARD -d ${A6.server} -j DROP`,
        ),
      teardown: (lab) =>
        shQuiet(lab, 'iptables-legacy -w -P FORWARD ACCEPT; ip6tables-legacy -w -F FORWARD'),
      cases: [
        c('v4: FORWARD policy DROP', toServer4(), NF),
        c('v6: a DROP rule', toServer6(), NF),
        c('v6 elsewhere: the table still has a rule', toDefault6(), NF),
      ],
    },
    {
      // what the legacy scenario leaves: empty tables with ACCEPT policies, which do nothing
      name: 'iptables-legacy-emptied',
      sysctls: [],
      cases: [
        c('v4: forwarded in XDP', toServer4(), 'fwd'),
        c('v6: forwarded in XDP', toServer6(), 'fwd'),
      ],
    },
    {
      name: 'conntrack-defrag',
      sysctls: [],
      // a stateful rule on input only: connection tracking (and its defragmentation) is on
      // for every packet, forwarded ones too
      setup: (lab) =>
        nft(
          lab,
          'table inet t { chain i { type filter hook input priority 0; ct state invalid drop; } }',
        ),
      between: flushConntrack,
      teardown: (lab) => {
        shQuiet(lab, 'nft delete table inet t');
        flushConntrack(lab);
      },
      cases: [
        c('first fragment: held for reassembly', fragments()[0], NF),
        c('second fragment: the datagram goes out whole', fragments()[1], NF),
        c('v6 is tracked too (inet)', toServer6(), NF),
      ],
    },
    {
      name: 'nft-input-stateless',
      sysctls: [],
      // rules on input that need no connection tracking change nothing for forwarded frames
      setup: (lab) =>
        nft(
          lab,
          'table inet t { chain i { type filter hook input priority 0; policy drop; tcp dport 22 accept; } }',
        ),
      teardown: (lab) => shQuiet(lab, 'nft delete table inet t'),
      cases: [
        c('fragments are forwarded as they are', fragments()[0], 'fwd'),
        c('v4 forwarded in XDP', toServer4(), 'fwd'),
        c('v6 forwarded in XDP', toServer6(), 'fwd'),
      ],
    },
    {
      name: 'tc-ingress-drop',
      sysctls: [],
      setup: (lab) =>
        sh(
          lab,
          `tc qdisc add dev r1 clsact; tc filter add dev r1 ingress bpf da obj ${tcDropObject()} sec tc`,
        ),
      teardown: (lab) => shQuiet(lab, 'tc qdisc del dev r1 clsact'),
      cases: [
        c('v4: dropped on r1 ingress', toServer4(), 'reason:tc'),
        c('v6: dropped on r1 ingress', toServer6(), 'reason:tc'),
      ],
    },
    {
      name: 'tc-egress-drop',
      sysctls: [],
      setup: (lab) =>
        sh(
          lab,
          `tc qdisc add dev r2 clsact; tc filter add dev r2 egress bpf da obj ${tcDropObject()} sec tc`,
        ),
      teardown: (lab) => shQuiet(lab, 'tc qdisc del dev r2 clsact'),
      cases: [
        c('v4 out of r2: dropped on its egress', toServer4(), 'reason:egress_tc'),
        c('v6 out of r2: dropped on its egress', toServer6(), 'reason:egress_tc'),
        c('v4 out of r4: forwarded in XDP', toDefault4(), 'fwd'),
      ],
    },
    {
      name: 'tcx-ingress-and-egress',
      sysctls: [],
      unsupported: (lab) =>
        tcxQuery(lab.dev.r1, 'ingress', { netns: lab.router }) === undefined
          ? 'this kernel has no tcx (Linux 6.6+)'
          : undefined,
      setup: (lab) =>
        sh(
          lab,
          `${tcxTool()} attach r1 ingress ${tcDropObject()}; ${tcxTool()} attach r3 egress ${tcDropObject()}`,
        ),
      teardown: (lab) =>
        shQuiet(lab, `${tcxTool()} detach r1 ingress; ${tcxTool()} detach r3 egress`),
      cases: [
        c('v4 from r1: its tcx ingress program drops it', toServer4(), 'reason:tc'),
        c('v6 from r1: its tcx ingress program drops it', toServer6(), 'reason:tc'),
        {
          ...c(
            'v4 from r2 to gateway A: the tcx program on r3 egress',
            fromServer(A.server, '10.98.0.7', 1, 2),
            'reason:egress_tc',
          ),
          from: 's0',
        },
        {
          ...c(
            'v4 from r2 to the default route: forwarded in XDP',
            fromServer(A.server, '198.18.0.9', 1, 2),
            'fwd',
          ),
          from: 's0',
        },
      ],
    },
    {
      name: 'tc-egress-qdisc',
      sysctls: [],
      setup: (lab) => sh(lab, 'tc qdisc replace dev r2 root handle 1: htb'),
      teardown: (lab) => shQuiet(lab, 'tc qdisc del dev r2 root'),
      cases: [
        c('v4 out of r2: through its qdisc', toServer4(), 'reason:egress_tc'),
        c('v4 out of r4: forwarded in XDP', toDefault4(), 'fwd'),
      ],
    },
    {
      name: 'xfrm-one-subnet',
      sysctls: [],
      setup: (lab) =>
        sh(
          lab,
          `ip xfrm policy add src 10.61.1.0/24 dst 10.61.2.0/24 dir fwd tmpl src ${A.r1} dst ${A.r2} proto esp mode tunnel`,
        ),
      teardown: (lab) => shQuiet(lab, 'ip xfrm policy flush'),
      cases: [
        c('v4 to the protected subnet: refused without ESP', toServer4(), 'reason:xfrm'),
        c('v4 elsewhere: the kernel forwards it', toDefault4(), 'reason:xfrm'),
        c('v6: no IPv6 policy', toServer6(), 'fwd'),
      ],
    },
    {
      name: 'xfrm-default-block',
      sysctls: [],
      setup: (lab) => sh(lab, 'ip xfrm policy setdefault fwd block'),
      teardown: (lab) => shQuiet(lab, 'ip xfrm policy setdefault fwd accept'),
      cases: [
        c('v4: blocked by the default', toServer4(), 'reason:xfrm'),
        c('v6: blocked by the default', toServer6(), 'reason:xfrm'),
      ],
    },
    {
      name: 'nft-netdev-ingress',
      sysctls: [],
      setup: (lab) =>
        nft(
          lab,
          'table netdev n { chain in { type filter hook ingress device "r1" priority 0; ip daddr 10.61.2.2 drop; } }',
        ),
      teardown: (lab) => shQuiet(lab, 'nft delete table netdev n'),
      cases: [
        c('v4 from r1: its ingress chain', toServer4(), NF),
        c('v6 from r1: its ingress chain', toServer6(), NF),
      ],
    },
    {
      name: 'nft-netdev-egress',
      sysctls: [],
      setup: (lab) =>
        nft(
          lab,
          'table netdev n { chain out { type filter hook egress device "r2" priority 0; ip daddr 10.61.2.2 drop; } }',
        ),
      teardown: (lab) => shQuiet(lab, 'nft delete table netdev n'),
      cases: [
        c('v4 out of r2: its egress chain drops it', toServer4(), 'reason:egress_netfilter'),
        c('v6 out of r2: its egress chain', toServer6(), 'reason:egress_netfilter'),
        c('v4 out of r4: forwarded in XDP', toDefault4(), 'fwd'),
      ],
    },
  ];
}

/** The reverse-path cache follows route and sysctl changes between frames. */
export function rpCacheScenario(): Scenario {
  const src = '10.61.2.9';
  const frame = () => f4({ src });
  const route = `${src}/32`;
  return {
    name: 'rp-cache-follows-changes',
    sysctls: [
      ['net.ipv4.conf.all.rp_filter', 1],
      ['net.ipv4.conf.r1.rp_filter', 1],
    ],
    teardown: (lab) => {
      shQuiet(lab, `ip route del ${route}`);
      sysctl(lab.router, 'net.ipv4.conf.all.rp_filter', 1);
      sysctl(lab.router, 'net.ipv4.conf.r1.rp_filter', 1);
    },
    cases: [
      c('source behind r2: strict rp_filter drops', frame(), 'reason:rp_filter'),
      {
        ...c('a route back through r1 appears: forwarded', frame(), 'fwd'),
        before: (lab) => sh(lab, `ip route add ${route} via ${A.client} dev r1`),
      },
      c('again, from the cache', frame(), 'fwd'),
      {
        ...c('the route goes: dropped again, not from a stale cache', frame(), 'reason:rp_filter'),
        before: (lab) => sh(lab, `ip route del ${route}`),
      },
      {
        ...c('loose rp_filter: accepted', frame(), 'fwd'),
        before: (lab) => {
          sysctl(lab.router, 'net.ipv4.conf.all.rp_filter', 2);
          sysctl(lab.router, 'net.ipv4.conf.r1.rp_filter', 2);
        },
      },
    ],
  };
}

export type { Case };
export { PROTO };
