// XDP forwarding (src/fib). Rows of the one option table (src/config/schema.ts).

import { SECOND, MINUTE, HOUR, DAY, type OptionSpec } from '../spec.js';

export const XDP_OPTIONS = [
  { path: 'xdp.enabled', type: 'bool', default: true, doc: 'Load and attach the XDP forwarder.' },
  {
    path: 'xdp.mode',
    reload: 'live',
    type: 'enum',
    values: ['auto', 'native', 'generic'],
    default: 'auto',
    doc: 'XDP attach mode: auto tries native (driver) mode and falls back to generic.',
  },
  {
    path: 'xdp.pinDir',
    type: 'string',
    default: '/sys/fs/bpf/fibkeeper',
    doc: 'Directory in a bpffs where links and maps are pinned so forwarding survives restarts (bpffs is mounted there if needed).',
  },
  {
    path: 'xdp.keepOnStop',
    reload: 'live',
    type: 'bool',
    default: true,
    doc: "Leave the XDP program attached when the agent stops, so forwarding continues while it restarts: in XDP for 5s (then, with nobody watching the node's policy, by the kernel until an agent is back).",
  },
  {
    path: 'xdp.force',
    reload: 'live',
    type: 'bool',
    default: false,
    doc: 'Replace an XDP program that fibkeeper did not attach. Off: such a device is left alone and reported.',
  },
  {
    path: 'xdp.ipv6',
    reload: 'live',
    type: 'bool',
    default: true,
    doc: 'Forward IPv6 in XDP (off: IPv6 goes to the kernel stack).',
  },
  {
    path: 'xdp.ipv4Options',
    reload: 'live',
    type: 'bool',
    default: false,
    doc: 'Forward in XDP IPv4 packets whose options the kernel forwards unchanged (NOP, end of list, unknown kinds; needs Linux 5.18). Off: every packet with options goes to the kernel stack. Source routes, record route, timestamps, router alert and malformed options always go to the kernel.',
  },
  {
    path: 'xdp.nodePolicy',
    reload: 'live',
    type: 'enum',
    values: ['respect', 'bypass'],
    default: 'respect',
    doc: "What XDP does with traffic that the node's own policy acts on in the kernel: netfilter (nftables or iptables chains on prerouting, forward or postrouting, connection tracking, NAT, netdev chains of the devices), tc (filters and tcx programs on the ingress or egress device, a queueing discipline the node configured) and xfrm (IPsec) policy. respect: that traffic goes to the kernel (counted per reason: netfilter, tc, xfrm, egress_netfilter, egress_tc) and XDP forwards the rest. bypass: XDP forwards it past all of them (write it out to choose it).",
  },
  {
    path: 'xdp.missTracker.enabled',
    type: 'bool',
    default: false,
    doc: 'Add next hops that XDP found without a neighbor entry (NO_NEIGH) as forwardable IPs with owner xdp-miss.',
  },
  {
    path: 'xdp.missTracker.ttl',
    type: 'duration',
    default: 10 * MINUTE,
    min: SECOND,
    max: DAY,
    doc: 'How long a next hop learned from XDP misses stays forwardable after its last miss.',
  },
  {
    path: 'xdp.missTracker.interval',
    type: 'duration',
    default: SECOND,
    min: 100,
    max: HOUR,
    doc: 'How often the miss map is read.',
  },
] as const satisfies readonly OptionSpec[];
