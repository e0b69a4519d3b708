// The node's own addresses (on every device but the holder) and its link names, as the
// subsystem's link and address events and dumps show them: an external IP must never be
// one of them.
import type { Address, Link } from '../netlink/index.js';

export class NodeAddresses {
  readonly #index = new Map<string, number>();
  /** ip → the name of the device that carries it. */
  readonly byIp = new Map<string, string>();
  readonly #linkNames = new Map<number, string>();

  /** A link event or dump entry. */
  link(kind: 'new' | 'del', l: Link): void {
    if (kind === 'del') this.#linkNames.delete(l.index);
    else if (l.name !== undefined) this.#linkNames.set(l.index, l.name);
  }

  /** Replaces every link name (a full dump). */
  resetLinks(links: readonly Link[]): void {
    this.#linkNames.clear();
    for (const l of links) this.link('new', l);
  }

  /** Forgets every address (a full dump follows). */
  clearAddresses(): void {
    this.#index.clear();
    this.byIp.clear();
  }

  /** An address event or dump entry of a device other than the holder. */
  address(kind: 'new' | 'del', a: Address): void {
    const ip = a.local ?? a.address;
    if (ip === undefined) return;
    if (kind === 'new') {
      this.#index.set(ip, a.index);
      this.byIp.set(ip, this.#linkNames.get(a.index) ?? '');
    } else if (this.#index.get(ip) === a.index) {
      this.#index.delete(ip);
      this.byIp.delete(ip);
    }
  }
}
