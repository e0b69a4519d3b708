// The holder device: created if absent, adopted if present (never recreated needlessly),
// set up; and the address calls of the assigner on it. The device is fibkeeper's own, so
// every address on it is an external IP; a device of the same name that fibkeeper could not
// own (a veth, a bridge with ports) is refused.
import { ConflictError, FibkeeperError, NotSupportedError, errnoCode } from '../errors/index.js';
import { classifyIp, parseIp, type ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import { IFF_UP, type Address, type Link, type NetlinkHandle } from '../netlink/index.js';
import type { DeviceView } from './external.js';
import { HOLDER_KINDS, type HolderKind } from './options.js';
import type { HolderOps, ObservedAddress } from './types.js';

export interface HolderParams {
  /** Writes: link add/set up, address add/del (reads go to `devices`). */
  nl: NetlinkHandle;
  /** The namespace's links and addresses (the device feed: no dump of its own). */
  devices: DeviceView;
  name: string;
  kind: HolderKind;
  /** IPv6 addresses are added with `nodad`. */
  nodad: boolean;
  log: Logger;
  /** Called when a call finds the device gone (ENODEV): the owner recreates it. */
  onMissing: () => void;
}

/** The address as the assigner sees it, or undefined for what is not an external IP (fe80::). */
export function observe(a: Address): ObservedAddress | undefined {
  const text = a.local ?? a.address;
  if (text === undefined) return undefined;
  const ip = parseIp(text, { allowMapped: true });
  if (classifyIp(ip.bytes) !== 'unicast') return undefined;
  return { ip, prefixlen: a.prefixlen, flags: a.flags };
}

function otherKinds(kind: HolderKind): string {
  return HOLDER_KINDS.filter((k) => k !== kind)
    .map((k) => (k === 'bridge' ? '"bridge" (a bridge with no ports)' : `"${k}"`))
    .join(' or ');
}

export class Holder implements HolderOps {
  readonly #p: HolderParams;
  #ifindex = 0;
  /** Resolves while the device exists; replaced by a pending one while it is recreated. */
  #ready: Promise<void> = Promise.resolve();
  #markReady: (() => void) | undefined;

  constructor(p: HolderParams) {
    this.#p = p;
  }

  get name(): string {
    return this.#p.name;
  }

  /** The holder's ifindex (0 while it does not exist). */
  get ifindex(): number {
    return this.#ifindex;
  }

  /**
   * Makes sure the device exists and is up: adopts one of that name, or creates it. Returns
   * whether it was created. Throws NotSupportedError (no such link type: names the option
   * to change) or ConflictError (a device of that name that fibkeeper cannot own).
   */
  async ensure(): Promise<{ ifindex: number; created: boolean }> {
    let link = await this.#get();
    let created = false;
    if (link === undefined) {
      created = await this.#create();
      link = await this.#get();
      if (link === undefined) {
        throw new FibkeeperError(`holder device ${this.#p.name} vanished right after creation`);
      }
    }
    await this.#checkOwnable(link);
    if ((link.flags & IFF_UP) === 0) await this.#p.nl.linkSetUp(link.index);
    this.#ifindex = link.index;
    this.#markReady?.();
    this.#markReady = undefined;
    this.#ready = Promise.resolve();
    return { ifindex: link.index, created };
  }

  /** The device is gone: address calls wait until ensure() has brought it back. */
  markGone(): void {
    this.#ifindex = 0;
    if (this.#markReady !== undefined) return;
    this.#ready = new Promise<void>((resolve) => {
      this.#markReady = resolve;
    });
  }

  async #get(): Promise<Link | undefined> {
    try {
      return await this.#p.nl.linkGet(this.#p.name);
    } catch (err) {
      if (errnoCode(err) === 'ENODEV') return undefined;
      throw new FibkeeperError(`holder device ${this.#p.name}: look-up failed`, { cause: err });
    }
  }

  async #create(): Promise<boolean> {
    const { name, kind } = this.#p;
    try {
      await this.#p.nl.linkAdd({ name, kind, up: true });
      this.#p.log.info({ holder: name, kind }, 'extip: created the holder device');
      return true;
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EEXIST') return false; // created by someone else meanwhile: adopt it
      if (code === 'EOPNOTSUPP') {
        throw new NotSupportedError(
          `link-kind-${kind}`,
          `cannot create the holder device ${name}: this kernel has no "${kind}" link type ` +
            `(not built, or its module cannot be loaded); set extip.holderKind to ${otherKinds(kind)}`,
          { cause: err },
        );
      }
      throw new FibkeeperError(`cannot create the holder device ${name} (type ${kind})`, {
        cause: err,
      });
    }
  }

  async #checkOwnable(link: Link): Promise<void> {
    const { name, kind, log } = this.#p;
    const actual = link.info?.kind;
    if (actual === undefined || !(HOLDER_KINDS as readonly string[]).includes(actual)) {
      throw new ConflictError(
        `a device named ${name} exists and is of type ${actual ?? 'unknown'}, not one fibkeeper ` +
          `can hold addresses on (${HOLDER_KINDS.join(', ')}); delete it or set extip.holderName`,
      );
    }
    if (actual === 'bridge') {
      const ports = this.#p.devices.links().filter((l) => l.master === link.index);
      if (ports.length > 0) {
        throw new ConflictError(
          `the bridge ${name} has ports (${ports.map((p) => p.name).join(', ')}); the holder ` +
            `must be fibkeeper's own device: set extip.holderName to another name`,
        );
      }
    }
    if (actual !== kind) {
      log.warn(
        { holder: name, kind: actual, configured: kind },
        'extip: adopted a holder of another type',
      );
    }
  }

  /** addrAdd — like `ip addr add IP/32|128 dev HOLDER [nodad] noprefixroute`. */
  async add(ip: ParsedIp): Promise<'added' | 'exists'> {
    for (let attempt = 1; ; attempt++) {
      while (this.#ifindex === 0) await this.#ready;
      try {
        await this.#p.nl.addrAdd({
          ifindex: this.#ifindex,
          address: ip, // parsed once, at the edge: netlink copies its bytes
          prefixlen: ip.family === 4 ? 32 : 128,
          nodad: ip.family === 6 && this.#p.nodad,
          noprefixroute: true,
        });
        return 'added';
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'EEXIST') return 'exists';
        if (code === 'ENODEV' && attempt < 3) {
          this.#gone();
          continue;
        }
        throw err;
      }
    }
  }

  /** addrDel — like `ip addr del IP/PLEN dev HOLDER`; absent (or no holder) is not an error. */
  async del(ip: ParsedIp, prefixlen: number): Promise<'deleted' | 'absent'> {
    if (this.#ifindex === 0) return 'absent';
    try {
      await this.#p.nl.addrDel({ ifindex: this.#ifindex, address: ip, prefixlen });
      return 'deleted';
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EADDRNOTAVAIL' || code === 'ENODEV') return 'absent';
      throw err;
    }
  }

  #gone(): void {
    if (this.#markReady === undefined) {
      this.markGone();
      this.#p.onMissing();
    }
  }
}

/**
 * Cluster mode, before anything else at start: removes from the holder device (when the
 * device feed has it) every external IP that is not in `keep` — the cluster IPs an earlier run of the
 * agent held, which another node may own by now. Like `ip addr del` for each; returns the
 * IPs removed. A missing holder is not an error.
 */
export async function removeHolderAddresses(
  nl: NetlinkHandle,
  devices: DeviceView,
  holderName: string,
  keep: ReadonlySet<string>,
): Promise<string[]> {
  const link = devices.linkByName(holderName);
  if (link === undefined) return [];
  const removed: string[] = [];
  for (const a of devices.addresses(link.index)) {
    const o = observe(a);
    if (o === undefined || keep.has(o.ip.address)) continue;
    try {
      await nl.addrDel({ ifindex: link.index, address: o.ip.address, prefixlen: o.prefixlen });
      removed.push(o.ip.address);
    } catch (err) {
      if (errnoCode(err) !== 'EADDRNOTAVAIL') throw err;
    }
  }
  return removed;
}
