// Every configuration option: its path, type, default and meaning. The config file, the
// command-line flags, the validation errors, the documented example config and the
// FibkeeperConfig type itself are all derived from this one table, so an option cannot exist
// in one place and not another: adding a row is the one edit that adds an option.

export type OptionType = 'string' | 'bool' | 'int' | 'duration' | 'list' | 'enum' | 'filemode';

export interface OptionSpec {
  /** Dotted path in the config file ("xdp.mode"); the flag is its kebab-case ("--xdp-mode"). */
  readonly path: string;
  readonly type: OptionType;
  readonly default: string | number | boolean | readonly string[];
  readonly doc: string;
  /** Allowed values of an enum. */
  readonly values?: readonly string[];
  /** Inclusive bounds of an int, or of a duration in milliseconds. */
  readonly min?: number;
  readonly max?: number;
  /**
   * How a change of the option takes effect on SIGHUP: `live` at once (src/agent/reload.ts
   * applies it), else after a restart (the reload logs it as needing one).
   */
  readonly reload?: 'live';
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const TABLE = [
  {
    path: 'netns',
    type: 'string',
    default: '',
    doc: 'Network namespace to manage: a name under /run/netns or a path to a netns file. Empty: the namespace the agent runs in.',
  },
  {
    path: 'devices',
    type: 'list',
    default: ['eth*', 'en*'],
    doc: 'L2 devices to manage (names or globs with * and ?). One rule for every subsystem: a device is selected when its name matches, it is not the external-IP holder (extip.holderName), not loopback, has a non-zero hardware address, is not the port of a bridge, bond or team, and is up. Neighbor entries also need carrier and ARP/ND (not NOARP). XDP also needs an Ethernet device that is no port at all (a VRF port neither), and of a stacked pair (macvlan, ipvlan, vlan, macsec on a selected lower device) takes only the lower device; a device that goes down loses its program but keeps its counters.',
  },
  // XDP forwarding
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
  // Neighbor freshness
  {
    path: 'neighbor.enabled',
    type: 'bool',
    default: true,
    doc: 'Keep neighbor entries for forwardable IPs.',
  },
  {
    path: 'neighbor.refresh',
    type: 'enum',
    values: ['auto', 'managed', 'legacy'],
    default: 'auto',
    doc: 'How entries stay fresh: managed (the kernel re-resolves them, 5.16+; ARP grows with the table), legacy (fibkeeper refreshes STALE entries within neighbor.rateLimit), auto: managed while at most neighbor.rateLimit entries are wanted and the kernel has it, legacy above (managed again at half of it).',
  },
  {
    path: 'neighbor.resyncInterval',
    type: 'duration',
    default: 5 * MINUTE,
    min: SECOND,
    max: DAY,
    doc: 'Full recomputation of every next hop, besides the incremental one on route and device changes.',
  },
  {
    path: 'neighbor.retryMin',
    type: 'duration',
    default: 100,
    min: 1,
    max: HOUR,
    doc: 'First retry delay after a failed neighbor write (doubles each failure).',
  },
  {
    path: 'neighbor.retryMax',
    type: 'duration',
    default: MINUTE,
    min: 1,
    max: HOUR,
    doc: 'Longest retry delay after repeated failures.',
  },
  {
    path: 'neighbor.unusableAfter',
    type: 'duration',
    default: 30 * SECOND,
    min: SECOND,
    max: DAY,
    doc: "How long a desired next hop's kernel entry may stay unresolved (FAILED, or INCOMPLETE again after a FAILED: the next hop does not answer ARP/NDP) before the agent reports it unusable: degraded health (/healthz 503, fibkeeper status exit 1) naming it, and fibkeeper_neighbor_unusable_entries. XDP sends such a next hop's traffic to the kernel (NO_NEIGH).",
  },
  {
    path: 'neighbor.rateLimit',
    type: 'int',
    default: 1000,
    min: 1,
    max: 1_000_000,
    doc: 'Most re-inserts, retries and refreshes per second in total. With refresh auto or legacy this bounds ARP/NDP on the wire however large the table (at most 3 requests per write); managed entries are re-probed by the kernel, one burst per reachable time as large as the table.',
  },
  {
    path: 'forwardable.static',
    reload: 'live',
    type: 'list',
    default: [],
    doc: 'Forwardable IPs from the config file (owner "config").',
  },
  // External IPs
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
  // Cluster mode (src/cluster; docs/cluster.md)
  {
    path: 'cluster.enabled',
    type: 'bool',
    default: false,
    doc: 'Cluster mode: cluster external IPs, each held by one node at a time, coordinated through etcd (docs/cluster.md). Needs extip.enabled and cluster.etcd.endpoints; sets arp_ignore=1 and arp_announce=2 on the external interface.',
  },
  {
    path: 'cluster.nodeName',
    type: 'string',
    default: '',
    doc: "This node's name in the cluster (unique). Empty: the host name.",
  },
  {
    path: 'cluster.labels',
    type: 'list',
    default: [],
    doc: 'Labels of this node (key=value) that cluster IPs can select eligible nodes by.',
  },
  {
    path: 'cluster.nodeIPs',
    type: 'list',
    default: [],
    doc: "This node's IPs, published so that the other nodes keep neighbor entries for them (owner cluster). Empty: extip.nodeIP.",
  },
  {
    path: 'cluster.prefix',
    type: 'string',
    // Keys of every fibkeeper in one etcd; one etcd can host several clusters by prefix.
    default: '/fibkeeper/',
    doc: 'etcd key prefix of the cluster (members/, ips/, owners/ under it).',
  },
  {
    path: 'cluster.holderName',
    type: 'string',
    // A TUN device this agent creates and holds open: the kernel deletes it, with every
    // cluster IP on it, when the agent's process ends (docs/cluster.md, fencing).
    default: 'fkcluster0',
    doc: "The device that carries this node's cluster IPs: a TUN device the agent creates and the kernel deletes with the agent's process (so a dead agent's node answers for none of them). Must differ from extip.holderName.",
  },
  {
    path: 'cluster.static',
    reload: 'live',
    type: 'list',
    default: [],
    doc: 'Cluster external IPs to seed: each is added to the desired set in etcd at start and reload when it is not there yet (eligibility: any node). `fibkeeper cluster extip del` removes one until the next start or reload; remove it here too.',
  },
  {
    path: 'cluster.etcd.endpoints',
    type: 'list',
    default: [],
    doc: 'etcd client endpoints (host:port or https://host:port).',
  },
  {
    path: 'cluster.etcd.caFile',
    type: 'string',
    default: '',
    doc: 'CA certificate (PEM) that the etcd server certificates are checked against; set to use TLS.',
  },
  {
    path: 'cluster.etcd.certFile',
    type: 'string',
    default: '',
    doc: 'Client certificate (PEM) for etcd (with cluster.etcd.keyFile).',
  },
  {
    path: 'cluster.etcd.keyFile',
    type: 'string',
    default: '',
    doc: 'Private key (PEM) of the etcd client certificate.',
  },
  {
    path: 'cluster.etcd.requestTimeout',
    type: 'duration',
    default: 500,
    min: 50,
    max: MINUTE,
    doc: 'Deadline of each etcd request; a keep-alive without an answer by then also reconnects.',
  },
  {
    path: 'cluster.leaseTTL',
    type: 'duration',
    // Cluster timers measured on a loaded 2-core machine against a local etcd (heartbeat 50 ms,
    // election timeout 500 ms; bench/cluster/lease.mjs, docs/cluster.md): keep-alive round trips
    // p99 9-32 ms idle, 43-73 ms with a busy event loop; a timer fires up to 163 ms late under
    // that load; etcd deletes an expired lease's keys 0-500 ms after its expiry. 1 s: a
    // SIGKILLed owner's IPs move 1.0-1.5 s after its last keep-alive (TTL plus etcd's revoke
    // loop), inside the 2 s target; 2 s would miss it.
    default: SECOND,
    min: SECOND,
    max: 60 * MINUTE,
    doc: "TTL of the node's etcd lease (whole seconds). 1 s needs an etcd election timeout of at most 666 ms (etcd grants at least 1.5 × the election timeout).",
  },
  {
    path: 'cluster.renewInterval',
    type: 'duration',
    // 150 ms: four keep-alives per hold window (TTL - margin = 750 ms), so three lost or late
    // ones in a row are survived; 7 requests/s per node is nothing for etcd.
    default: 150,
    min: 10,
    max: 30 * MINUTE,
    doc: 'Gap between lease keep-alives.',
  },
  {
    path: 'cluster.fenceMargin',
    type: 'duration',
    // 250 ms: covers a timer firing late on a busy event loop (<= 163 ms measured), the holder
    // address removal (~1 ms) and clock-rate drift between nodes (<= 1 ms per s).
    default: 250,
    min: 50,
    max: 30 * MINUTE,
    doc: 'How long before its lease could expire in etcd a node stops holding its cluster IPs.',
  },
  {
    path: 'cluster.rebalanceDelay',
    type: 'duration',
    // 1 s: a member that crashes within a second of joining never receives IPs.
    default: SECOND,
    min: 0,
    max: HOUR,
    doc: 'How long a new member must have been seen before IPs are handed over to it.',
  },
  {
    path: 'cluster.heartbeatPort',
    type: 'int',
    // Each node listens on its first node IP (cluster.nodeIPs) for the others' heartbeats.
    default: 7947,
    min: 1,
    max: 65535,
    doc: "UDP port of the peer heartbeat on this node's first node IP (cluster.nodeIPs): how the members on a segment see a peer's process die at once, a peer go silent, and an etcd outage that every member shares.",
  },
  {
    path: 'cluster.heartbeatInterval',
    type: 'duration',
    // 10 ms: a killed agent is seen dead at the first heartbeat its kernel refuses, at most
    // an interval after its sockets closed; 3 nodes send 600 small datagrams a second in all.
    default: 10,
    min: 5,
    max: SECOND,
    doc: 'Gap between two heartbeats to each peer.',
  },
  {
    path: 'cluster.peerTimeout',
    type: 'duration',
    // 400 ms: above the worst event-loop stall measured on a loaded 2-core machine (163 ms)
    // with room; a hung holder's IPs move after it plus the cool-down (TTL - fence margin).
    default: 400,
    min: 50,
    max: MINUTE,
    doc: 'How long a peer may stay unheard before it counts as silent (hung, cut off): its lease is revoked and its IPs taken over after a cool-down. Also how long a promise not to claim lasts (etcd outages).',
  },
  {
    path: 'cluster.handoverOnStop',
    type: 'bool',
    default: true,
    doc: 'On stop, revoke the lease so that the next owners take the IPs over at once (off: they wait for the TTL).',
  },
  {
    path: 'stateFile',
    type: 'string',
    default: '/var/lib/fibkeeper/state.json',
    doc: 'Where the agent keeps what was added through the control API (forwardable IPs per owner, external IPs), so a restart restores it. Empty: not kept.',
  },
  // Control API, metrics, logs
  {
    path: 'api.socket',
    type: 'string',
    default: '/run/fibkeeper/fibkeeper.sock',
    doc: 'Unix socket of the control API (its directory is created 0750).',
  },
  {
    path: 'api.socketMode',
    type: 'filemode',
    default: '0660',
    doc: 'Permissions of the control socket (0600 or 0660; never world-accessible).',
  },
  {
    path: 'api.tcp',
    type: 'string',
    default: '',
    doc: 'Also serve the control API on this explicit host:port, IPv6 as [addr]:port (empty: no TCP listener). An address other than loopback needs api.tokenFile.',
  },
  {
    path: 'api.tokenFile',
    type: 'string',
    default: '',
    doc: 'File holding the secret that TCP clients send as "Authorization: Bearer <token>" (at least 16 characters; the file must not be readable by others). Required when api.tcp is not a loopback address; the unix socket needs none.',
  },
  {
    path: 'api.requestTimeout',
    type: 'duration',
    default: 10 * SECOND,
    min: 100,
    max: 10 * MINUTE,
    doc: 'Deadline of every control API call: past it the call is answered 503 with the reason instead of waiting on.',
  },
  {
    path: 'metrics.address',
    type: 'string',
    default: '127.0.0.1:9470',
    doc: 'Address of the Prometheus endpoint (also /livez, /readyz and /healthz): 10.0.0.5:9470, [fd00::5]:9470, or a bare IPv4 or IPv6 address for port 9470 (what the Kubernetes downward API gives). Empty: off.',
  },
  {
    path: 'log.level',
    reload: 'live',
    type: 'enum',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace'],
    default: 'info',
    doc: 'Log level (JSON lines on stderr).',
  },
] as const satisfies readonly OptionSpec[];

/** The table, as the code that walks it sees it. */
export const OPTIONS: readonly OptionSpec[] = TABLE;

/** What an option of each type holds once read (durations in ms, file modes as numbers). */
interface ValueOfType {
  string: string;
  bool: boolean;
  int: number;
  duration: number;
  list: string[];
  enum: string;
  filemode: number;
}

/** An option's value type: its enum's values, or what its type holds. */
type ValueOf<S extends OptionSpec> = S extends { type: 'enum'; values: readonly (infer V)[] }
  ? V
  : ValueOfType[S['type']];

/** "xdp.missTracker.ttl" -> "xdp"; "netns" -> "netns". */
type Head<P extends string> = P extends `${infer H}.${string}` ? H : P;

/** The options under section K, with K. taken off their paths. */
type Below<S extends OptionSpec, K extends string> = S extends { path: `${K}.${infer Rest}` }
  ? Omit<S, 'path'> & { path: Rest }
  : never;

/** The nested configuration object that the options S describe. */
type ConfigOf<S extends OptionSpec> = {
  [K in Head<S['path']>]: [Extract<S, { path: K }>] extends [never]
    ? ConfigOf<Below<S, K>>
    : ValueOf<Extract<S, { path: K }>>;
};

/** The whole configuration, as every command reads it: one field per row of the table. */
export type FibkeeperConfig = ConfigOf<(typeof TABLE)[number]>;

/** "xdp.missTracker.ttl" -> "xdp-miss-tracker-ttl" */
export function flagName(path: string): string {
  return path
    .replace(/\./g, '-')
    .replace(/([a-z0-9])([A-Z]+)/g, (_m, a: string, caps: string) => `${a}-${caps.toLowerCase()}`);
}
