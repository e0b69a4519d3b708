// nodePolicy: what of the kernel's configuration acts on forwarded frames, per family and per
// device. Every source that acts on a forwarded frame is found; what cannot act is not.
import { describe, expect, it } from 'vitest';
import { AF_INET, AF_INET6, nft as N, xfrm as X } from '../netlink/index.js';
import type { NftChain, NftRule, TcObject, XfrmPolicy } from '../netlink/index.js';
import { devicePolicy, nodePolicy, type PolicySources } from './policy.js';

const LINKS = new Map([
  [2, 'eth0'],
  [3, 'eth1'],
]);

function sources(o: {
  chains?: NftChain[];
  rules?: NftRule[];
  dormant?: string[];
  legacy?: PolicySources['legacy'];
  tc?: Partial<Extract<PolicySources['tc'], { qdiscs: unknown }>>;
  xfrm?: XfrmPolicy[];
  defaults?: { in: number; fwd: number; out: number };
}): PolicySources {
  return {
    nft: {
      tables: (o.dormant ?? []).map((name) => ({ family: N.NFPROTO_INET, name, flags: 1 })),
      chains: o.chains ?? [],
      rules: o.rules ?? [],
    },
    legacy: o.legacy ?? [],
    tc: { qdiscs: [], filters: [], tcx: [], ...o.tc },
    xfrm: { policies: o.xfrm ?? [], defaults: o.defaults },
  };
}

const chain = (family: number, hook: number, o: Partial<NftChain> = {}): NftChain => ({
  family,
  table: 't',
  name: 'c',
  hook: { num: hook, priority: 0, devices: [] },
  policy: N.NF_ACCEPT,
  type: 'filter',
  flags: 1,
  ...o,
});
const rule = (family: number, exprs: string[], chainName = 'c'): NftRule => ({
  family,
  table: 't',
  chain: chainName,
  handle: 1n,
  exprs,
});
const whats = (hits: { what: string }[]) => hits.map((h) => h.what);

describe('nodePolicy', () => {
  it('an empty node has no policy', () => {
    const p = nodePolicy(sources({}), LINKS);
    expect([p.ipv4, p.ipv6, [...p.ingress], [...p.egress]]).toEqual([[], [], [], []]);
  });

  it('a base chain on prerouting, forward or postrouting acts when it drops, has rules or NATs', () => {
    const drop = nodePolicy(
      sources({ chains: [chain(N.NFPROTO_INET, N.NF_INET_FORWARD, { policy: N.NF_DROP })] }),
      LINKS,
    );
    expect(whats(drop.ipv4)).toEqual(['nft inet t chain c (forward, priority 0, policy drop)']);
    expect(drop.ipv6).toEqual(drop.ipv4);
    expect(drop.ipv4[0]?.reason).toBe('netfilter');
    // an empty accepting chain does nothing
    const empty = nodePolicy(
      sources({ chains: [chain(N.NFPROTO_IPV4, N.NF_INET_FORWARD)] }),
      LINKS,
    );
    expect(empty.ipv4).toEqual([]);
    const rules = nodePolicy(
      sources({
        chains: [chain(N.NFPROTO_IPV4, N.NF_INET_POST_ROUTING)],
        rules: [rule(N.NFPROTO_IPV4, ['meta', 'cmp', 'counter'])],
      }),
      LINKS,
    );
    expect(whats(rules.ipv4)).toEqual(['nft ip t chain c (postrouting, priority 0, 1 rule)']);
    expect(rules.ipv6).toEqual([]);
    // a nat chain registers NAT and connection tracking even empty, on any hook
    const nat = nodePolicy(
      sources({ chains: [chain(N.NFPROTO_IPV6, N.NF_INET_LOCAL_OUT, { type: 'nat' })] }),
      LINKS,
    );
    expect(whats(nat.ipv6)).toEqual(['nft ip6 t chain c (output, priority 0, nat)']);
    expect(nat.ipv4).toEqual([]);
  });

  it('input and output chains act only through connection tracking', () => {
    const input = chain(N.NFPROTO_INET, N.NF_INET_LOCAL_IN, { policy: N.NF_DROP });
    const stateless = nodePolicy(
      sources({
        chains: [input],
        rules: [
          rule(N.NFPROTO_INET, ['meta', 'cmp', 'payload', 'cmp', 'immediate']),
          rule(N.NFPROTO_INET, ['meta', 'cmp', 'dynset', 'limit']),
        ],
      }),
      LINKS,
    );
    expect([stateless.ipv4, stateless.ipv6]).toEqual([[], []]);
    for (const e of ['ct', 'nat', 'masq', 'socket', 'tproxy', 'match', 'notrack', 'objref']) {
      const p = nodePolicy(
        sources({ chains: [input], rules: [rule(N.NFPROTO_INET, ['meta', e, 'immediate'])] }),
        LINKS,
      );
      expect(whats(p.ipv4), e).toEqual([
        `nft inet t chain c: expression ${e} (connection tracking and defragmentation may be on for every packet)`,
      ]);
      expect(p.ipv6).toEqual(p.ipv4);
    }
    // a ct expression inside a dynset counts too
    const nested = nodePolicy(
      sources({ rules: [rule(N.NFPROTO_IPV4, ['dynset', 'connlimit'])] }),
      LINKS,
    );
    expect(nested.ipv4).toHaveLength(1);
  });

  it('a dormant table has no hooks, but its rules keep connection tracking on', () => {
    const p = nodePolicy(
      sources({
        dormant: ['t'],
        chains: [chain(N.NFPROTO_INET, N.NF_INET_FORWARD, { policy: N.NF_DROP })],
        rules: [rule(N.NFPROTO_INET, ['ct', 'cmp'])],
      }),
      LINKS,
    );
    expect(whats(p.ipv4)).toEqual([
      'nft inet t chain c: expression ct (connection tracking and defragmentation may be on for every packet)',
    ]);
  });

  it('netdev chains act on the devices they name (prefixes too), ingress or egress', () => {
    const p = nodePolicy(
      sources({
        chains: [
          chain(N.NFPROTO_NETDEV, N.NF_NETDEV_INGRESS, {
            name: 'in',
            hook: { num: 0, priority: -500, devices: ['eth0'] },
          }),
          chain(N.NFPROTO_NETDEV, N.NF_NETDEV_EGRESS, {
            name: 'out',
            policy: N.NF_DROP,
            hook: { num: 1, priority: 0, devices: ['eth*'] },
          }),
          chain(N.NFPROTO_INET, N.NF_INET_INGRESS, {
            name: 'iin',
            policy: N.NF_DROP,
            hook: { num: 5, priority: 0, devices: ['eth1'] },
          }),
        ],
        rules: [rule(N.NFPROTO_NETDEV, ['counter'], 'in')],
      }),
      LINKS,
    );
    expect(p.ipv4).toEqual([]);
    expect(whats(p.ingress.get('eth0') ?? [])).toEqual([
      'nft netdev t chain in (ingress, priority -500, 1 rule)',
    ]);
    expect(whats(p.ingress.get('eth1') ?? [])).toEqual([
      'nft inet t chain iin (ingress, priority 0, policy drop)',
    ]);
    expect(p.egress.get('eth0')?.map((h) => h.reason)).toEqual(['egress_netfilter']);
    expect(p.egress.get('eth1')).toEqual(p.egress.get('eth0'));
  });

  it('legacy tables act by their effect', () => {
    const p = nodePolicy(
      sources({
        legacy: [
          { family: 4, name: 'filter', chains: [{ hook: 'FORWARD', policy: 'DROP' }], extra: 0 },
          {
            family: 6,
            name: 'mangle',
            chains: [{ hook: 'PREROUTING', policy: 'ACCEPT' }],
            extra: 0,
          },
        ],
      }),
      LINKS,
    );
    expect(whats(p.ipv4)).toEqual(['iptables-legacy table filter: FORWARD policy DROP']);
    expect(p.ipv6).toEqual([]);
  });

  it('tc: filters and tcx programs per device and direction; configured qdiscs on egress', () => {
    const q = (ifindex: number, kind: string, handle: number, parent = 0xffff_ffff): TcObject => ({
      ifindex,
      kind,
      handle,
      parent,
      info: 0,
    });
    const p = nodePolicy(
      sources({
        tc: {
          qdiscs: [
            q(2, 'noqueue', 0),
            q(2, 'clsact', 0xffff_0000),
            q(3, 'htb', 0x1_0000),
            q(9, 'htb', 0x1_0000),
          ],
          filters: [
            { ...q(2, 'bpf', 1, 0xffff_fff2), info: 0xc000_0300, direction: 'ingress' },
            {
              ...q(3, 'u32', 0x800_0800, 0xffff_fff3),
              info: 0x0001_0300,
              direction: 'egress',
              chain: 3,
            },
          ],
          tcx: [{ ifindex: 3, direction: 'ingress', progIds: [41, 42] }],
        },
      }),
      LINKS,
    );
    expect(p.ipv4).toEqual([]);
    expect(whats(p.ingress.get('eth0') ?? [])).toEqual([
      'tc filter bpf on eth0 ingress (pref 49152)',
    ]);
    expect(whats(p.ingress.get('eth1') ?? [])).toEqual(['tcx ingress programs 41,42 on eth1']);
    expect(whats(p.egress.get('eth1') ?? [])).toEqual([
      'tc filter u32 on eth1 egress (pref 1, chain 3)',
      'qdisc htb 1: root on eth1',
    ]);
    expect(p.egress.get('eth0')).toBeUndefined();
    expect(p.egress.get('eth1')?.map((h) => h.reason)).toEqual(['egress_tc', 'egress_tc']);
  });

  it('xfrm: forward and output policies of the family, blocking defaults', () => {
    const pol = (family: number, dir: number): XfrmPolicy => ({
      family,
      src: family === AF_INET ? '10.1.0.0/16' : undefined,
      dst: family === AF_INET ? '10.2.0.0/16' : undefined,
      proto: 0,
      ifindex: 0,
      dir,
      action: 0,
      priority: 0,
      index: 8,
    });
    const v4 = nodePolicy(
      sources({ xfrm: [pol(AF_INET, X.XFRM_POLICY_FWD), pol(AF_INET, X.XFRM_POLICY_IN)] }),
      LINKS,
    );
    expect(whats(v4.ipv4)).toEqual([
      'xfrm policy src 10.1.0.0/16 dst 10.2.0.0/16 dir fwd (index 8)',
    ]);
    expect(v4.ipv6).toEqual([]);
    const any = nodePolicy(sources({ xfrm: [pol(0, X.XFRM_POLICY_OUT)] }), LINKS);
    expect([any.ipv4.length, any.ipv6.length]).toEqual([1, 1]);
    const v6 = nodePolicy(sources({ xfrm: [{ ...pol(AF_INET6, X.XFRM_POLICY_OUT) }] }), LINKS);
    expect([v6.ipv4.length, v6.ipv6.length]).toEqual([0, 1]);
    const block = nodePolicy(sources({ defaults: { in: 1, fwd: 1, out: 2 } }), LINKS);
    expect(whats(block.ipv6)).toEqual(['xfrm default policy fwd block']);
  });

  it('a source that cannot be read counts as policy on every frame', () => {
    const p = nodePolicy(
      {
        nft: { error: 'EPERM' },
        legacy: [],
        tc: { error: 'ENOBUFS' },
        xfrm: { error: 'EIO' },
      },
      LINKS,
    );
    expect(p.ipv4.map((h) => h.reason)).toEqual(['tc', 'netfilter', 'xfrm']);
    expect(p.ipv6).toEqual(p.ipv4);
  });

  it("a device's frames meet tc first, then its netdev chain, then the family's hooks", () => {
    const p = nodePolicy(
      sources({
        chains: [
          chain(N.NFPROTO_NETDEV, 0, {
            hook: { num: 0, priority: 0, devices: ['eth0'] },
            policy: N.NF_DROP,
          }),
          chain(N.NFPROTO_IPV4, N.NF_INET_FORWARD, { policy: N.NF_DROP }),
        ],
        tc: {
          filters: [
            { ifindex: 2, kind: 'bpf', handle: 1, parent: 0, info: 0, direction: 'ingress' },
          ],
        },
      }),
      LINKS,
    );
    const d = devicePolicy(p, 'eth0');
    expect(d.ipv4.map((h) => h.reason)).toEqual(['tc', 'netfilter', 'netfilter']);
    expect(d.ipv6.map((h) => h.reason)).toEqual(['tc', 'netfilter']);
    expect(devicePolicy(p, 'eth1').ipv6).toEqual([]);
  });
});
