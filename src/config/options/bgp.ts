// BGP announcement of external IPs (src/bgp). Rows of the one option table (src/config/schema.ts).

import { SECOND, MINUTE, type OptionSpec } from '../spec.js';

export const BGP_OPTIONS = [
  {
    path: 'bgp.enabled',
    type: 'bool',
    default: false,
    doc: 'Announce every external IP this node holds (node-local and cluster) as a /32 or /128 route with the node as next hop to bgp.peers, through a BIRD 2 daemon that the agent starts as its child and that dies with it. Needs extip.enabled.',
  },
  {
    path: 'bgp.asn',
    type: 'int',
    default: 0,
    min: 0,
    max: 4294967295,
    doc: "The node's AS number (1-4294967295; required when bgp.enabled). A peer with the same AS is an iBGP peer.",
  },
  {
    path: 'bgp.routerId',
    type: 'string',
    default: '',
    doc: "BGP router ID (an IPv4 address). Empty: the daemon takes the node's lowest IPv4 address (a node with none must set it).",
  },
  {
    path: 'bgp.peers',
    type: 'list',
    default: [],
    doc: 'The routers to announce to, one entry each: `ADDRESS as ASN [port N] [source ADDRESS] [multihop [TTL]] [password-file PATH] [bfd on|off]`, e.g. `10.0.0.1 as 65000`. An IPv4 peer carries the IPv4 external IPs, an IPv6 peer the IPv6 ones (MP-BGP). BFD is on unless `bfd off`; the password file holds the TCP MD5 secret on its first line.',
  },
  {
    path: 'bgp.communities',
    type: 'list',
    default: [],
    doc: 'Standard communities (`ASN:VALUE`, each 0-65535) attached to every route announced.',
  },
  {
    path: 'bgp.largeCommunities',
    type: 'list',
    default: [],
    doc: 'Large communities (`GLOBAL:LOCAL1:LOCAL2`, each 0-4294967295) attached to every route announced.',
  },
  {
    path: 'bgp.localPreference',
    type: 'int',
    default: 0,
    min: 0,
    max: 4294967295,
    doc: 'LOCAL_PREF sent to iBGP peers (0: the daemon default, 100). eBGP peers never receive it.',
  },
  {
    path: 'bgp.ipAttributes',
    type: 'list',
    default: [],
    doc: "Per external IP attributes, one entry per IP: `IP [community ASN:VALUE]... [large-community GLOBAL:LOCAL1:LOCAL2]... [local-preference N]`, e.g. `192.0.2.10 community 65000:200 local-preference 150`. The communities are added to bgp.communities and bgp.largeCommunities for that IP's route; local-preference replaces bgp.localPreference for it (iBGP peers only). An entry for an IP the node does not hold does nothing.",
  },
  {
    path: 'bgp.holdTime',
    type: 'duration',
    // 90 s is the RFC 4271 suggestion and what FRR and BIRD use; BFD is the fast bound.
    default: 90 * SECOND,
    min: 3 * SECOND,
    max: 65535 * SECOND,
    doc: 'BGP hold time offered to the peers (whole seconds, at least 3s); keepalives every third of it. The bound on a dead node without BFD.',
  },
  {
    path: 'bgp.gracefulRestart',
    type: 'duration',
    // Off by default: a node that stops for good should be withdrawn at once. 0 = off.
    default: 0,
    min: 0,
    max: 4095 * SECOND,
    doc: 'Graceful restart (RFC 4724) restart time, whole seconds; 0 (default) is off. When on, every orderly stop of the agent (SIGTERM, SIGINT) is a graceful restart: BIRD closes its sessions without a notification, the routers keep the routes as stale for at most this time (the node keeps its addresses, so traffic flows), and the next agent re-announces and sends End-of-RIB. A crash of the agent (SIGKILL included) still withdraws at once: BIRD gets SIGTERM as its parent-death signal and closes with a Cease notification.',
  },
  {
    path: 'bgp.bfd.interval',
    type: 'duration',
    // MetalLB's FRR default: 3 × 300 ms = 0.9 s detection.
    default: 300,
    min: 10,
    max: MINUTE,
    doc: 'BFD transmit and receive interval towards peers with BFD on; a peer is declared down after bgp.bfd.multiplier intervals without a packet.',
  },
  {
    path: 'bgp.bfd.multiplier',
    type: 'int',
    default: 3,
    min: 1,
    max: 255,
    doc: 'BFD detection multiplier.',
  },
  {
    path: 'bgp.daemon',
    type: 'string',
    default: 'bird',
    doc: 'The BIRD 2 binary (Debian package bird2), looked up in PATH unless a path. It runs under `setpriv --pdeathsig TERM`, so it shuts down (withdrawing its routes) when the agent dies.',
  },
  {
    path: 'bgp.runDir',
    type: 'string',
    default: '/run/fibkeeper/bgp',
    doc: "Directory of the daemon's generated configuration (mode 0600) and control socket; `birdc -s DIR/bird.ctl` reads the daemon's state. One per agent: an agent refuses to start on a directory whose socket another BIRD answers on.",
  },
] as const satisfies readonly OptionSpec[];
