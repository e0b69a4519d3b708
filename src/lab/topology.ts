// The lab: a throwaway topology of network namespaces for the demo and for playing.
//
//   client ──── router ──── server1
//   10.77.1.2   │ r-client 10.77.1.1
//               │ r-server1 10.77.2.1 ── 10.77.2.2
//               └ r-gw 10.77.3.1 ──── gw 10.77.3.2 ──── server2
//                                        10.77.4.1       10.77.4.2
//
// IPv6 mirrors it with fd77:N::/64. The router forwards; fibkeeper runs in it.
import { InvalidArgumentError } from '../errors/index.js';

export interface LabHost {
  /** Role in the topology. */
  role: 'client' | 'router' | 'server1' | 'gw' | 'server2';
  /** Namespace name: `${prefix}-${role}`. */
  netns: string;
}

export interface LabLink {
  a: { role: LabHost['role']; dev: string; v4: string; v6: string; mac: string };
  b: { role: LabHost['role']; dev: string; v4: string; v6: string; mac: string };
}

export interface Lab {
  prefix: string;
  hosts: Record<LabHost['role'], string>;
  links: LabLink[];
  /** Addresses worth knowing. */
  addr: {
    client: string;
    client6: string;
    server1: string;
    server1v6: string;
    server2: string;
    server2v6: string;
    gw: string;
    /** The external IPs the demo assigns on the router. */
    extip: string;
    extip6: string;
  };
  /** Router devices fibkeeper manages. */
  routerDevices: string[];
  /** The router's device towards the client: the external interface for announcements. */
  routerExternal: string;
}

export const PREFIX_RE = /^[a-z][a-z0-9]{0,7}$/;

export function checkPrefix(prefix: string): void {
  if (!PREFIX_RE.test(prefix)) {
    throw new InvalidArgumentError(
      `lab prefix "${prefix}" must be 1-8 lowercase letters or digits, starting with a letter`,
    );
  }
}

const mac = (n: number, m: number) =>
  `02:fb:00:00:${n.toString(16).padStart(2, '0')}:${m.toString(16).padStart(2, '0')}`;

export function describeLab(prefix: string): Lab {
  const hosts = {
    client: `${prefix}-client`,
    router: `${prefix}-router`,
    server1: `${prefix}-server1`,
    gw: `${prefix}-gw`,
    server2: `${prefix}-server2`,
  };
  const link = (
    n: number,
    a: [LabHost['role'], string, number],
    b: [LabHost['role'], string, number],
  ): LabLink => ({
    a: {
      role: a[0],
      dev: a[1],
      v4: `10.77.${n}.${a[2]}/24`,
      v6: `fd77:${n}::${a[2]}/64`,
      mac: mac(n, a[2]),
    },
    b: {
      role: b[0],
      dev: b[1],
      v4: `10.77.${n}.${b[2]}/24`,
      v6: `fd77:${n}::${b[2]}/64`,
      mac: mac(n, b[2]),
    },
  });
  return {
    prefix,
    hosts,
    links: [
      link(1, ['router', 'r-client', 1], ['client', 'eth0', 2]),
      link(2, ['router', 'r-server1', 1], ['server1', 'eth0', 2]),
      link(3, ['router', 'r-gw', 1], ['gw', 'eth0', 2]),
      link(4, ['gw', 'eth1', 1], ['server2', 'eth0', 2]),
    ],
    addr: {
      client: '10.77.1.2',
      client6: 'fd77:1::2',
      server1: '10.77.2.2',
      server1v6: 'fd77:2::2',
      server2: '10.77.4.2',
      server2v6: 'fd77:4::2',
      gw: '10.77.3.2',
      extip: '10.77.1.100',
      extip6: 'fd77:1::100',
    },
    routerDevices: ['r-client', 'r-server1', 'r-gw'],
    routerExternal: 'r-client',
  };
}

/** The `ip -batch` lines that build the lab, per namespace (links are created from side a). */
export function labBatch(lab: Lab): { netns: string; lines: string[] }[] {
  const h = lab.hosts;
  const out = new Map<string, string[]>(Object.values(h).map((ns) => [ns, ['link set lo up']]));
  for (const l of lab.links) {
    const nsA = h[l.a.role];
    const nsB = h[l.b.role];
    out
      .get(nsA)
      ?.push(
        `link add name ${l.a.dev} address ${l.a.mac} type veth peer name ${l.b.dev} address ${l.b.mac} netns ${nsB}`,
        `addr add ${l.a.v4} dev ${l.a.dev}`,
        `addr add ${l.a.v6} dev ${l.a.dev} nodad`,
        `link set ${l.a.dev} up`,
      );
    out
      .get(nsB)
      ?.push(
        `addr add ${l.b.v4} dev ${l.b.dev}`,
        `addr add ${l.b.v6} dev ${l.b.dev} nodad`,
        `link set ${l.b.dev} up`,
      );
  }
  const push = (role: LabHost['role'], ...lines: string[]) => out.get(h[role])?.push(...lines);
  push('client', 'route add default via 10.77.1.1', 'route add default via fd77:1::1');
  push('server1', 'route add default via 10.77.2.1', 'route add default via fd77:2::1');
  push('gw', 'route add default via 10.77.3.1', 'route add default via fd77:3::1');
  push('server2', 'route add default via 10.77.4.1', 'route add default via fd77:4::1');
  push('router', 'route add 10.77.4.0/24 via 10.77.3.2', 'route add fd77:4::/64 via fd77:3::2');
  return [...out].map(([netns, lines]) => ({ netns, lines }));
}

/** Sysctls per namespace, set before the links exist: forwarding on the router and the gateway. */
export function labSysctls(lab: Lab): { netns: string; key: string; value: string }[] {
  const fwd = (netns: string) => [
    { netns, key: 'net.ipv4.ip_forward', value: '1' },
    { netns, key: 'net.ipv6.conf.all.forwarding', value: '1' },
  ];
  // No duplicate address detection in the lab: addresses are usable at once.
  const noDad = Object.values(lab.hosts).flatMap((netns) => [
    { netns, key: 'net.ipv6.conf.all.accept_dad', value: '0' },
    { netns, key: 'net.ipv6.conf.default.accept_dad', value: '0' },
  ]);
  return [...noDad, ...fwd(lab.hosts.router), ...fwd(lab.hosts.gw)];
}
