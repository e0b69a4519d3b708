// `fibkeeper status IP`: one IP explained — who wants it forwardable, whether it is an
// external IP here, the kernel's route for it (`ip route get IP fibmatch`), XDP on the device
// that route leaves through, and its NO_NEIGH hits in the miss map. The next hops per device
// and their kernel entries are the neighbor section's row for it (filtered to the IP).
import { describeError } from '../errors/index.js';
import type { MissRow } from './misses.js';
import type { AgentView } from './view.js';

/** The kernel's route for an IP, as `ip route get IP fibmatch` shows it. */
export interface RouteExplanation {
  /** "10.77.2.0/24 via 10.77.1.2 dev eth1 table 254" */
  text: string;
  type: string;
  prefix: string;
  table: number;
  /** Each leg (one for a plain route): the device and the gateway, if any. */
  nexthops: { device: string; gateway: string | null }[];
}

export interface IpExplanation {
  ip: string;
  /** Owners that want it forwardable ([]: not forwardable). */
  owners: string[];
  /** As an external IP of this node: its state, or null. */
  external: { state: string; cluster: boolean; lastError: string | null } | null;
  /** The kernel's route; null when the lookup failed (routeError says why). */
  route: RouteExplanation | null;
  routeError: string | null;
  /** XDP on each device the route leaves through. */
  xdp: { device: string; attached: string; mode: string | null; progId: number | null }[];
  /** fk_miss entries for it, as destination or as next hop. */
  misses: MissRow[];
}

const ROUTE_TYPES: Record<number, string> = {
  1: 'unicast',
  2: 'local',
  3: 'broadcast',
  4: 'anycast',
  5: 'multicast',
  6: 'blackhole',
  7: 'unreachable',
  8: 'prohibit',
  9: 'throw',
};

async function routeOf(
  agent: AgentView,
  ip: string,
): Promise<{ route: RouteExplanation | null; routeError: string | null }> {
  const nl = agent.netlink;
  if (nl === undefined) return { route: null, routeError: 'the agent has no netlink handle yet' };
  const name = (ifindex: number | undefined) =>
    ifindex === undefined ? '?' : (agent.devices?.link(ifindex)?.name ?? `if${ifindex}`);
  try {
    const r = await nl.routeGet(ip, { fibmatch: true });
    const type = ROUTE_TYPES[r.type] ?? `type ${r.type}`;
    const prefix = `${r.dst ?? (ip.includes(':') ? '::' : '0.0.0.0')}/${r.dstLen}`;
    const legs = r.multipath?.length
      ? r.multipath.map((n) => ({ device: name(n.ifindex), gateway: n.gateway ?? null }))
      : r.oif !== undefined
        ? [{ device: name(r.oif), gateway: r.gateway ?? null }]
        : [];
    const via = legs
      .map((l) => `${l.gateway ? `via ${l.gateway} ` : ''}dev ${l.device}`)
      .join(', nexthop ');
    const text = `${type === 'unicast' ? '' : `${type} `}${prefix}${via ? ` ${via}` : ''} table ${r.table}`;
    return { route: { text, type, prefix, table: r.table, nexthops: legs }, routeError: null };
  } catch (err) {
    return { route: null, routeError: describeError(err) };
  }
}

export async function explainIp(agent: AgentView, ip: string): Promise<IpExplanation> {
  const ext = agent.extip?.list().find((e) => e.ip === ip);
  const { route, routeError } = await routeOf(agent, ip);
  const devices = route?.nexthops.map((n) => n.device) ?? [];
  const xdp = (agent.xdp?.status() ?? [])
    .filter((d) => devices.includes(d.name))
    .map((d) => ({
      device: d.name,
      attached: d.attached,
      mode: d.mode ?? null,
      progId: d.progId ?? null,
    }));
  const misses =
    agent.xdp === undefined
      ? []
      : agent.misses
          .top(4096, agent.xdp.readMisses(), (i) => agent.devices?.link(i)?.name ?? `if${i}`)
          .filter((m) => m.dst === ip || m.nexthop === ip);
  return {
    ip,
    owners: [...(agent.neighbor?.owners(ip) ?? [])],
    external:
      ext === undefined
        ? null
        : {
            state: ext.state,
            cluster: agent.cluster?.clusterIps().has(ip) === true,
            lastError: ext.lastError ?? null,
          },
    route,
    routeError,
    xdp,
    misses,
  };
}
