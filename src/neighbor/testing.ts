// Test doubles for the neighbor subsystem's unit tests (used only by *.test.ts): builders
// for netlink messages and a fake kernel neighbor table with an operation history
// ("set 2|10.0.0.2", "del 2|10.0.0.2"). The fake clock is src/sched's (sched/testing.ts).
import {
  AF_INET,
  AF_INET6,
  ARPHRD_ETHER,
  IFF_LOWER_UP,
  IFF_RUNNING,
  IFF_UP,
  NetlinkError,
  NTF_EXT_LEARNED,
  NTF_EXT_MANAGED,
  NUD_PERMANENT,
  RT_SCOPE_UNIVERSE,
  RT_TABLE_MAIN,
  RTN_UNICAST,
  RTPROT_BOOT,
  type Address,
  type Link,
  type Neigh,
  type NeighBulkResult,
  type NeighSpec,
  formatNeigh,
  neighFields,
  NLM_F_REQUEST,
  readNeighFields,
  RTM_NEWNEIGH,
  Writer,
  type NeighFields,
  type Route,
} from '../netlink/index.js';
import type { NeighborKernel } from './ops.js';
import { neighKey } from './types.js';

export function link(index: number, name: string, over: Partial<Link> = {}): Link {
  return {
    family: 0,
    type: ARPHRD_ETHER,
    index,
    flags: IFF_UP | IFF_RUNNING | IFF_LOWER_UP,
    change: 0,
    name,
    address: `02:00:00:00:00:${index.toString(16).padStart(2, '0')}`,
    ...over,
  };
}

export function address(index: number, ip: string, prefixlen = 24): Address {
  const v6 = ip.includes(':');
  const a: Address = {
    family: v6 ? AF_INET6 : AF_INET,
    prefixlen,
    flags: 0,
    scope: 0,
    index,
    address: ip,
  };
  if (!v6) a.local = ip;
  return a;
}

/** A route message: `dst` "10.0.0.0/24" or "default", legs as [ifindex, gateway?]. */
export function route(
  dst: string,
  legs: readonly (readonly [number, string?])[],
  over: Partial<Route> = {},
): Route {
  const v6 = dst.includes(':');
  const [addr, len] = dst === 'default' ? [undefined, 0] : dst.split('/');
  const r: Route = {
    family: v6 ? AF_INET6 : AF_INET,
    dstLen: Number(len ?? (v6 ? 128 : 32)),
    srcLen: 0,
    tos: 0,
    table: RT_TABLE_MAIN,
    protocol: RTPROT_BOOT,
    scope: RT_SCOPE_UNIVERSE,
    type: RTN_UNICAST,
    flags: 0,
    ...over,
  };
  if (addr !== undefined) r.dst = addr;
  if (legs.length === 1) {
    r.oif = legs[0]![0];
    if (legs[0]![1] !== undefined) r.gateway = legs[0]![1];
  } else if (legs.length > 1) {
    r.multipath = legs.map(([ifindex, gateway]) =>
      gateway === undefined
        ? { ifindex, flags: 0, hops: 0 }
        : { ifindex, flags: 0, hops: 0, gateway },
    );
  }
  return { ...r, ...over };
}

export function neigh(ifindex: number, dst: string, over: Partial<Neigh> = {}): Neigh {
  return {
    family: dst.includes(':') ? AF_INET6 : AF_INET,
    ifindex,
    state: 0,
    flags: 0,
    type: 0,
    flagsExt: 0,
    dst,
    ...over,
  };
}

/** The message as a socket would bring it, read in place (readNeighFields) into `into`. */
export function fieldsOf(n: Neigh, into: NeighFields = neighFields()): NeighFields {
  const w = new Writer();
  formatNeigh(w, RTM_NEWNEIGH, NLM_F_REQUEST, n);
  const buf = Buffer.from(w.bytes());
  return readNeighFields(buf, 0, buf.length, into);
}

/** A kernel neighbor table: what neighSetMany/neighDelMany did, failures on demand. */
export class FakeKernel implements NeighborKernel {
  readonly entries = new Map<string, Neigh>();
  readonly history: string[] = [];
  /** Writes and deletes of these keys fail with this errno name. */
  readonly failKeys = new Map<string, string>();

  take(): string[] {
    return this.history.splice(0);
  }

  #fail(key: string, what: string): NetlinkError | undefined {
    const errno = this.failKeys.get(key);
    if (errno === undefined) return undefined;
    const n = { EINVAL: 22, ENODEV: 19, ENOENT: 2, EBUSY: 16 }[errno] ?? 5;
    return new NetlinkError(`${what} ${key}`, n);
  }

  async neighSetMany(entries: readonly NeighSpec[]): Promise<NeighBulkResult> {
    const failures: NeighBulkResult['failures'] = [];
    entries.forEach((s, index) => {
      const key = neighKey(s.ifindex, s.dst);
      const err = this.#fail(key, 'neighSet');
      this.history.push(`set ${key}${err ? ' fail' : ''}`);
      if (err) {
        failures.push({ index, error: err, entry: s });
        return;
      }
      const flags = (s.flags ?? 0) | (s.externLearned ? NTF_EXT_LEARNED : 0);
      this.entries.set(
        key,
        neigh(s.ifindex, s.dst, {
          state: s.state ?? NUD_PERMANENT,
          flags,
          flagsExt: s.managed ? NTF_EXT_MANAGED : 0,
          protocol: s.protocol,
        }),
      );
    });
    return { ok: entries.length - failures.length, failures };
  }

  async neighDelMany(
    entries: readonly Pick<NeighSpec, 'ifindex' | 'dst'>[],
  ): Promise<NeighBulkResult> {
    const failures: NeighBulkResult['failures'] = [];
    entries.forEach((s, index) => {
      const key = neighKey(s.ifindex, s.dst);
      const err =
        this.#fail(key, 'neighDel') ??
        (this.entries.delete(key) ? undefined : new NetlinkError(`neighDel ${key}`, 2));
      this.history.push(`del ${key}${err ? ` ${err.errnoName}` : ''}`);
      if (err) failures.push({ index, error: err, entry: s });
    });
    return { ok: entries.length - failures.length, failures };
  }

  async neighGet(key: Pick<NeighSpec, 'ifindex' | 'dst'>): Promise<Neigh> {
    const n = this.entries.get(neighKey(key.ifindex, key.dst));
    if (n === undefined) throw new NetlinkError(`neighGet ${key.dst}`, 2);
    return n;
  }

  async neighEach(each: (n: NeighFields) => void): Promise<number> {
    const all = [...this.entries.values()];
    // As the kernel hands them over: read in place into one reused object.
    const into = neighFields();
    for (const n of all) each(fieldsOf(n, into));
    return all.length;
  }
}
