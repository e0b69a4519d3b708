// Which devices? The one answer (the `devices` option's doc in src/config/schema.ts says the
// same). A link is a candidate of every subsystem when
//   - it is not fibkeeper's external-IP holder device,
//   - its name matches the `devices` option (names or globs: `*` any run, `?` one character),
//   - it is not loopback,
//   - it has a non-zero hardware address,
//   - it is not the port of a bridge, bond or team (the kernel bridges or bonds its frames and
//     routes on the master; a VRF port routes itself and stays a candidate),
//   - it is up.
// Each subsystem adds what its own job needs, beside the common part here:
//   - neighbor entries (neighborVerdict): carrier (an entry written on a device without
//     carrier fails), ARP/ND (not NOARP: the kernel resolves nothing there);
//   - XDP (xdpVerdict): an Ethernet device (the program rewrites Ethernet headers), not the
//     port of any master, VRF included (its routes are in another table than the program's
//     lookup), and stacked devices (skipStackedUppers): the lower device is preferred, an
//     upper device (macvlan, vlan, ...) whose lower device is selected gets no program.
// Pure: the subsystems call it on the device feed's links.
import { ARPHRD_ETHER, IFF_LOOPBACK, IFF_LOWER_UP, IFF_NOARP, IFF_UP } from './codec/index.js';
import type { Link } from './codec/index.js';

/** The `devices` option and the holder device's name (never selected). */
export interface DeviceSelection {
  /** Device names or globs (`*` and `?`). */
  devices: readonly string[];
  /** fibkeeper's external-IP holder device. */
  holderName: string;
}

/** The common verdict on one link. */
export interface DeviceVerdictBase {
  ifindex: number;
  name: string;
  /** The hardware address, undefined when it has none (or an all-zero one). */
  mac: string | undefined;
  selected: boolean;
  /** Why not, when not selected. */
  reason: string | undefined;
}

/** The reason a device that is only down (for now) is not selected. */
export const DOWN = 'down';

/** Shell-style glob match: `*` any run, `?` one character; everything else literal. */
export function matchGlob(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let mark = 0;
  while (n < name.length) {
    const c = pattern[p];
    if (c === '?' || (c !== undefined && c !== '*' && c === name[n])) {
      p++;
      n++;
    } else if (c === '*') {
      star = p++;
      mark = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

/** A link-layer address as the codec gives it, undefined or all zero: none. */
export function zeroLinkAddress(mac: string | undefined): boolean {
  return mac === undefined || /^[0:]*$/.test(mac);
}

/** The name a link is known by (its ifindex when it has none). */
export const linkName = (link: Link): string => link.name ?? `if${link.index}`;

/** The common part (see the header), pure. */
export function deviceVerdict(link: Link, sel: DeviceSelection): DeviceVerdictBase {
  const name = linkName(link);
  const mac = zeroLinkAddress(link.address) ? undefined : link.address;
  const f = link.flags;
  let reason: string | undefined;
  if (name === sel.holderName) reason = 'fibkeeper holder device';
  else if (!sel.devices.some((g) => matchGlob(g, name))) reason = 'not in the devices option';
  else if (f & IFF_LOOPBACK) reason = 'loopback';
  else if (mac === undefined) reason = 'no hardware address';
  else if (link.master && link.info?.slaveKind !== 'vrf') {
    const kind = link.info?.slaveKind ?? 'bridge, bond or team';
    reason = `port of ifindex ${link.master} (${kind}: the kernel does not route its frames itself)`;
  } else if (!(f & IFF_UP)) reason = DOWN;
  return { ifindex: link.index, name, mac, selected: reason === undefined, reason };
}

function refuse<V extends DeviceVerdictBase>(v: V, reason: string): V {
  return { ...v, selected: false, reason };
}

/** Neighbor entries: the common verdict, then carrier and ARP/ND. */
export function neighborVerdict(link: Link, sel: DeviceSelection): DeviceVerdictBase {
  const v = deviceVerdict(link, sel);
  if (!v.selected) return v;
  if (!(link.flags & IFF_LOWER_UP)) return refuse(v, 'no carrier');
  if (link.flags & IFF_NOARP) return refuse(v, 'NOARP');
  return v;
}

/** XDP: the common verdict, then Ethernet and no master at all (VRF included). */
export function xdpVerdict(link: Link, sel: DeviceSelection): DeviceVerdictBase {
  const v = deviceVerdict(link, sel);
  if (v.reason === DOWN || v.selected) {
    if (link.type !== ARPHRD_ETHER) return refuse(v, 'not an Ethernet device');
    if (link.master) {
      return refuse(v, `port of ifindex ${link.master} (vrf: its routes are in another table)`);
    }
  }
  return v;
}

/**
 * Kinds of device stacked on a lower device in the kernel's sense (netdev_upper_dev_link) and
 * naming it in IFLA_LINK: while such an upper device has an XDP program, the kernel refuses one
 * on its lower device (EEXIST, "upper device already has a program").
 */
export const UPPER_KINDS: ReadonlySet<string> = new Set([
  'macvlan',
  'macvtap',
  'ipvlan',
  'ipvtap',
  'vlan',
  'macsec',
]);

/** The lower device of `l` in this namespace, when `l` is an upper device of one. */
export function lowerOf(l: Link): number | undefined {
  const kind = l.info?.kind;
  if (kind === undefined || !UPPER_KINDS.has(kind)) return undefined;
  if (l.linkNetnsId !== undefined || l.link === undefined || l.link === l.index) return undefined;
  return l.link;
}

/**
 * XDP prefers the lower device: an upper device (macvlan, ipvlan, vlan, ...) whose lower device
 * is selected too gets no program, since the kernel would then refuse the lower's (and a
 * physical NIC's native XDP sees the upper's frames first anyway). Such verdicts are returned
 * not selected with `skipped` saying why (through `skip`); the others as they are.
 */
export function skipStackedUppers<V extends DeviceVerdictBase>(
  verdicts: readonly V[],
  links: readonly Link[],
  skip: (v: V, why: string) => V,
): V[] {
  const byIfindex = new Map(verdicts.map((v) => [v.ifindex, v]));
  const linkOf = new Map(links.map((l) => [l.index, l]));
  return verdicts.map((v) => {
    const l = linkOf.get(v.ifindex);
    const lower = l === undefined ? undefined : byIfindex.get(lowerOf(l) ?? 0);
    if (!v.selected || lower === undefined || !lower.selected) return v;
    return skip(
      v,
      `upper device of ${lower.name} (${l?.info?.kind}): ${lower.name} is selected and gets the program (the kernel refuses one on a device while an upper device of it has one)`,
    );
  });
}
