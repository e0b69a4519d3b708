// fibkeeper's own entries whose next hop did not answer: the kernel reported them FAILED and
// has not resolved them since (a managed entry cycles FAILED → INCOMPLETE → FAILED while the
// kernel keeps trying). Kept as events change the entries, with the time of the first
// FAILED, so that health can tell a next hop that has not answered ARP/NDP for a while (an
// unusable next hop: XDP answers NO_NEIGH for its traffic) from one resolving right now.
// Only FAILED starts an episode: every new entry is INCOMPLETE for a moment, and a million
// of them must not fill this map. Private to observed.ts.
import { NUD_FAILED, NUD_INCOMPLETE } from '../netlink/index.js';

/** What a state says of an episode: FAILED starts one, INCOMPLETE/NONE go on, others end it. */
function verdict(state: number): 'failed' | 'trying' | 'resolved' {
  if ((state & NUD_FAILED) !== 0) return 'failed';
  return state === 0 || (state & NUD_INCOMPLETE) !== 0 ? 'trying' : 'resolved';
}

/** ifindex → address key (a number for IPv4, text for IPv6) → time of the first FAILED. */
export class UnresolvedEntries<K> {
  readonly #byDevice = new Map<number, Map<K, number>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /**
   * The entry (ifindex, key) of fibkeeper's is now in NUD `state`; `state` undefined: it is
   * gone, or no longer fibkeeper's.
   */
  note(ifindex: number, key: K, state: number | undefined, now: () => number): void {
    const v = state === undefined ? 'resolved' : verdict(state);
    if (v === 'failed') {
      let m = this.#byDevice.get(ifindex);
      if (m === undefined) this.#byDevice.set(ifindex, (m = new Map()));
      if (!m.has(key)) {
        m.set(key, now());
        this.#size++;
      }
      return;
    }
    if (v === 'trying' || this.#size === 0) return;
    const m = this.#byDevice.get(ifindex);
    if (m === undefined || !m.delete(key)) return;
    this.#size--;
    if (m.size === 0) this.#byDevice.delete(ifindex);
  }

  /**
   * Calls `fn` for every unresolved entry with the time of its first FAILED. No tuple per
   * entry: a storm of 100,000 unresolved entries is walked every second (docs/neighbor.md,
   * "The fifth pass").
   */
  forEach(fn: (ifindex: number, key: K, since: number) => void): void {
    for (const [ifindex, m] of this.#byDevice) m.forEach((t, k) => fn(ifindex, k, t));
  }
}
