// `fibkeeper status` shows, per device and direction, whether XDP forwards the traffic or the
// node's policy sends it to the kernel, and why; under bypass, that XDP forwards past it.
import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/status-format.js';

import type { PolicyReason } from '../../src/fib/index.js';

const hit = (reason: PolicyReason, what: string) => ({ reason, what });

function doc(mode: 'respect' | 'bypass') {
  return {
    xdp: {
      nodePolicy: mode,
      counters: [],
      devices: [
        {
          name: 'eth0',
          attached: 'ours' as const,
          policy: {
            ipv4: [
              hit('netfilter', 'nft inet t chain f (forward, priority 0, policy drop)'),
              hit('xfrm', 'xfrm default policy fwd block'),
            ],
            ipv6: [],
            egress: [hit('egress_tc', 'qdisc htb 1: root on eth0')],
            applied: mode === 'respect',
          },
        },
      ],
    },
  };
}

describe('fibkeeper status: the node policy', () => {
  it('names what sends each direction to the kernel, and what XDP forwards', () => {
    const text = formatStatus(doc('respect'));
    expect(text).toContain('node policy: respect');
    expect(text).toMatch(
      /eth0 +ipv4 +kernel: netfilter +nft inet t chain f \(forward, priority 0, policy drop\) \(\+1 more\)/,
    );
    expect(text).toMatch(/eth0 +ipv6 +xdp/);
    expect(text).toMatch(/eth0 +egress +kernel: egress_tc +qdisc htb 1: root on eth0/);
  });

  it('says so under bypass', () => {
    const text = formatStatus(doc('bypass'));
    expect(text).toContain("node policy: bypass (XDP forwards past the node's netfilter");
    expect(text).toMatch(/eth0 +ipv4 +xdp \(bypass\) +nft inet t chain f/);
  });

  it('prints an older agent document without the section', () => {
    expect(formatStatus({ xdp: { devices: [], counters: [] } })).not.toContain('node policy');
  });
});
