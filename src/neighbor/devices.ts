// The Device table, from link and address events (or dumps): which links are managed, and
// the node's own addresses. Which devices: the one device verdict with the neighbor
// subsystem's extras (netlink/verdict.ts neighborVerdict: the common part, then carrier and
// not NOARP).
import {
  AF_UNSPEC,
  IFF_LOWER_UP,
  IFF_UP,
  neighborVerdict,
  type Address,
  type DeviceSelection,
  type Link,
} from '../netlink/index.js';
import { Table } from '../statedb/index.js';
import type { Device } from './types.js';

export type { DeviceSelection };

/** What the rest of the subsystem hears from the device tracker. */
export interface DeviceListener {
  /** The set of selected devices changed: next hops on `added` must be computed. */
  selectionChanged(added: readonly number[], removed: readonly number[]): void;
  /** An address appeared on (present) or left (absent) the node. */
  nodeAddressChanged(ip: string, present: boolean): void;
  /**
   * A link went down or away, or an address went away: the kernel may have removed IPv4
   * routes without telling anyone, so the route table should be dumped again.
   */
  routesMayHaveChanged(): void;
}

/** The verdict on one link (pure): netlink's neighborVerdict, as a row of the table. */
export function evaluateDevice(link: Link, sel: DeviceSelection): Device {
  const v = neighborVerdict(link, sel);
  return {
    ifindex: link.index,
    name: v.name,
    mac: v.mac,
    flags: link.flags,
    type: link.type,
    kind: link.info?.kind,
    selected: v.selected,
    reason: v.reason,
  };
}

function sameDevice(a: Device, b: Device): boolean {
  return (
    a.name === b.name &&
    a.mac === b.mac &&
    a.flags === b.flags &&
    a.type === b.type &&
    a.kind === b.kind &&
    a.selected === b.selected &&
    a.reason === b.reason
  );
}

/** The address an ifaddrmsg is about: IFA_LOCAL (IPv4; the peer is IFA_ADDRESS) or IFA_ADDRESS. */
function addressOf(a: Address): string | undefined {
  return a.local ?? a.address;
}

export class DeviceTracker {
  readonly table: Table<Device>;
  readonly #sel: DeviceSelection;
  #listener: DeviceListener | undefined = undefined;
  /** Node address → the devices that carry it. */
  readonly #addrs = new Map<string, Set<number>>();
  #nodeAddrCache: Map<string, string> | undefined = undefined;

  constructor(sel: DeviceSelection, now?: () => number) {
    this.#sel = sel;
    this.table = new Table<Device>({
      name: 'devices',
      primaryKey: (d) => String(d.ifindex),
      indexes: { name: (d) => d.name },
      equals: sameDevice,
      now,
    });
  }

  setListener(l: DeviceListener | undefined): void {
    this.#listener = l;
  }

  isSelected(ifindex: number): boolean {
    return this.table.get(String(ifindex))?.selected === true;
  }

  selected(): Device[] {
    return this.table.list().filter((d) => d.selected);
  }

  nameOf(ifindex: number): string | undefined {
    return this.table.get(String(ifindex))?.name;
  }

  isNodeAddress(ip: string): boolean {
    return this.#addrs.has(ip);
  }

  /** Node address → name of a device that carries it (for error messages). */
  nodeAddresses(): ReadonlyMap<string, string> {
    if (this.#nodeAddrCache !== undefined) return this.#nodeAddrCache;
    const m = new Map<string, string>();
    for (const [ip, devs] of this.#addrs) {
      const first = devs.values().next().value;
      m.set(ip, first === undefined ? '' : (this.nameOf(first) ?? ''));
    }
    this.#nodeAddrCache = m;
    return m;
  }

  /** A link event (or one entry of a dump). */
  applyLink(kind: 'new' | 'del', link: Link): void {
    if (link.family !== AF_UNSPEC) return; // bridge port events (AF_BRIDGE) are not links
    const before = this.table.get(String(link.index));
    if (kind === 'del') {
      if (before === undefined) return;
      this.table.delete(String(link.index));
      this.#dropAddressesOf(link.index);
      if (before.selected) this.#listener?.selectionChanged([], [link.index]);
      this.#listener?.routesMayHaveChanged();
      return;
    }
    const dev = evaluateDevice(link, this.#sel);
    if (!this.table.upsert(dev)) return;
    this.#nodeAddrCache = undefined;
    const was = before?.selected === true;
    if (dev.selected !== was) {
      this.#listener?.selectionChanged(dev.selected ? [dev.ifindex] : [], was ? [dev.ifindex] : []);
    }
    const lost = (flag: number): boolean =>
      before !== undefined && (before.flags & flag) !== 0 && (dev.flags & flag) === 0;
    if (lost(IFF_UP) || lost(IFF_LOWER_UP)) this.#listener?.routesMayHaveChanged();
  }

  /** An address event (or one entry of a dump). */
  applyAddress(kind: 'new' | 'del', a: Address): void {
    const ip = addressOf(a);
    if (ip === undefined) return;
    let devs = this.#addrs.get(ip);
    if (kind === 'new') {
      if (devs?.has(a.index)) return;
      if (devs === undefined) {
        devs = new Set();
        this.#addrs.set(ip, devs);
        devs.add(a.index);
        this.#nodeAddrCache = undefined;
        this.#listener?.nodeAddressChanged(ip, true);
        return;
      }
      devs.add(a.index);
      this.#nodeAddrCache = undefined;
      return;
    }
    if (devs === undefined || !devs.delete(a.index)) return;
    this.#nodeAddrCache = undefined;
    if (devs.size === 0) {
      this.#addrs.delete(ip);
      this.#listener?.nodeAddressChanged(ip, false);
    }
    this.#listener?.routesMayHaveChanged();
  }

  /**
   * Replaces everything with a dump (at start and after an overflow): the differences are
   * applied as events would be, so listeners hear only what changed.
   */
  load(links: readonly Link[], addresses: readonly Address[]): void {
    const seen = new Set<number>();
    for (const l of links) {
      if (l.family !== AF_UNSPEC) continue;
      seen.add(l.index);
      this.applyLink('new', l);
    }
    for (const d of this.table.list()) {
      if (!seen.has(d.ifindex)) this.applyLink('del', { ...linkStub(d.ifindex) });
    }
    const want = new Map<string, Set<number>>();
    for (const a of addresses) {
      const ip = addressOf(a);
      if (ip === undefined) continue;
      let s = want.get(ip);
      if (s === undefined) want.set(ip, (s = new Set()));
      s.add(a.index);
    }
    for (const [ip, devs] of [...this.#addrs]) {
      for (const i of [...devs]) {
        if (!want.get(ip)?.has(i)) this.applyAddress('del', addrStub(ip, i));
      }
    }
    for (const [ip, devs] of want) for (const i of devs) this.applyAddress('new', addrStub(ip, i));
  }

  #dropAddressesOf(ifindex: number): void {
    for (const [ip, devs] of [...this.#addrs]) {
      if (devs.has(ifindex)) this.applyAddress('del', addrStub(ip, ifindex));
    }
  }
}

function linkStub(index: number): Link {
  return { family: AF_UNSPEC, type: 0, index, flags: 0, change: 0 };
}

function addrStub(ip: string, index: number): Address {
  return {
    family: ip.includes(':') ? 10 : 2,
    prefixlen: 0,
    flags: 0,
    scope: 0,
    index,
    address: ip,
  };
}
