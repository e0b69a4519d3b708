// The cluster holder: a TUN device that this process opens and the kernel deletes, with
// every address on it, when the process ends — however it ends. Cluster IPs live here (and
// node-local external IPs on the persistent holder), so an agent that dies takes its node's
// answers for its cluster IPs with it: no stale address answers IP traffic after another
// node took the IP over. The calls are the assigner's HolderOps on it.
import { describeError, errnoCode, FibkeeperError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import { closeFd, openTun } from '../native/index.js';
import type { NetlinkHandle } from '../netlink/index.js';
import type { HolderOps } from './types.js';

export class ClusterHolder implements HolderOps {
  readonly name: string;
  readonly #nl: NetlinkHandle;
  readonly #netns: string | undefined;
  readonly #log: Logger;
  #fd = -1;
  #ifindex = 0;

  constructor(p: { nl: NetlinkHandle; netns: string | undefined; name: string; log: Logger }) {
    this.#nl = p.nl;
    this.#netns = p.netns;
    this.name = p.name;
    this.#log = p.log;
  }

  /** 0 while the device does not exist. */
  get ifindex(): number {
    return this.#ifindex;
  }

  /**
   * Creates the device (a new one each time: it dies with its descriptor) and sets it up.
   * Throws ConflictError-like errors naming the device when another process holds it.
   */
  async open(): Promise<void> {
    this.close();
    let fd: number;
    try {
      fd = openTun(this.name, this.#netns).fd;
    } catch (err) {
      const busy = errnoCode(err) === 'EBUSY' || errnoCode(err) === 'EINVAL';
      throw new FibkeeperError(
        busy
          ? `cluster holder ${this.name}: a device of that name exists and is not a free TUN device (another agent, or another kind of device): set cluster.holderName to another name`
          : `cluster holder ${this.name}: cannot create the TUN device: ${describeError(err)}`,
        { cause: err, code: busy ? 'FIBKEEPER_ERR_CONFLICT' : 'FIBKEEPER_ERR_SYSTEM' },
      );
    }
    this.#fd = fd;
    const link = await this.#nl.linkGet(this.name);
    await this.#nl.linkSetUp(link.index);
    this.#ifindex = link.index;
    this.#log.info({ holder: this.name, ifindex: link.index }, 'extip: cluster holder created');
  }

  /** The device is gone (someone deleted it): forget it, close our descriptor. */
  lost(): void {
    this.#ifindex = 0;
    this.close();
  }

  /** addrAdd — like `ip addr add IP/32|128 dev HOLDER nodad noprefixroute`. */
  async add(ip: ParsedIp): Promise<'added' | 'exists'> {
    if (this.#ifindex === 0) throw new FibkeeperError(`cluster holder ${this.name} is missing`);
    try {
      await this.#nl.addrAdd({
        ifindex: this.#ifindex,
        address: ip,
        prefixlen: ip.family === 4 ? 32 : 128,
        nodad: ip.family === 6,
        noprefixroute: true,
      });
      return 'added';
    } catch (err) {
      if (errnoCode(err) === 'EEXIST') return 'exists';
      throw err;
    }
  }

  /** addrDel — like `ip addr del IP/PLEN dev HOLDER`; absent (or no holder) is not an error. */
  async del(ip: ParsedIp, prefixlen: number): Promise<'deleted' | 'absent'> {
    if (this.#ifindex === 0) return 'absent';
    try {
      await this.#nl.addrDel({ ifindex: this.#ifindex, address: ip, prefixlen });
      return 'deleted';
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EADDRNOTAVAIL' || code === 'ENODEV') return 'absent';
      throw err;
    }
  }

  /** Closes the descriptor: the kernel deletes the device and its addresses. Idempotent. */
  close(): void {
    if (this.#fd < 0) return;
    try {
      closeFd(this.#fd);
    } catch (err) {
      this.#log.warn({ err: describeError(err) }, 'extip: closing the cluster holder');
    }
    this.#fd = -1;
    this.#ifindex = 0;
  }
}
