// Cluster mode (src/cluster; docs/cluster.md). Rows of the one option table (src/config/schema.ts).

import { SECOND, MINUTE, HOUR, type OptionSpec } from '../spec.js';

export const CLUSTER_OPTIONS = [
  {
    path: 'cluster.enabled',
    type: 'bool',
    default: false,
    doc: 'Cluster mode: cluster external IPs, each held by one node at a time (or, added with --active-active, by every eligible node that announces over BGP), coordinated through etcd (docs/cluster.md). Needs extip.enabled and cluster.etcd.endpoints; sets arp_ignore=1 and arp_announce=2 on the external interface.',
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
    path: 'cluster.withdrawLinger',
    type: 'duration',
    // 1 s: a router takes tens of ms to act on a withdrawal (FRR here: under 100 ms), BIRD
    // a few hundred to reconfigure with 1,000 routes; flows then find the other nodes.
    default: SECOND,
    min: 0,
    max: MINUTE,
    doc: 'Active-active cluster IPs (needs bgp.enabled): how long a node that gives one up of its own accord (drained, no longer eligible, deleted) keeps the address after withdrawing its route, so that the router moves the flows to the other nodes before the address goes. 0: at once.',
  },
] as const satisfies readonly OptionSpec[];
