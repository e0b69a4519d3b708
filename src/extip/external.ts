// The external interface: the device the announcements go out of, configured by name or
// found as the device that carries the node's transport IP; its MAC, and the sysctls that
// decide what the kernel answers on it by itself and how it flags neighbor advertisements.
import { readFileSync } from 'node:fs';
import {
  ConfigError,
  FibkeeperError,
  NotFoundError,
  NotSupportedError,
  errnoCode,
} from '../errors/index.js';
import { parseIp, parseMac } from '../ipaddr/index.js';
import { runInNetns } from '../native/index.js';
import {
  ARPHRD_ETHER,
  IFF_LOWER_UP,
  IFF_UP,
  type DeviceFeed,
  type Link,
  type NetlinkHandle,
} from '../netlink/index.js';

export interface ExternalLink {
  ifindex: number;
  name: string;
  /** "aa:bb:cc:dd:ee:ff" */
  mac: string;
  macBytes: Buffer;
  /** Administratively up and with a carrier: frames can leave. */
  up: boolean;
}

/** Up and with a carrier (IFF_UP and IFF_LOWER_UP). */
export function linkIsUp(flags: number): boolean {
  return (flags & IFF_UP) !== 0 && (flags & IFF_LOWER_UP) !== 0;
}

/** The ExternalLink of a link message; throws NotSupportedError for a non-Ethernet device. */
export function externalFromLink(link: Link): ExternalLink {
  const name = link.name ?? `ifindex ${link.index}`;
  if (link.type !== ARPHRD_ETHER || link.address === undefined) {
    throw new NotSupportedError(
      'extip-external-ethernet',
      `external interface ${name} is not an Ethernet device (link type ${link.type}); gratuitous ARP and neighbor advertisements need one: set extip.interface`,
    );
  }
  return {
    ifindex: link.index,
    name,
    mac: link.address,
    macBytes: parseMac(link.address),
    up: linkIsUp(link.flags),
  };
}

/** Where findExternal looks a device up: the device feed's snapshot, or the kernel itself. */
export interface ExternalLookup {
  /** The link named `name`, undefined when there is none. */
  byName(name: string): Promise<Link | undefined>;
  /** The link that carries `ip` (canonical), undefined when none does. */
  byAddress(ip: string): Promise<Link | undefined>;
}

/** The links and addresses of the namespace as the device feed holds them. */
export type DeviceView = Pick<DeviceFeed, 'links' | 'link' | 'linkByName' | 'addresses'>;

/** Looks up in the device feed's snapshot (the running subsystem: no dump of its own). */
export function feedLookup(devices: DeviceView): ExternalLookup {
  return {
    byName: (name) => Promise.resolve(devices.linkByName(name)),
    byAddress: (ip) => {
      const a = devices.addresses().find((x) => (x.local ?? x.address) === ip);
      return Promise.resolve(a && devices.link(a.index));
    },
  };
}

/** Asks the kernel (a one-shot command that has no device feed: the CLI, config check). */
export function kernelLookup(nl: NetlinkHandle): ExternalLookup {
  return {
    byName: async (name) => {
      try {
        return await nl.linkGet(name);
      } catch (err) {
        if (errnoCode(err) === 'ENODEV') return undefined;
        throw err;
      }
    },
    byAddress: async (ip) => {
      const addr = (await nl.addrList()).find((a) => (a.local ?? a.address) === ip);
      return addr && nl.linkGet(addr.index);
    },
  };
}

/**
 * Finds the external interface: `iface` by name, or else the device that carries `nodeIP`
 * (IPv4 or IPv6). Errors name the option to fix. `from`: a handle (asks the kernel) or a
 * lookup (feedLookup: the device feed's snapshot).
 */
export async function findExternal(
  from: NetlinkHandle | ExternalLookup,
  iface: string,
  nodeIP: string,
  holderName: string,
): Promise<ExternalLink> {
  const look = 'byName' in from ? from : kernelLookup(from);
  let link: Link | undefined;
  if (iface !== '') {
    link = await look.byName(iface);
    if (link === undefined) {
      throw new NotFoundError(`extip.interface: there is no device named ${iface}`);
    }
  } else if (nodeIP !== '') {
    link = await byAddress(look, nodeIP);
  } else {
    throw new ConfigError(
      'extip.interface',
      'the external interface is unknown: set extip.interface, or extip.nodeIP to the node IP it carries',
    );
  }
  if (link.name === holderName) {
    throw new ConfigError(
      iface !== '' ? 'extip.interface' : 'extip.nodeIP',
      `the external interface cannot be the holder device ${holderName}`,
    );
  }
  return externalFromLink(link);
}

async function byAddress(look: ExternalLookup, nodeIP: string): Promise<Link> {
  let ip: string;
  try {
    ip = parseIp(nodeIP).address;
  } catch (err) {
    throw new ConfigError('extip.nodeIP', (err as Error).message, { cause: err });
  }
  const link = await look.byAddress(ip);
  if (link === undefined) {
    throw new NotFoundError(
      `extip.nodeIP: no device of this node carries ${ip}; set extip.nodeIP to an address of the node or set extip.interface`,
    );
  }
  return link;
}

/** Reads /proc/sys/net/<path> in `netns` (or the caller's namespace); undefined if absent. */
export function readNetSysctl(netns: string | undefined, path: string): string | undefined {
  const read = (): string | undefined => {
    try {
      return readFileSync(`/proc/sys/net/${path}`, 'utf8').trim();
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw new FibkeeperError(`read sysctl net.${path.replaceAll('/', '.')}`, { cause: err });
    }
  };
  return netns === undefined ? read() : runInNetns(netns, read);
}

/** What the kernel does for us on the external interface. */
export interface ExternalSysctls {
  /** max(all, iface) arp_ignore: > 0 means no ARP replies for addresses on other devices. */
  arpIgnore: number;
  /** IPv6 is enabled on the interface. */
  ipv6: boolean;
  /** The interface forwards IPv6: the kernel sets the router flag in its NAs. */
  forwarding: boolean;
  /** force_tllao: the kernel puts the target link-layer option in every NA. */
  forceTllao: boolean;
}

export function readExternalSysctls(netns: string | undefined, name: string): ExternalSysctls {
  const read = (): ExternalSysctls => {
    const num = (p: string): number => Number(readNetSysctl(undefined, p) ?? '0') || 0;
    const arpIgnore = Math.max(
      num('ipv4/conf/all/arp_ignore'),
      num(`ipv4/conf/${name}/arp_ignore`),
    );
    const dis = readNetSysctl(undefined, `ipv6/conf/${name}/disable_ipv6`);
    return {
      arpIgnore,
      ipv6: dis !== undefined && dis !== '1',
      forwarding: num(`ipv6/conf/${name}/forwarding`) > 0,
      forceTllao: num(`ipv6/conf/${name}/force_tllao`) > 0,
    };
  };
  // one switch into the namespace for all of them
  return netns === undefined ? read() : runInNetns(netns, read);
}
