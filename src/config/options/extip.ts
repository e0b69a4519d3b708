// External IPs (src/extip). Rows of the one option table (src/config/schema.ts).

import { SECOND, MINUTE, HOUR, DAY, type OptionSpec } from '../spec.js';

export const EXTIP_OPTIONS = [
  {
    path: 'extip.enabled',
    type: 'bool',
    default: false,
    doc: 'Assign and announce external IPs (needs extip.interface or extip.nodeIP). Off by default: a config shared by many nodes must not hold external IPs, or every node would assign and announce each of them.',
  },
  {
    path: 'extip.holderName',
    type: 'string',
    // A name no distribution uses.
    default: 'fibkeeper0',
    doc: 'Device that holds the external IPs; created if absent, adopted if present.',
  },
  {
    path: 'extip.holderKind',
    type: 'enum',
    values: ['dummy', 'bridge', 'ifb'],
    // dummy is the lightest device that can hold addresses; kernels without it use bridge/ifb.
    default: 'dummy',
    doc: 'Link type of the holder device. Use bridge (with no ports) or ifb on kernels without the dummy type.',
  },
  {
    path: 'extip.interface',
    type: 'string',
    default: '',
    doc: 'External interface the announcements go out of. Empty: the device that carries extip.nodeIP.',
  },
  {
    path: 'extip.nodeIP',
    type: 'string',
    default: '',
    doc: "The node's transport IP, used to find the external interface when extip.interface is empty.",
  },
  {
    path: 'extip.announceCount',
    type: 'int',
    // Three, one second apart: what arping -U and keepalived send; survives one lost frame.
    default: 3,
    min: 0,
    max: 100,
    doc: 'Gratuitous ARPs / unsolicited NAs sent per burst (on assign, interface up, MAC change).',
  },
  {
    path: 'extip.announceInterval',
    type: 'duration',
    default: SECOND,
    min: 10,
    max: MINUTE,
    doc: 'Gap between the announcements of one burst.',
  },
  {
    path: 'extip.refreshInterval',
    type: 'duration',
    // Off: most switches keep entries for minutes and the kernel answers ARP anyway.
    default: 0,
    min: 0,
    max: DAY,
    doc: 'Periodic re-announcement of every external IP (0: off). For switches whose tables age out first.',
  },
  {
    path: 'extip.checkInterval',
    type: 'duration',
    // Events repair at once; this catches what a lost notification would hide.
    default: 30 * SECOND,
    min: 0,
    max: DAY,
    doc: 'Periodic comparison of the holder device with the desired set (0: only on events).',
  },
  {
    path: 'extip.defendInterval',
    type: 'duration',
    // RFC 5227 DEFEND_INTERVAL: at most one defence per address per 10 s.
    default: 10 * SECOND,
    min: 0,
    max: HOUR,
    doc: 'Least time between two re-announcements of one IP that another host claims (RFC 5227).',
  },
  {
    path: 'extip.defendRate',
    type: 'int',
    // Bounds the frames a flood of conflicting claims can make us send.
    default: 20,
    min: 1,
    max: 100_000,
    doc: 'Most conflict re-announcements per second over all external IPs.',
  },
  {
    path: 'extip.dad',
    type: 'bool',
    // On: an address another host holds is refused, not stolen. Its cost is (probes - 1) x
    // interval + wait = 1.5 s per assign (all IPs of a request in parallel).
    default: true,
    doc: 'Duplicate address detection on the external interface before an IP is assigned (IPv6 neighbor solicitations from ::, IPv4 ARP probes): an IP another host holds is refused and never announced. Costs every assign (dadProbes - 1) x dadInterval + dadWait.',
  },
  {
    path: 'extip.dadProbes',
    type: 'int',
    // Three probes: two may be lost (RFC 5227 PROBE_NUM); RFC 4862 sends one.
    default: 3,
    min: 1,
    max: 10,
    doc: 'Probes sent per IP by duplicate address detection.',
  },
  {
    path: 'extip.dadInterval',
    type: 'duration',
    // Hosts on a segment answer within milliseconds; RFC 5227 spaces its probes 1-2 s apart
    // for slow links, which would make every assign take 4-7 s.
    default: 250,
    min: 10,
    max: 10 * SECOND,
    doc: 'Gap between two probes of duplicate address detection.',
  },
  {
    path: 'extip.dadWait',
    type: 'duration',
    // RFC 4862 RetransTimer: a second for the last answer to come back.
    default: SECOND,
    min: 10,
    max: MINUTE,
    doc: 'How long duplicate address detection listens after the last probe before the IP counts as free.',
  },
  {
    path: 'extip.arpResponder',
    type: 'enum',
    values: ['auto', 'always', 'never'],
    default: 'auto',
    doc: 'Answer ARP requests for external IPs: auto when arp_ignore keeps the kernel from answering, always, or never.',
  },
  {
    path: 'extip.static',
    reload: 'live',
    type: 'list',
    default: [],
    doc: 'External IPs from the config file.',
  },
] as const satisfies readonly OptionSpec[];
