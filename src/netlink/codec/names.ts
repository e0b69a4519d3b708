// Flag and enum numbers as the names `ip` prints, for logs, `fibkeeper status` and tests.
import * as C from './constants.js';

function bitNames(value: number, table: readonly (readonly [number, string])[]): string[] {
  const out: string[] = [];
  for (const [bit, name] of table) if (value & bit) out.push(name);
  return out;
}

const IFF_NAMES: readonly (readonly [number, string])[] = [
  [C.IFF_LOOPBACK, 'LOOPBACK'],
  [C.IFF_BROADCAST, 'BROADCAST'],
  [C.IFF_POINTOPOINT, 'POINTOPOINT'],
  [C.IFF_MULTICAST, 'MULTICAST'],
  [C.IFF_NOARP, 'NOARP'],
  [C.IFF_ALLMULTI, 'ALLMULTI'],
  [C.IFF_PROMISC, 'PROMISC'],
  [C.IFF_MASTER, 'MASTER'],
  [C.IFF_SLAVE, 'SLAVE'],
  [C.IFF_DEBUG, 'DEBUG'],
  [C.IFF_DYNAMIC, 'DYNAMIC'],
  [C.IFF_AUTOMEDIA, 'AUTOMEDIA'],
  [C.IFF_PORTSEL, 'PORTSEL'],
  [C.IFF_NOTRAILERS, 'NOTRAILERS'],
  [C.IFF_UP, 'UP'],
  [C.IFF_LOWER_UP, 'LOWER_UP'],
  [C.IFF_DORMANT, 'DORMANT'],
  [C.IFF_ECHO, 'ECHO'],
];

/** IFF_* bits as `ip link` names them ("UP", "LOWER_UP", ...); NO-CARRIER when up without carrier. */
export function linkFlagNames(flags: number): string[] {
  const names = bitNames(flags, IFF_NAMES);
  if (flags & C.IFF_UP && !(flags & C.IFF_RUNNING)) names.unshift('NO-CARRIER');
  return names;
}

const OPERSTATES = ['UNKNOWN', 'NOTPRESENT', 'DOWN', 'LOWERLAYERDOWN', 'TESTING', 'DORMANT', 'UP'];

/** IF_OPER_* as `ip link` prints it. */
export function operstateName(state: number): string {
  return OPERSTATES[state] ?? String(state);
}

const NUD_NAMES: readonly (readonly [number, string])[] = [
  [C.NUD_INCOMPLETE, 'INCOMPLETE'],
  [C.NUD_REACHABLE, 'REACHABLE'],
  [C.NUD_STALE, 'STALE'],
  [C.NUD_DELAY, 'DELAY'],
  [C.NUD_PROBE, 'PROBE'],
  [C.NUD_FAILED, 'FAILED'],
  [C.NUD_NOARP, 'NOARP'],
  [C.NUD_PERMANENT, 'PERMANENT'],
];

/** NUD_* bits as `ip neigh` names them; ["NONE"] for 0. */
export function nudStateNames(state: number): string[] {
  return state === 0 ? ['NONE'] : bitNames(state, NUD_NAMES);
}

/** NTF_* and NDA_FLAGS_EXT bits as `ip neigh` prints them ("extern_learn", "managed", "router", ...). */
export function neighFlagNames(flags: number, flagsExt = 0): string[] {
  const out = bitNames(flags, [
    [C.NTF_PROXY, 'proxy'],
    [C.NTF_ROUTER, 'router'],
    [C.NTF_EXT_LEARNED, 'extern_learn'],
    [C.NTF_OFFLOADED, 'offload'],
    [C.NTF_STICKY, 'sticky'],
  ]);
  if (flagsExt & C.NTF_EXT_MANAGED) out.unshift('managed');
  return out;
}

const RTPROT: Record<number, string> = {
  [C.RTPROT_UNSPEC]: 'unspec',
  [C.RTPROT_REDIRECT]: 'redirect',
  [C.RTPROT_KERNEL]: 'kernel',
  [C.RTPROT_BOOT]: 'boot',
  [C.RTPROT_STATIC]: 'static',
  8: 'gated',
  [C.RTPROT_RA]: 'ra',
  10: 'mrt',
  [C.RTPROT_ZEBRA]: 'zebra',
  [C.RTPROT_BIRD]: 'bird',
  13: 'dnrouted',
  14: 'xorp',
  15: 'ntk',
  [C.RTPROT_DHCP]: 'dhcp',
  [C.RTPROT_KEEPALIVED]: 'keepalived',
  [C.RTPROT_BABEL]: 'babel',
  99: 'openr',
  [C.RTPROT_BGP]: 'bgp',
  [C.RTPROT_ISIS]: 'isis',
  [C.RTPROT_OSPF]: 'ospf',
  [C.RTPROT_RIP]: 'rip',
  192: 'eigrp',
};

/** RTPROT_* as `ip` prints it (the number as text when it has no name). */
export function protocolName(p: number): string {
  return RTPROT[p] ?? String(p);
}

const RTN = [
  'unspec',
  'unicast',
  'local',
  'broadcast',
  'anycast',
  'multicast',
  'blackhole',
  'unreachable',
  'prohibit',
  'throw',
  'nat',
  'xresolve',
];

/** RTN_* as `ip route` prints it. */
export function routeTypeName(t: number): string {
  return RTN[t] ?? String(t);
}

/** RT_SCOPE_* as `ip` prints it. */
export function scopeName(s: number): string {
  switch (s) {
    case C.RT_SCOPE_UNIVERSE:
      return 'global';
    case C.RT_SCOPE_SITE:
      return 'site';
    case C.RT_SCOPE_LINK:
      return 'link';
    case C.RT_SCOPE_HOST:
      return 'host';
    case C.RT_SCOPE_NOWHERE:
      return 'nowhere';
  }
  return String(s);
}

/** A routing table as `ip route` prints it ("main", "local", "default" or the number). */
export function tableName(t: number): string {
  switch (t) {
    case C.RT_TABLE_MAIN:
      return 'main';
    case C.RT_TABLE_LOCAL:
      return 'local';
    case C.RT_TABLE_DEFAULT:
      return 'default';
  }
  return String(t);
}

const FR_ACT: Record<number, string> = {
  [C.FR_ACT_UNSPEC]: 'unspec',
  [C.FR_ACT_TO_TBL]: 'to_tbl',
  [C.FR_ACT_GOTO]: 'goto',
  [C.FR_ACT_NOP]: 'nop',
  [C.FR_ACT_BLACKHOLE]: 'blackhole',
  [C.FR_ACT_UNREACHABLE]: 'unreachable',
  [C.FR_ACT_PROHIBIT]: 'prohibit',
};

/** FR_ACT_* as `ip -j rule` names it in "action" (a lookup rule has "table" instead). */
export function ruleActionName(a: number): string {
  return FR_ACT[a] ?? String(a);
}
