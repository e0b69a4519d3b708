// Generates deploy/grafana/fibkeeper.json, the Grafana dashboard of fibkeeper's metrics.
// `node scripts/grafana-dashboard.mjs --check` exits 1 when the file differs from what this
// script writes. A unit test (src/metrics/dashboard.test.ts) checks that every metric
// fibkeeper exports is charted, that every query names real metrics, and that the
// dashboard can be provisioned from a file (a data source variable, no __inputs).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';

// Every query goes to the data source picked in the `datasource` variable: file
// provisioning (Grafana's provisioning directory, the kube-prometheus-stack sidecar)
// works without the import dialog that `__inputs` needs.
const ds = { type: 'prometheus', uid: '${datasource}' };
const sel = '{instance=~"$instance"}';
const rate = (m, extra = '') =>
  `rate(${m}{instance=~"$instance"${extra ? `,${extra}` : ''}}[$__rate_interval])`;
const by = (m, labels, extra) => `sum by (${labels}) (${rate(m, extra)})`;
const total = (m) => `sum(${rate(m)})`;

let id = 0;
let y = 0;
let x = 0;
let rowHeight = 0;
const panels = [];

function row(title) {
  y += rowHeight;
  x = 0;
  rowHeight = 0;
  panels.push({
    type: 'row',
    title,
    id: ++id,
    gridPos: { h: 1, w: 24, x: 0, y },
    collapsed: false,
    panels: [],
  });
  y += 1;
}

/** Places a panel of width w and height h left to right, wrapping at 24 columns. */
function place(panel, w, h) {
  if (x + w > 24) {
    y += rowHeight;
    x = 0;
    rowHeight = 0;
  }
  panels.push({ ...panel, id: ++id, gridPos: { h, w, x, y } });
  x += w;
  rowHeight = Math.max(rowHeight, h);
}

const targets = (list) =>
  list.map(([expr, legendFormat], i) => ({
    refId: String.fromCharCode(65 + i),
    datasource: ds,
    expr,
    ...(legendFormat ? { legendFormat } : {}),
  }));

function ts(title, w, list, unit, description = '') {
  place(
    {
      type: 'timeseries',
      title,
      description,
      datasource: ds,
      fieldConfig: { defaults: { unit }, overrides: [] },
      options: {
        legend: { displayMode: 'table', placement: 'right', calcs: ['lastNotNull', 'max'] },
        tooltip: { mode: 'multi' },
      },
      targets: targets(list),
    },
    w,
    8,
  );
}

function stat(title, expr, description = '', unit = 'none') {
  place(
    {
      type: 'stat',
      title,
      description,
      datasource: ds,
      fieldConfig: { defaults: { unit }, overrides: [] },
      options: { reduceOptions: { calcs: ['lastNotNull'] }, colorMode: 'value' },
      targets: targets([[expr]]),
    },
    4,
    4,
  );
}

row('Agent');
stat('Ready agents', `sum(fibkeeper_agent_ready${sel})`, '/readyz answers 200.');
stat(
  'Agents needing attention',
  `count(fibkeeper_agent_healthy${sel} == 0) or vector(0)`,
  '/healthz answers 503: `fibkeeper status` on the node says why.',
);
stat('Devices with XDP', `sum(fibkeeper_xdp_attached${sel})`);
stat('Foreign XDP programs in the way', `sum(fibkeeper_xdp_foreign_program${sel})`);
stat(
  "Agents forwarding past the node's policy",
  `sum(fibkeeper_xdp_node_policy{instance=~"$instance",mode="bypass"}) or vector(0)`,
  "xdp.nodePolicy: bypass: XDP forwards past the node's netfilter, tc and xfrm policy.",
);
stat(
  "Traffic the node's policy sends to the kernel",
  `sum(fibkeeper_xdp_policy_passed${sel}) or vector(0)`,
  "Devices and directions (ipv4, ipv6, egress) whose traffic goes to the kernel because the node's netfilter, tc or xfrm policy acts on it (`fibkeeper status` says which).",
);
stat('Forwardable IPs', `sum(fibkeeper_neighbor_forwardable_ips${sel})`);
stat('Selected devices', `sum(fibkeeper_neighbor_selected_devices${sel})`);
ts(
  'Versions running',
  8,
  [[`count by (version, node) (fibkeeper_build_info${sel})`, 'fibkeeper {{version}} on {{node}}']],
  'short',
);
ts(
  'Config reloads (SIGHUP)',
  8,
  [
    [
      `sum by (result) (increase(fibkeeper_config_reloads_total${sel}[$__rate_interval]))`,
      '{{result}}',
    ],
  ],
  'short',
  'error: the file was refused and the running configuration kept (see the agent log).',
);
ts(
  'State file: saves and skipped entries',
  8,
  [
    [
      `sum by (result) (increase(fibkeeper_state_saves_total${sel}[$__rate_interval]))`,
      'saves {{result}}',
    ],
    [`sum by (instance) (fibkeeper_state_entries_skipped${sel})`, 'skipped on {{instance}}'],
  ],
  'short',
  'A failed save fails the control API requests it holds (nothing of them is applied); skipped entries were not applied at the last start or reload (fibkeeper status lists them).',
);
ts(
  'Kernel sockets reopened',
  8,
  [
    [
      `sum by (socket) (increase(fibkeeper_socket_reopens_total${sel}[$__rate_interval]))`,
      '{{socket}}',
    ],
  ],
  'short',
  'Sockets closed and opened afresh after an error, or after they stopped answering the liveness probes (the agent log names the errno). One reopened again and again points at the kernel or the node.',
);
ts(
  'Event stream followers',
  8,
  [
    [`sum by (instance) (fibkeeper_events_followers${sel})`, 'following on {{instance}}'],
    [
      `sum by (instance) (increase(fibkeeper_events_followers_cut_total${sel}[$__rate_interval]))`,
      'cut off on {{instance}}',
    ],
  ],
  'short',
  'Clients of fibkeeper events -f (GET /v1/events?follow=1); a follower that leaves 4 MiB unread is cut off and counted.',
);

row('XDP forwarding');
ts(
  'FIB lookup outcomes per device',
  12,
  [[by('fibkeeper_xdp_fib_lookup_packets_total', 'device, result'), '{{device}} {{result}}']],
  'pps',
  'bpf_fib_lookup results in the XDP program: success is forwarded in XDP; no_neigh means a missing neighbor entry.',
);
ts(
  'Forwarded in XDP vs passed to the kernel',
  12,
  [[by('fibkeeper_xdp_actions_total', 'action'), '{{action}}']],
  'pps',
);
ts(
  'Bytes by verdict',
  12,
  [[by('fibkeeper_xdp_action_bytes_total', 'device, action'), '{{device}} {{action}}']],
  'Bps',
);
ts(
  'Bytes by FIB lookup outcome',
  12,
  [[by('fibkeeper_xdp_fib_lookup_bytes_total', 'device, result'), '{{device}} {{result}}']],
  'Bps',
);
ts(
  'Passed to the kernel, by reason',
  12,
  [[by('fibkeeper_xdp_not_handled_total', 'device, reason'), '{{device}} {{reason}}']],
  'pps',
);
ts(
  'Frames lost after a redirect, by reason',
  12,
  [[by('fibkeeper_xdp_redirect_errors_total', 'device, reason'), '{{device}} {{reason}}']],
  'pps',
);
ts(
  'NO_NEIGH share of lookups',
  12,
  [
    [
      `${by('fibkeeper_xdp_fib_lookup_packets_total', 'device', 'result="no_neigh"')} / clamp_min(${by('fibkeeper_xdp_fib_lookup_packets_total', 'device')}, 1e-9)`,
      '{{device}}',
    ],
  ],
  'percentunit',
);
ts(
  'XDP misses and the miss tracker',
  24,
  [
    [`sum(fibkeeper_xdp_miss_entries${sel})`, 'miss map entries'],
    [`sum(fibkeeper_xdp_miss_tracker_tracked${sel})`, 'next hops tracked'],
    [total('fibkeeper_xdp_miss_tracker_learned_total'), 'learned/s'],
    [total('fibkeeper_xdp_miss_tracker_expired_total'), 'expired/s'],
  ],
  'short',
  'NO_NEIGH destinations recorded by XDP; with xdp.missTracker.enabled they become forwardable IPs (owner xdp-miss) until they expire.',
);

row('Neighbor entries');
ts(
  'Kernel entries by state',
  12,
  [[`sum by (state) (fibkeeper_neighbor_kernel_entries${sel})`, '{{state}}']],
  'short',
);
ts(
  'Desired entries by reconcile status',
  12,
  [[`sum by (status) (fibkeeper_neighbor_desired_entries${sel})`, '{{status}}']],
  'short',
);
ts(
  'Writes: inserts, re-inserts, refreshes, deletes',
  12,
  [
    [total('fibkeeper_neighbor_inserts_total'), 'inserts'],
    [by('fibkeeper_neighbor_reinserts_total', 'cause'), 're-inserts ({{cause}})'],
    [total('fibkeeper_neighbor_refreshes_total'), 'refreshes'],
    [by('fibkeeper_neighbor_deletes_total', 'source'), 'deletes ({{source}})'],
  ],
  'ops',
);
ts(
  'Reconcile errors and failing entries',
  12,
  [
    [by('fibkeeper_neighbor_reconcile_errors_total', 'op'), 'errors/s ({{op}})'],
    [`sum(fibkeeper_neighbor_reconcile_failing_entries${sel})`, 'failing entries'],
    [total('fibkeeper_neighbor_rate_limited_total'), 'rate-limited/s'],
  ],
  'short',
);
ts(
  'Next-hop lookups and resyncs',
  12,
  [
    [by('fibkeeper_neighbor_nexthop_lookups_total', 'result'), 'lookups ({{result}})'],
    [by('fibkeeper_neighbor_resyncs_total', 'table, reason'), 'resync {{table}} ({{reason}})'],
  ],
  'ops',
);
ts(
  'Refresh path (1 = in use), switches, entries held by someone else, next hops not answering',
  12,
  [
    [`max by (mode) (fibkeeper_neighbor_refresh_mode${sel})`, 'path {{mode}}'],
    [
      `max(fibkeeper_neighbor_managed_over_limit${sel})`,
      'forced managed over rateLimit entries (1 = warned)',
    ],
    [by('fibkeeper_neighbor_mode_switches_total', 'to'), 'switches/s to {{to}}'],
    [`sum(fibkeeper_neighbor_foreign_entries${sel})`, 'foreign entries (left alone)'],
    [
      `sum by (device) (fibkeeper_neighbor_unusable_entries${sel})`,
      'next hops not answering on {{device}}',
    ],
  ],
  'short',
);
ts(
  'Reconcile durations (p99)',
  12,
  [
    [
      `histogram_quantile(0.99, ${by('fibkeeper_neighbor_reconcile_round_seconds_bucket', 'le')})`,
      'round',
    ],
    [
      `histogram_quantile(0.99, ${by('fibkeeper_neighbor_reconcile_duration_seconds_bucket', 'le, op')})`,
      '{{op}} call',
    ],
  ],
  's',
);

row('External IPs');
ts(
  'External IPs assigned, and not assigned (failed)',
  8,
  [
    [`sum by (family) (fibkeeper_extip_assigned${sel})`, '{{family}}'],
    [`sum by (family) (fibkeeper_extip_failed${sel})`, 'failed {{family}}'],
  ],
  'short',
);
ts(
  'Announcements sent',
  8,
  [[by('fibkeeper_extip_announcements_sent_total', 'family, reason'), '{{family}} {{reason}}']],
  'ops',
);
ts(
  'Frames sent: all, and replies to requests',
  8,
  [
    [by('fibkeeper_extip_frames_sent_total', 'family'), 'frames {{family}}'],
    [by('fibkeeper_extip_responses_sent_total', 'family'), 'replies {{family}}'],
  ],
  'ops',
);
ts(
  'Conflicts, repairs, errors',
  12,
  [
    [by('fibkeeper_extip_conflicts_total', 'family'), 'conflicts {{family}}'],
    [by('fibkeeper_extip_repairs_total', 'kind'), 'repairs {{kind}}'],
    [by('fibkeeper_extip_errors_total', 'op'), 'errors {{op}}'],
  ],
  'ops',
);
ts(
  'Holder resyncs and duplicate address detection',
  12,
  [
    [by('fibkeeper_extip_resyncs_total', 'reason'), 'resyncs {{reason}}'],
    [by('fibkeeper_extip_dad_total', 'family, result'), 'DAD {{family}} {{result}}'],
  ],
  'ops',
  'Full comparisons of the holder device with the desired set (overflow: notifications were lost), and duplicate address detections by result (duplicate: another host holds the IP; it was not assigned).',
);

row('Cluster (etcd)');
ts(
  'Members, valid leases, IPs held',
  12,
  [
    [`max(fibkeeper_cluster_members${sel})`, 'members seen'],
    [`sum(fibkeeper_cluster_lease_valid${sel})`, 'nodes with a valid lease'],
    [`sum by (instance) (fibkeeper_cluster_ips_held${sel})`, 'IPs held by {{instance}}'],
  ],
  'short',
  'A node holds cluster external IPs only while it can prove its etcd lease valid.',
);
ts(
  'Ownership changes',
  12,
  [
    [by('fibkeeper_cluster_ownership_changes_total', 'change'), '{{change}}'],
    [total('fibkeeper_cluster_reconciles_total'), 'placement rounds'],
  ],
  'ops',
);
ts(
  'etcd requests (p99) and errors',
  8,
  [
    [
      `histogram_quantile(0.99, ${by('fibkeeper_cluster_etcd_request_duration_seconds_bucket', 'le, op')})`,
      'p99 {{op}}',
    ],
    [by('fibkeeper_cluster_etcd_request_errors_total', 'op'), 'errors/s {{op}}'],
  ],
  's',
);
ts(
  'Lease renew failures and watch resyncs',
  8,
  [
    [by('fibkeeper_cluster_lease_renew_failures_total', 'reason'), 'renew failed ({{reason}})'],
    [by('fibkeeper_cluster_resyncs_total', 'reason'), 'resync ({{reason}})'],
  ],
  'ops',
);
ts(
  'Failover time (p99)',
  8,
  [
    [
      `histogram_quantile(0.99, ${by('fibkeeper_cluster_failover_duration_seconds_bucket', 'le')})`,
      'failover p99',
    ],
  ],
  's',
);
ts(
  'Peers: deaths, silences, takeovers',
  12,
  [
    [by('fibkeeper_cluster_peer_events_total', 'event'), 'peer {{event}}'],
    [by('fibkeeper_cluster_takeovers_total', 'kind'), 'takeover ({{kind}})'],
    [total('fibkeeper_cluster_dad_conflicts_total'), 'DAD conflicts'],
  ],
  'ops',
  'The peer heartbeat: a dead peer (its process gone) has its lease revoked at once, a silent one (hung, cut off) with a cool-down; DAD conflicts: cluster IPs another host uses, not taken.',
);
ts(
  'Holding on grace (etcd out of reach for every member)',
  12,
  [[`sum by (instance) (fibkeeper_cluster_grace_holding${sel})`, '{{instance}}']],
  'short',
  "1 while a node keeps its cluster IPs past its lease on the other members' promises not to claim.",
);

row('BGP');
ts(
  'Sessions established, routes advertised per peer',
  12,
  [
    [`sum by (instance) (fibkeeper_bgp_session_up${sel})`, 'sessions up {{instance}}'],
    [`sum by (instance, peer) (fibkeeper_bgp_peer_routes_exported${sel})`, '{{instance}} {{peer}}'],
    [
      `sum by (instance, family) (fibkeeper_bgp_announced${sel})`,
      'announced {{instance}} {{family}}',
    ],
  ],
  'short',
  'Sessions: 1 per peer while Established. A node whose sessions are down is reachable from the routed fabric by none of its external IPs.',
);
ts(
  'Advertised, withdrawn, daemon restarts, refused configurations',
  12,
  [
    [by('fibkeeper_bgp_advertised_total', 'family'), 'advertised {{family}}'],
    [by('fibkeeper_bgp_withdrawn_total', 'family'), 'withdrawn {{family}}'],
    [total('fibkeeper_bgp_daemon_restarts_total'), 'daemon restarts'],
    [total('fibkeeper_bgp_configure_errors_total'), 'refused configurations'],
  ],
  'ops',
);

const dashboard = {
  title: 'fibkeeper',
  uid: 'fibkeeper',
  description: 'XDP forwarding outcomes, neighbor entries and external IPs of fibkeeper agents.',
  tags: ['fibkeeper', 'xdp', 'networking'],
  schemaVersion: 39,
  version: 2,
  editable: true,
  time: { from: 'now-1h', to: 'now' },
  refresh: '30s',
  templating: {
    list: [
      {
        name: 'datasource',
        label: 'Data source',
        type: 'datasource',
        query: 'prometheus',
        refresh: 1,
        hide: 0,
        current: {},
      },
      {
        name: 'instance',
        label: 'Node',
        type: 'query',
        datasource: ds,
        query: 'label_values(fibkeeper_build_info, instance)',
        refresh: 2,
        multi: true,
        includeAll: true,
        current: { text: 'All', value: '$__all' },
      },
    ],
  },
  panels,
};

const url = new URL('../deploy/grafana/fibkeeper.json', import.meta.url);
// In the project's style, as `make lint` checks it.
const path = fileURLToPath(url);
const text = await format(JSON.stringify(dashboard), {
  ...(await resolveConfig(path)),
  filepath: path,
});
if (process.argv.includes('--check')) {
  if (readFileSync(url, 'utf8') !== text) {
    console.error(
      'deploy/grafana/fibkeeper.json is out of date: node scripts/grafana-dashboard.mjs',
    );
    process.exit(1);
  }
} else {
  writeFileSync(url, text);
  console.log('wrote deploy/grafana/fibkeeper.json');
}
