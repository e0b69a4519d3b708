// Every configuration option: its path, type, default and meaning. The config file, the
// command-line flags, the validation errors and the documented example config are all
// generated from this one table, so an option cannot exist in one place and not another.

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
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

export const OPTIONS: readonly OptionSpec[] = [
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
    doc: 'L2 devices to manage (names or globs with * and ?). A device is selected when it matches, is up, has a hardware address and does ARP.',
  },
  // XDP forwarding
  { path: 'xdp.enabled', type: 'bool', default: true, doc: 'Load and attach the XDP forwarder.' },
  {
    path: 'xdp.mode',
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
    type: 'bool',
    default: true,
    doc: 'Leave the XDP program attached when the agent stops, so forwarding continues while it restarts.',
  },
  {
    path: 'xdp.force',
    type: 'bool',
    default: false,
    doc: 'Replace an XDP program that fibkeeper did not attach. Off: such a device is left alone and reported.',
  },
  {
    path: 'xdp.ipv6',
    type: 'bool',
    default: true,
    doc: 'Forward IPv6 in XDP (off: IPv6 goes to the kernel stack).',
  },
  {
    path: 'xdp.ipv4Options',
    type: 'bool',
    default: true,
    doc: 'Forward IPv4 packets that carry IP options in XDP (off: they go to the kernel stack, which processes the options).',
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
    doc: 'How long a next hop learned from XDP misses stays forwardable after its last miss.',
  },
  {
    path: 'xdp.missTracker.interval',
    type: 'duration',
    default: SECOND,
    min: 100,
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
    doc: 'Full recomputation of every next hop, besides the incremental one on route and device changes.',
  },
  {
    path: 'neighbor.retryMin',
    type: 'duration',
    default: 100,
    min: 1,
    doc: 'First retry delay after a failed neighbor write (doubles each failure).',
  },
  {
    path: 'neighbor.retryMax',
    type: 'duration',
    default: MINUTE,
    min: 1,
    doc: 'Longest retry delay after repeated failures.',
  },
  {
    path: 'neighbor.rateLimit',
    type: 'int',
    default: 1000,
    min: 1,
    doc: 'Most re-inserts, retries and refreshes per second in total. With refresh auto or legacy this bounds ARP/NDP on the wire however large the table (at most 3 requests per write); managed entries are re-probed by the kernel, one burst per reachable time as large as the table.',
  },
  {
    path: 'forwardable.static',
    type: 'list',
    default: [],
    doc: 'Forwardable IPs from the config file (owner "config").',
  },
  // External IPs
  { path: 'extip.enabled', type: 'bool', default: true, doc: 'Assign and announce external IPs.' },
  {
    path: 'extip.holderName',
    type: 'string',
    default: 'fibkeeper0',
    doc: 'Device that holds the external IPs; created if absent, adopted if present.',
  },
  {
    path: 'extip.holderKind',
    type: 'enum',
    values: ['dummy', 'bridge', 'ifb'],
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
    doc: 'Gap between the announcements of one burst.',
  },
  {
    path: 'extip.refreshInterval',
    type: 'duration',
    default: 0,
    min: 0,
    doc: 'Periodic re-announcement of every external IP (0: off). For switches whose tables age out first.',
  },
  {
    path: 'extip.checkInterval',
    type: 'duration',
    default: 30 * SECOND,
    min: 0,
    max: 24 * 60 * MINUTE,
    doc: 'Periodic comparison of the holder device with the desired set (0: only on events).',
  },
  {
    path: 'extip.defendInterval',
    type: 'duration',
    default: 10 * SECOND,
    min: 0,
    max: 60 * MINUTE,
    doc: 'Least time between two re-announcements of one IP that another host claims (RFC 5227).',
  },
  {
    path: 'extip.defendRate',
    type: 'int',
    default: 20,
    min: 1,
    max: 100_000,
    doc: 'Most conflict re-announcements per second over all external IPs.',
  },
  {
    path: 'extip.ipv6Dad',
    type: 'bool',
    default: false,
    doc: 'Run duplicate address detection for IPv6 external IPs and announce only after it (off: add them nodad).',
  },
  {
    path: 'extip.dadTimeout',
    type: 'duration',
    default: 5 * SECOND,
    min: 100,
    max: 10 * MINUTE,
    doc: 'How long to wait for an IPv6 external IP to leave the tentative state.',
  },
  {
    path: 'extip.arpResponder',
    type: 'enum',
    values: ['auto', 'always', 'never'],
    default: 'auto',
    doc: 'Answer ARP requests for external IPs: auto when arp_ignore keeps the kernel from answering, always, or never.',
  },
  { path: 'extip.static', type: 'list', default: [], doc: 'External IPs from the config file.' },
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
    doc: 'Also serve the control API on this explicit host:port (empty: no TCP listener).',
  },
  {
    path: 'metrics.address',
    type: 'string',
    default: '127.0.0.1:9470',
    doc: 'host:port of the Prometheus endpoint (also /healthz and /readyz). Empty: off.',
  },
  {
    path: 'log.level',
    type: 'enum',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace'],
    default: 'info',
    doc: 'Log level (JSON lines on stderr).',
  },
];

/** "xdp.missTracker.ttl" -> "xdp-miss-tracker-ttl" */
export function flagName(path: string): string {
  return path
    .replace(/\./g, '-')
    .replace(/([a-z0-9])([A-Z]+)/g, (_m, a: string, caps: string) => `${a}-${caps.toLowerCase()}`);
}
