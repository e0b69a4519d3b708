// What fibkeeper reads of the node's policy, against the tools that show it: nftables against
// `nft -j list ruleset`, tc against `tc -j qdisc show` and `tc -j filter show`, xfrm against
// `ip xfrm policy`, legacy iptables against `iptables-legacy -S`; and what inspectNodePolicy
// (fibkeeper probe) makes of it.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { inspectNodePolicy } from '../../src/fib/index.js';
import { readLegacyTables } from '../../src/fib/policy-legacy.js';
import {
  NetlinkHandle,
  NftHandle,
  TC_PARENT_EGRESS,
  TC_PARENT_INGRESS,
  XfrmHandle,
  nft as N,
  tcHandle,
} from '../../src/netlink/index.js';
import { ifindexOf, ip, makeNetns, nsExec, privileged } from '../helpers/netns.js';

const { skip } = privileged();

const FAMILY: Record<string, number> = { ip: 2, ip6: 10, inet: 1, netdev: 5, bridge: 7, arp: 3 };
const HOOKS: Record<string, number> = {
  prerouting: 0,
  input: 1,
  forward: 2,
  output: 3,
  postrouting: 4,
  ingress: 5,
  egress: 1,
};

function nftLoad(ns: string, text: string): void {
  const r = spawnSync('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], {
    input: text,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(r.stderr);
}

/** A netdev chain's devices as `nft list chain` prints them (this nft's JSON leaves them out). */
function netdevDevices(ns: string, table: string, chain: string): string[] {
  const text = nsExec(ns, 'nft', 'list', 'chain', 'netdev', table, chain);
  return [...text.matchAll(/device "([^"]+)"/g)].map((m) => m[1]!);
}

const RULESET = `
table inet filter {
  chain input {
    type filter hook input priority 0; policy drop;
    ct state established,related accept
    tcp dport 22 accept
  }
  chain fw {
    type filter hook forward priority 10; policy accept;
    jump mine
  }
  chain mine {
    counter
  }
}
table ip nat {
  chain post {
    type nat hook postrouting priority srcnat;
    oifname "e1" masquerade
  }
}
table netdev dev {
  chain in {
    type filter hook ingress device "e0" priority -100; policy accept;
  }
}
table ip6 quiet {
  chain fw {
    type filter hook forward priority 0; policy accept;
  }
}
`;

describe.skipIf(skip)("reading the node's policy", () => {
  it('nftables: every chain and rule as nft lists them', async () => {
    const ns = makeNetns('prn');
    ip(ns, 'link', 'add', 'e0', 'type', 'veth', 'peer', 'name', 'e0p');
    ip(ns, 'link', 'add', 'e1', 'type', 'veth', 'peer', 'name', 'e1p');
    nftLoad(ns, RULESET);
    const h = NftHandle.open({ netns: ns });
    try {
      const chains = await h.chainList();
      const rules = await h.ruleList();
      const ref = JSON.parse(nsExec(ns, 'nft', '-j', 'list', 'ruleset')) as {
        nftables: Record<string, Record<string, unknown>>[];
      };
      const refChains = ref.nftables.flatMap((o) => (o.chain ? [o.chain] : []));
      const refRules = ref.nftables.flatMap((o) => (o.rule ? [o.rule] : []));
      const key = (f: number, t: string, c: string) => `${f}/${t}/${c}`;
      expect(
        chains.map((c) => ({
          key: key(c.family, c.table, c.name),
          hook: c.hook?.num,
          prio: c.hook?.priority,
          policy: c.policy === undefined ? undefined : c.policy === N.NF_ACCEPT ? 'accept' : 'drop',
          type: c.type,
          devices: c.hook?.devices.length ? c.hook.devices : undefined,
        })),
      ).toEqual(
        refChains.map((c) => ({
          key: key(FAMILY[c.family as string]!, c.table as string, c.name as string),
          hook:
            c.hook === undefined
              ? undefined
              : c.family === 'netdev'
                ? Number(c.hook === 'egress')
                : HOOKS[c.hook as string],
          prio: c.prio,
          policy: c.policy,
          type: c.type,
          devices:
            c.family === 'netdev'
              ? netdevDevices(ns, c.table as string, c.name as string)
              : undefined,
        })),
      );
      expect(rules.map((r) => `${key(r.family, r.table, r.chain)}#${r.handle}`)).toEqual(
        refRules.map(
          (r) =>
            `${key(FAMILY[r.family as string]!, r.table as string, r.chain as string)}#${r.handle}`,
        ),
      );
      // the expressions nft shows as "ct" and "masquerade" are named so by the kernel
      expect(rules.flatMap((r) => r.exprs)).toEqual(
        expect.arrayContaining(['ct', 'masq', 'counter']),
      );
      const g = await h.generation();
      nftLoad(ns, 'add table ip another');
      expect(await h.generation()).toBeGreaterThan(g);
    } finally {
      h.close();
    }
    // what the forwarder makes of it: inet's stateful input rule tracks both families, the
    // nat chain IPv4; the empty accepting netdev and ip6 chains do nothing
    for (const d of ['e0', 'e0p', 'e1', 'e1p']) ip(ns, 'link', 'set', d, 'up');
    const p = await inspectNodePolicy({
      netns: ns,
      selection: { devices: ['e*'], holderName: 'fk-holder' },
      mode: 'respect',
    });
    expect(p.devices.map((d) => d.name)).toEqual(['e0', 'e0p', 'e1', 'e1p']);
    const e0 = p.devices.find((d) => d.name === 'e0')?.policy;
    const ct = (t: string, c: string, e: string) =>
      `nft ${t} chain ${c}: expression ${e} (connection tracking and defragmentation may be on for every packet)`;
    expect(e0?.ipv4.map((x) => x.what)).toEqual([
      'nft inet filter chain fw (forward, priority 10, 1 rule)',
      'nft ip nat chain post (postrouting, priority 100, nat, 1 rule)',
      ct('inet filter', 'input', 'ct'),
      ct('ip nat', 'post', 'masq'),
    ]);
    expect(e0?.ipv6.map((x) => x.what)).toEqual([
      'nft inet filter chain fw (forward, priority 10, 1 rule)',
      ct('inet filter', 'input', 'ct'),
    ]);
    expect(e0?.egress).toEqual([]);
  });

  it('tc: qdiscs and filters as tc shows them; an ingress qdisc has no egress filters', async () => {
    const ns = makeNetns('prt');
    ip(ns, 'link', 'add', 'e0', 'type', 'veth', 'peer', 'name', 'e1');
    const sh = (s: string) => nsExec(ns, 'sh', '-ec', s);
    sh(`tc qdisc add dev e0 clsact
        tc filter add dev e0 egress pref 7 bpf bytecode '1,6 0 0 0,'
        tc qdisc add dev e1 ingress
        tc filter add dev e1 parent ffff: pref 9 bpf bytecode '1,6 0 0 0,'
        tc qdisc replace dev e1 root handle 5: htb`);
    const nl = NetlinkHandle.open({ netns: ns });
    try {
      const qd = (await nl.qdiscList()).filter((q) => q.ifindex !== 1);
      const ref = JSON.parse(nsExec(ns, 'tc', '-j', 'qdisc', 'show')) as {
        kind: string;
        handle: string;
        dev: string;
      }[];
      const names = new Map([
        [ifindexOf(ns, 'e0'), 'e0'],
        [ifindexOf(ns, 'e1'), 'e1'],
      ]);
      expect(
        qd.map((q) => `${names.get(q.ifindex)} ${q.kind} ${tcHandle(q.handle)}`).sort(),
      ).toEqual(
        ref
          .filter((r) => r.dev !== 'lo')
          .map((r) => `${r.dev} ${r.kind} ${r.handle}`)
          .sort(),
      );
      const e0 = ifindexOf(ns, 'e0');
      const e1 = ifindexOf(ns, 'e1');
      const prefs = async (i: number, parent: number) =>
        [...new Set((await nl.filterList(i, parent)).map((f) => f.info >>> 16))].sort();
      expect(await prefs(e0, TC_PARENT_EGRESS)).toEqual([7]);
      expect(await prefs(e0, TC_PARENT_INGRESS)).toEqual([]);
      expect(await prefs(e1, TC_PARENT_INGRESS)).toEqual([9]);
    } finally {
      nl.close();
    }
    const p = await inspectNodePolicy({
      netns: ns,
      selection: { devices: ['e*'], holderName: 'x' },
      mode: 'respect',
    });
    // e1 down is not selected; bring both up and look again
    ip(ns, 'link', 'set', 'e0', 'up');
    ip(ns, 'link', 'set', 'e1', 'up');
    expect(p.devices).toEqual([]);
    const q = await inspectNodePolicy({
      netns: ns,
      selection: { devices: ['e*'], holderName: 'x' },
      mode: 'respect',
    });
    const by = new Map(q.devices.map((d) => [d.name, d.policy]));
    expect(by.get('e0')?.egress.map((h) => h.what)).toEqual([
      'tc filter bpf on e0 egress (pref 7)',
    ]);
    expect(by.get('e0')?.ipv4).toEqual([]);
    expect(by.get('e1')?.ipv4.map((h) => h.what)).toEqual(['tc filter bpf on e1 ingress (pref 9)']);
    expect(by.get('e1')?.egress.map((h) => h.what)).toEqual(['qdisc htb 5: root on e1']);
  });

  it('xfrm: policies and the defaults as ip xfrm shows them', async () => {
    const ns = makeNetns('prx');
    const sh = (s: string) => nsExec(ns, 'sh', '-ec', s);
    sh(`ip xfrm policy add src 10.1.0.0/16 dst 10.2.0.0/16 dir fwd action block
        ip xfrm policy add src fd00:1::/64 dst fd00:2::/64 dir out action allow
        ip xfrm policy add src 10.9.0.0/24 dst 10.8.0.0/24 dir in
        ip xfrm policy setdefault out block`);
    const h = XfrmHandle.open({ netns: ns });
    try {
      const got = (await h.policyList())
        .map(
          (p) => `src ${p.src} dst ${p.dst} dir ${['in', 'out', 'fwd'][p.dir]} action ${p.action}`,
        )
        .sort();
      const ref = nsExec(ns, 'ip', 'xfrm', 'policy', 'list')
        .split('\n')
        .filter((l) => l.startsWith('src'))
        .map((l) => {
          const m = /^src (\S+) dst (\S+)/.exec(l)!;
          return [m[1], m[2]];
        });
      expect(got).toHaveLength(ref.length);
      for (const [src, dst] of ref)
        expect(got.some((g) => g.startsWith(`src ${src} dst ${dst}`))).toBe(true);
      expect(got).toContain('src 10.1.0.0/16 dst 10.2.0.0/16 dir fwd action 1');
      expect(await h.policyDefault()).toEqual({ in: 2, fwd: 2, out: 1 });
      expect(nsExec(ns, 'ip', 'xfrm', 'policy', 'getdefault')).toMatch(
        /Default policies:\s*in:\s*accept\s*fwd:\s*accept\s*out:\s*block/,
      );
    } finally {
      h.close();
    }
  });

  it('legacy iptables: policies and rules as iptables-legacy -S shows them', () => {
    const ns = makeNetns('prl');
    expect(readLegacyTables(ns)).toEqual([]); // reading creates no table
    nsExec(
      ns,
      'sh',
      '-ec',
      `iptables-legacy -w -A INPUT -p tcp --dport 22 -j ACCEPT
      iptables-legacy -w -N mine
      iptables-legacy -w -A mine -j RETURN
      ip6tables-legacy -w -P FORWARD DROP
      ip6tables-legacy -w -t mangle -L >/dev/null`,
    );
    const tables = readLegacyTables(ns);
    // a table with rules: what else it holds is counted (its policies are not read: it acts)
    const filter = tables.find((t) => t.family === 4 && t.name === 'filter');
    const s = nsExec(ns, 'iptables-legacy', '-w', '-S').split('\n');
    // a user chain is two entries (its head and its end), each rule one
    expect(filter?.extra).toBe(
      s.filter((l) => l.startsWith('-A ')).length + 2 * s.filter((l) => l.startsWith('-N ')).length,
    );
    // tables of built-in chains only: their policies, as -S prints them
    const filter6 = tables.find((t) => t.family === 6 && t.name === 'filter');
    const policies6 = nsExec(ns, 'ip6tables-legacy', '-w', '-S')
      .split('\n')
      .filter((l) => l.startsWith('-P '))
      .map((l) => l.split(' ').slice(1));
    expect(filter6?.chains.map((c) => [c.hook, c.policy])).toEqual(policies6);
    expect(filter6?.extra).toBe(0);
    const mangle6 = tables.find((t) => t.family === 6 && t.name === 'mangle');
    expect(mangle6?.chains.map((c) => c.policy)).toEqual([
      'ACCEPT',
      'ACCEPT',
      'ACCEPT',
      'ACCEPT',
      'ACCEPT',
    ]);
    expect(mangle6?.extra).toBe(0);
  });
});
