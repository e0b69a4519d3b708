// Generates deploy/grafana/fibkeeper.json, the Grafana dashboard of fibkeeper's metrics.
// A unit test (src/metrics/dashboard.test.ts) checks that every query names real metrics.
import { writeFileSync } from 'node:fs';

const ds = { type: 'prometheus', uid: '${DS_PROMETHEUS}' };
let id = 0;
const row = (title, y) => ({
  type: 'row',
  title,
  id: ++id,
  gridPos: { h: 1, w: 24, x: 0, y },
  collapsed: false,
  panels: [],
});
const ts = (title, x, y, w, targets, unit = 'pps', description = '') => ({
  type: 'timeseries',
  title,
  description,
  id: ++id,
  datasource: ds,
  gridPos: { h: 8, w, x, y },
  fieldConfig: { defaults: { unit }, overrides: [] },
  options: {
    legend: { displayMode: 'table', placement: 'right', calcs: ['lastNotNull', 'max'] },
    tooltip: { mode: 'multi' },
  },
  targets: targets.map(([expr, legendFormat], i) => ({
    refId: String.fromCharCode(65 + i),
    datasource: ds,
    expr,
    legendFormat,
  })),
});
const stat = (title, x, y, w, expr, unit = 'none') => ({
  type: 'stat',
  title,
  id: ++id,
  datasource: ds,
  gridPos: { h: 4, w, x, y },
  fieldConfig: { defaults: { unit }, overrides: [] },
  options: { reduceOptions: { calcs: ['lastNotNull'] }, colorMode: 'value' },
  targets: [{ refId: 'A', datasource: ds, expr }],
});
const sel = '{instance=~"$instance"}';
const by = (m, labels) => `sum by (${labels}) (rate(${m}${sel}[$__rate_interval]))`;

const panels = [
  row('Agent', 0),
  stat('Ready agents', 0, 1, 6, `sum(fibkeeper_agent_ready${sel})`),
  stat('Devices with XDP', 6, 1, 6, `sum(fibkeeper_xdp_attached${sel})`),
  stat('Foreign XDP programs in the way', 12, 1, 6, `sum(fibkeeper_xdp_foreign_program${sel})`),
  stat('Forwardable IPs', 18, 1, 6, `sum(fibkeeper_neighbor_forwardable_ips${sel})`),
  row('XDP forwarding', 5),
  ts(
    'FIB lookup outcomes per device',
    0,
    6,
    12,
    [[by('fibkeeper_xdp_fib_lookup_packets_total', 'device, result'), '{{device}} {{result}}']],
    'pps',
    'bpf_fib_lookup results in the XDP program: success is forwarded in XDP; no_neigh means a missing neighbor entry.',
  ),
  ts(
    'Forwarded in XDP vs passed to the kernel',
    12,
    6,
    12,
    [[by('fibkeeper_xdp_actions_total', 'action'), '{{action}}']],
    'pps',
  ),
  ts(
    'Passed without a lookup, by reason',
    0,
    14,
    12,
    [[by('fibkeeper_xdp_not_handled_total', 'device, reason'), '{{device}} {{reason}}']],
    'pps',
  ),
  ts(
    'NO_NEIGH share of lookups',
    12,
    14,
    12,
    [
      [
        `sum by (device) (rate(fibkeeper_xdp_fib_lookup_packets_total{instance=~"$instance",result="no_neigh"}[$__rate_interval])) / clamp_min(sum by (device) (rate(fibkeeper_xdp_fib_lookup_packets_total${sel}[$__rate_interval])), 1e-9)`,
        '{{device}}',
      ],
      ['fibkeeper_xdp_miss_entries' + sel, 'miss map entries'],
    ].slice(0, 1),
    'percentunit',
  ),
  row('Neighbor entries', 22),
  ts(
    'Kernel entries by state',
    0,
    23,
    12,
    [[`sum by (state) (fibkeeper_neighbor_kernel_entries${sel})`, '{{state}}']],
    'short',
  ),
  ts(
    'Desired entries by reconcile status',
    12,
    23,
    12,
    [[`sum by (status) (fibkeeper_neighbor_desired_entries${sel})`, '{{status}}']],
    'short',
  ),
  ts(
    'Writes: inserts, re-inserts, refreshes, deletes',
    0,
    31,
    12,
    [
      [`sum(rate(fibkeeper_neighbor_inserts_total${sel}[$__rate_interval]))`, 'inserts'],
      [by('fibkeeper_neighbor_reinserts_total', 'cause'), 're-inserts ({{cause}})'],
      [`sum(rate(fibkeeper_neighbor_refreshes_total${sel}[$__rate_interval]))`, 'refreshes'],
      [by('fibkeeper_neighbor_deletes_total', 'source'), 'deletes ({{source}})'],
    ],
    'ops',
  ),
  ts(
    'Reconcile errors and failing entries',
    12,
    31,
    12,
    [
      [by('fibkeeper_neighbor_reconcile_errors_total', 'op'), 'errors/s ({{op}})'],
      [`sum(fibkeeper_neighbor_reconcile_failing_entries${sel})`, 'failing entries'],
      [
        `sum(rate(fibkeeper_neighbor_rate_limited_total${sel}[$__rate_interval]))`,
        'rate-limited/s',
      ],
    ],
    'short',
  ),
  ts(
    'Next-hop lookups and resyncs',
    0,
    39,
    12,
    [
      [by('fibkeeper_neighbor_nexthop_lookups_total', 'result'), 'lookups ({{result}})'],
      [by('fibkeeper_neighbor_resyncs_total', 'table, reason'), 'resync {{table}} ({{reason}})'],
    ],
    'ops',
  ),
  ts(
    'Reconcile round duration (p99)',
    12,
    39,
    12,
    [
      [
        `histogram_quantile(0.99, sum by (le) (rate(fibkeeper_neighbor_reconcile_round_seconds_bucket${sel}[$__rate_interval])))`,
        'round p99',
      ],
    ],
    's',
  ),
  row('External IPs', 47),
  ts(
    'Assigned external IPs',
    0,
    48,
    8,
    [[`sum by (family) (fibkeeper_extip_assigned${sel})`, '{{family}}']],
    'short',
  ),
  ts(
    'Announcements sent',
    8,
    48,
    8,
    [[by('fibkeeper_extip_announcements_sent_total', 'family, reason'), '{{family}} {{reason}}']],
    'ops',
  ),
  ts(
    'Conflicts, repairs, errors',
    16,
    48,
    8,
    [
      [by('fibkeeper_extip_conflicts_total', 'family'), 'conflicts {{family}}'],
      [by('fibkeeper_extip_repairs_total', 'kind'), 'repairs {{kind}}'],
      [by('fibkeeper_extip_errors_total', 'op'), 'errors {{op}}'],
    ],
    'ops',
  ),
];

const dashboard = {
  __inputs: [
    {
      name: 'DS_PROMETHEUS',
      label: 'Prometheus',
      type: 'datasource',
      pluginId: 'prometheus',
      pluginName: 'Prometheus',
    },
  ],
  title: 'fibkeeper',
  uid: 'fibkeeper',
  description: 'XDP forwarding outcomes, neighbor entries and external IPs of fibkeeper agents.',
  tags: ['fibkeeper', 'xdp', 'networking'],
  schemaVersion: 39,
  version: 1,
  editable: true,
  time: { from: 'now-1h', to: 'now' },
  refresh: '30s',
  templating: {
    list: [
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
writeFileSync(
  new URL('../deploy/grafana/fibkeeper.json', import.meta.url),
  JSON.stringify(dashboard, null, 2) + '\n',
);
console.log('wrote deploy/grafana/fibkeeper.json');
