// Why a forwardable IP has no next hop on a device, when there is more to say than "no
// route via this device" (a broadcast or local address, a nexthop object whose legs the
// kernel hides, a blackhole answer...): kept for status, one string per distinct reason.
import { notableReason } from './nexthop.js';

export class NoEntryReasons {
  /** ifindex → forwardable IP → the reason, as a person reads it. */
  readonly #byDevice = new Map<number, Map<string, string>>();
  /** Lookup reason → its text (at most 1024 kept: one string per distinct reason). */
  readonly #texts = new Map<string, string>();

  get(ifindex: number, ip: string): string | undefined {
    return this.#byDevice.get(ifindex)?.get(ip);
  }

  /** Keeps the notable reason of (ifindex, ip), or forgets it (undefined, or not notable). */
  note(ifindex: number, ip: string, reason: string | undefined): void {
    let text = reason === undefined ? undefined : this.#texts.get(reason);
    if (reason !== undefined && text === undefined) {
      text = notableReason(reason);
      if (text !== undefined && this.#texts.size < 1024) this.#texts.set(reason, text);
    }
    let m = this.#byDevice.get(ifindex);
    if (text === undefined) {
      if (m !== undefined && m.delete(ip) && m.size === 0) this.#byDevice.delete(ifindex);
      return;
    }
    if (m === undefined) this.#byDevice.set(ifindex, (m = new Map()));
    m.set(ip, text);
  }

  /** Forgets an IP on every device (it is no longer forwardable, or the node's own). */
  forgetIp(ip: string): void {
    for (const m of this.#byDevice.values()) m.delete(ip);
  }

  /** Forgets a device (no longer selected). */
  forgetDevice(ifindex: number): void {
    this.#byDevice.delete(ifindex);
  }
}
