// The desired set of cluster external IPs, as operators change it (the CLI, the API and
// the config file go through here): `<prefix>ips/<ip>` keys without a lease.
import { InvalidArgumentError } from '../errors/index.js';
import {
  decodeDesired,
  encodeDesired,
  KeyLayout,
  validateClusterIp,
  type DesiredIp,
} from './keys.js';
import { validateLabels, validateNodeName } from '../config/index.js';
import { HOLD_MODES, type Eligibility } from './placement.js';
import type { ClusterStore } from './store.js';

export class ClusterAdmin {
  readonly #store: ClusterStore;
  readonly #layout: KeyLayout;

  constructor(store: ClusterStore, prefix = '/fibkeeper/') {
    this.#store = store;
    this.#layout = new KeyLayout(prefix);
  }

  /**
   * Adds (or replaces the eligibility of) a cluster IP. Checks everything before writing:
   * a malformed IP, node name or label changes nothing.
   */
  async add(ip: string, eligible: Eligibility = {}): Promise<string> {
    const canonical = validateClusterIp(ip);
    const nodes = [...new Set(eligible.nodes ?? [])].map((n) =>
      validateNodeName(n, 'eligible node'),
    );
    const labels = validateLabels(eligible.labels ?? {});
    const mode = eligible.mode ?? 'single';
    if (!HOLD_MODES.includes(mode)) {
      throw new InvalidArgumentError(
        `cluster IP mode ${String(mode)}: use single or active-active`,
      );
    }
    await this.#store.put(this.#layout.ip(canonical), encodeDesired({ nodes, labels, mode }));
    return canonical;
  }

  /**
   * Adds each IP that is not in the desired set yet, eligible on any node (the config's
   * cluster.static); one that exists keeps its eligibility. Returns the IPs added.
   */
  async seed(ips: readonly string[]): Promise<string[]> {
    const canonical = [...new Set(ips.map(validateClusterIp))];
    const added: string[] = [];
    for (const ip of canonical) {
      const rev = await this.#store.createIfAbsent(this.#layout.ip(ip), encodeDesired({}), '0');
      if (rev > 0) added.push(ip);
    }
    return added;
  }

  /** Removes a cluster IP; its owner drops it and deletes its owner key. False if absent. */
  async del(ip: string): Promise<boolean> {
    let canonical: string;
    try {
      canonical = validateClusterIp(ip);
    } catch (err) {
      throw new InvalidArgumentError(`cluster extip del: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return this.#store.delete(this.#layout.ip(canonical));
  }

  /**
   * Drains `node`: `cordon/<node>` makes every member's placement pass it over, so its owner
   * keys are released with graceful handovers and it takes nothing until uncordon(). Names
   * that no member uses now are accepted (a node that is down). Returns whether it was new.
   */
  async cordon(node: string): Promise<boolean> {
    const name = validateNodeName(node, 'node');
    const rev = await this.#store.createIfAbsent(
      this.#layout.cordon(name),
      JSON.stringify({ at: new Date().toISOString() }),
      '0',
    );
    return rev > 0;
  }

  /** Lets `node` hold IPs again. False when it was not drained. */
  async uncordon(node: string): Promise<boolean> {
    return this.#store.delete(this.#layout.cordon(validateNodeName(node, 'node')));
  }

  /** The desired cluster IPs with their owners (as etcd has them now). */
  async list(): Promise<(DesiredIp & { owner: string | undefined })[]> {
    const { kvs } = await this.#store.getPrefix(this.#layout.prefix);
    const owners = new Map<string, string>();
    const out: DesiredIp[] = [];
    for (const kv of kvs) {
      const k = this.#layout.parse(kv.key);
      if (k?.kind === 'owner') {
        try {
          owners.set(k.ip, (JSON.parse(kv.value) as { node: string }).node);
        } catch {
          // ignored: a malformed owner value names nobody
        }
      } else if (k?.kind === 'ip') {
        const d = decodeDesired(k.ip, kv.value);
        if (!(d instanceof Error)) out.push(d);
      }
    }
    return out.map((d) => ({ ...d, owner: owners.get(d.ip) }));
  }
}
