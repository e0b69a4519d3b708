// Neighbor calls, each the equivalent of an `ip neigh` command, and the bulk set/delete
// the neighbor subsystem uses for thousands of entries (the benchmark's path).
import { InvalidArgumentError } from '../errors/index.js';
import { afOfText } from '../ipaddr/index.js';
import type { BulkFailure } from './bulk.js';
import type { Client } from './client.js';
import {
  AF_UNSPEC,
  formatNeigh,
  NDA_DST,
  NDA_FLAGS_EXT,
  NDA_LLADDR,
  NDA_PROTOCOL,
  type Neigh,
  neighFields,
  type NeighFields,
  NLM_F_CREATE,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  NTF_EXT_LEARNED,
  NTF_EXT_MANAGED,
  NTF_PROXY,
  NTF_ROUTER,
  NUD_PERMANENT,
  parseNeigh,
  readNeighFields,
  RTM_DELNEIGH,
  RTM_GETNEIGH,
  RTM_NEWNEIGH,
  SIZEOF_NDMSG,
  SIZEOF_NLMSGHDR,
  type Writer,
} from './codec/index.js';
import { w16le, wi32le } from '../util/index.js';
export type { NeighFields };

/** A neighbor entry to set (replace) or, with ifindex + dst only, to delete or get. */
export interface NeighSpec {
  ifindex: number;
  /** The neighbor's IP ("10.0.0.1", "fe80::1"). */
  dst: string;
  /** Link-layer address; absent lets the kernel resolve it (managed / probe states). */
  lladdr?: string;
  /** NUD_*; default NUD_PERMANENT (as `ip neigh replace` without `nud`). */
  state?: number;
  /** NTF_* flags (8-bit), ORed with the booleans below. */
  flags?: number;
  /** NTF_EXT_LEARNED (`extern_learn`): owned by a control plane; the kernel does not age it out. */
  externLearned?: boolean;
  /** NTF_EXT_MANAGED in NDA_FLAGS_EXT (`managed`): the kernel keeps it resolved (5.16+). */
  managed?: boolean;
  /** NTF_ROUTER (`router`, IPv6). */
  router?: boolean;
  /** NDA_PROTOCOL (`protocol P`): who installed the entry. */
  protocol?: number;
}

const fail = (s: NeighSpec, why: string): never => {
  throw new InvalidArgumentError(`neighbor ${s.dst} dev ${s.ifindex}: ${why}`);
};

/**
 * Encodes `s` as RTM_NEWNEIGH/RTM_DELNEIGH straight into the Writer: the bulk path, no
 * intermediate object. Throws InvalidArgumentError on a bad entry.
 */
function encodeNeigh(w: Writer, type: number, flags: number, s: NeighSpec, full: boolean): void {
  if (!(s.ifindex > 0) || !Number.isInteger(s.ifindex)) fail(s, 'bad ifindex');
  if (typeof s.dst !== 'string') fail(s, 'dst must be an IP string');
  const start = w.begin(type, flags, SIZEOF_NDMSG);
  const b = w.buf; // begin() made room for the fixed header: write it before any attribute
  const p = start + SIZEOF_NLMSGHDR;
  b[p] = afOfText(s.dst);
  wi32le(b, s.ifindex, p + 4);
  if (full) {
    w16le(b, s.state ?? NUD_PERMANENT, p + 8);
    b[p + 10] =
      (s.flags ?? 0) | (s.externLearned ? NTF_EXT_LEARNED : 0) | (s.router ? NTF_ROUTER : 0);
  }
  w.ip(NDA_DST, s.dst);
  if (full) {
    if (s.lladdr !== undefined) w.mac(NDA_LLADDR, s.lladdr);
    if (s.protocol !== undefined) w.u8(NDA_PROTOCOL, s.protocol);
    if (s.managed) w.u32(NDA_FLAGS_EXT, NTF_EXT_MANAGED);
  }
  w.end(start);
}

const describe = (verb: string, s: NeighSpec): string => `${verb} ${s.dst} dev ${s.ifindex}`;

/**
 * neighList — like `ip neigh show nud all [dev DEV]`: every entry, with state, flags,
 * the managed flag (flagsExt) and protocol. `proxy: true` lists proxy entries instead.
 */
export async function neighList(
  c: Client,
  filter: { family?: number; ifindex?: number; proxy?: boolean } = {},
): Promise<Neigh[]> {
  const req: Neigh = {
    family: filter.family ?? AF_UNSPEC,
    ifindex: 0,
    state: 0,
    flags: filter.proxy ? NTF_PROXY : 0,
    type: 0,
    flagsExt: 0,
  };
  if (filter.ifindex !== undefined) req.filterIfindex = filter.ifindex;
  const all = await c.dump(
    (w) => formatNeigh(w, RTM_GETNEIGH, NLM_F_REQUEST, req),
    parseNeigh,
    'neighList',
  );
  // The kernel filters too, but only with strict checking: filter here as well.
  return all.filter(
    (n) =>
      (filter.family === undefined || n.family === filter.family) &&
      (filter.ifindex === undefined || n.ifindex === filter.ifindex),
  );
}

/**
 * neighEach — neighList without an object per entry: each entry is read into one reused
 * NeighFields (readNeighFields) and handed to `each`, valid only during the call. For tables
 * of a million entries, whose list would be a million objects at once. `begin` is called
 * before every attempt of the dump (an interrupted one starts over). Resolves with the
 * number of entries handed over.
 */
export async function neighEach(
  c: Client,
  each: (n: NeighFields) => void,
  filter: { family?: number; ifindex?: number } = {},
  begin?: () => void,
): Promise<number> {
  const req: Neigh = {
    family: filter.family ?? AF_UNSPEC,
    ifindex: 0,
    state: 0,
    flags: 0,
    type: 0,
    flagsExt: 0,
  };
  if (filter.ifindex !== undefined) req.filterIfindex = filter.ifindex;
  const into = neighFields();
  let n = 0;
  await c.dumpEach(
    (w) => formatNeigh(w, RTM_GETNEIGH, NLM_F_REQUEST, req),
    (buf, off, len) => {
      const f = readNeighFields(buf, off, len, into);
      if (filter.family !== undefined && f.family !== filter.family) return;
      if (filter.ifindex !== undefined && f.ifindex !== filter.ifindex) return;
      n++;
      each(f);
    },
    'neighEach',
    () => {
      n = 0;
      begin?.();
    },
  );
  return n;
}

/** neighGet — like `ip neigh get DST dev DEV`. ENOENT when absent. */
export function neighGet(c: Client, key: Pick<NeighSpec, 'ifindex' | 'dst'>): Promise<Neigh> {
  return c.get(
    (w) => encodeNeigh(w, RTM_GETNEIGH, NLM_F_REQUEST, key, false),
    parseNeigh,
    describe('neighGet', key),
  );
}

/**
 * neighSet — like `ip neigh replace DST [lladdr MAC] dev DEV nud STATE [extern_learn]
 * [managed] [protocol P]`. Creates or overwrites; idempotent.
 */
export function neighSet(c: Client, s: NeighSpec): Promise<void> {
  return c.ack(
    (w) => encodeNeigh(w, RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE, s, true),
    describe('neighSet', s),
  );
}

/** neighDel — like `ip neigh del DST dev DEV`. ENOENT when absent. */
export function neighDel(c: Client, key: Pick<NeighSpec, 'ifindex' | 'dst'>): Promise<void> {
  return c.ack(
    (w) => encodeNeigh(w, RTM_DELNEIGH, NLM_F_REQUEST, key, false),
    describe('neighDel', key),
  );
}

/** The outcome of a bulk neighbor call: how many succeeded, and each failure with its entry. */
export interface NeighBulkResult {
  ok: number;
  failures: (BulkFailure & { entry: Pick<NeighSpec, 'ifindex' | 'dst'> })[];
}

async function neighBulk(
  c: Client,
  what: string,
  entries: readonly NeighSpec[],
  type: number,
  flags: number,
  full: boolean,
): Promise<NeighBulkResult> {
  const out = await c.bulk<never>({
    what,
    count: entries.length,
    mode: 'ack',
    encode: (w, i) => encodeNeigh(w, type, flags, entries[i]!, full),
    describe: (i) => describe(what, entries[i]!),
  });
  return {
    ok: entries.length - out.failures.length,
    failures: out.failures.map((f) => ({ ...f, entry: entries[f.index]! })),
  };
}

/**
 * neighSetMany — `ip -batch` of `neigh replace` lines, pipelined: thousands of entries in
 * few sendmsg calls. Never throws for an entry; each failure is listed with its reason
 * (a NetlinkError from the kernel, or InvalidArgumentError for a malformed entry).
 */
export function neighSetMany(c: Client, entries: readonly NeighSpec[]): Promise<NeighBulkResult> {
  return neighBulk(
    c,
    'neighSet',
    entries,
    RTM_NEWNEIGH,
    NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE,
    true,
  );
}

/** neighDelMany — `ip -batch` of `neigh del` lines, pipelined; failures per entry (ENOENT...). */
export function neighDelMany(
  c: Client,
  entries: readonly Pick<NeighSpec, 'ifindex' | 'dst'>[],
): Promise<NeighBulkResult> {
  return neighBulk(c, 'neighDel', entries, RTM_DELNEIGH, NLM_F_REQUEST, false);
}
