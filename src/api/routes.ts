// The endpoints of the control API and the checks on their bodies. Every mutation validates
// the whole request (with the rules of src/config/rules, the same the state file and the
// config are held to) before it changes anything, so nothing is half-applied.
import {
  checkOwner,
  parseIpLines,
  parseIpList,
  validateLabels,
  validateNodeName,
} from '../config/index.js';
import { InvalidArgumentError } from '../errors/index.js';
import { canonicalIp, type IpArg, type ParsedIp } from '../ipaddr/index.js';
import { IpLines } from './lines.js';
import { StreamReply, type StreamItem } from './stream.js';

export interface ForwardableEntry {
  ip: string;
  owners: string[];
}

export interface ExternalIpEntry {
  ip: string;
  state: string;
  announcedAt: string | null;
  lastError: string | null;
  /** The host that duplicate address detection found holding the IP (state failed). */
  conflict?: { mac: string; what: string } | null;
}

/** A cluster external IP as etcd has it: where it may go and who holds it now. */
export interface ClusterIpEntry {
  ip: string;
  /** Eligible node names ([]: any) and labels ({}: any). */
  nodes: string[];
  labels: Record<string, string>;
  /** single (one owner) or active-active (every eligible node that announces over BGP). */
  mode: 'single' | 'active-active';
  owner: string | null;
}

/** Where a cluster IP may be held: named nodes and/or nodes with all these labels. */
export interface ClusterEligibility {
  nodes: string[];
  labels: Record<string, string>;
  /** Absent: single. */
  mode?: 'single' | 'active-active';
}

/** What a forwardable call changed for its owner: IPs it took that it did not hold, IPs it gave up. */
export interface ForwardableChange {
  added: number;
  removed: number;
}

/**
 * What the agent provides to the API. Each call is atomic: all IPs valid, or nothing done.
 * IPs arrive checked, parsed once here (ParsedIp, passed down so that nothing below parses
 * them again; canonical text for the cluster calls, which only store them in etcd), without
 * duplicates; `signal` fires at the call's deadline. The forwardable
 * calls answer what changed for the owner (an agent may answer nothing).
 */
export interface ControlHandlers {
  forwardableAdd(
    owner: string,
    ips: IpArg[],
    signal?: AbortSignal,
  ): Promise<ForwardableChange | void>;
  forwardableDelete(
    owner: string,
    ips: IpArg[],
    signal?: AbortSignal,
  ): Promise<ForwardableChange | void>;
  /** Replaces the whole set of one owner. */
  forwardableSetOwner(
    owner: string,
    ips: IpArg[],
    signal?: AbortSignal,
  ): Promise<ForwardableChange | void>;
  forwardableList(): Promise<ForwardableEntry[]>;
  extipAdd(ips: ParsedIp[], signal?: AbortSignal): Promise<void>;
  /** Unassigns; answers which of the IPs were not external IPs of this agent. */
  extipDelete(ips: ParsedIp[], signal?: AbortSignal): Promise<{ absent?: string[] } | void>;
  extipList(): Promise<ExternalIpEntry[]>;
  /** The status document; with a query, its neighbor rows filtered (and the IP explained). */
  status(query?: StatusRequest): Promise<unknown>;
  /** The events kept that match, and (follow) how to hear the next ones. */
  events(query: EventsRequest): EventsAnswer;
  /** The destinations XDP found without a neighbor entry lately, most hits first. */
  xdpMisses(limit: number): Promise<unknown>;
  probe(): Promise<unknown>;
  xdpDetach(): Promise<unknown>;
  /** Cluster mode: this member's view (members, lease, every cluster IP). */
  clusterStatus(): Promise<unknown>;
  clusterExtipList(): Promise<ClusterIpEntry[]>;
  /** Adds (or re-scopes) cluster IPs in etcd's desired set. */
  clusterExtipAdd(ips: string[], eligible: ClusterEligibility, signal?: AbortSignal): Promise<void>;
  /** Removes cluster IPs from the desired set; resolves with those that were there. */
  clusterExtipDelete(ips: string[], signal?: AbortSignal): Promise<string[]>;
  /** Drains a node (it hands its IPs over and takes none); resolves whether it was new. */
  clusterDrain(node: string): Promise<boolean>;
  /** Lets a drained node hold IPs again; resolves whether it was drained. */
  clusterUncordon(node: string): Promise<boolean>;
  /** BGP: the daemon, each peer's session, the IPs announced (bgp.enabled). */
  bgpStatus(): Promise<unknown>;
}

/** GET /v1/status?ip=&owner=&device=&state=&limit= */
export interface StatusRequest {
  /** One IP, canonical. */
  ip?: string;
  owner?: string;
  device?: string;
  /** A next hop state: a NUD state (upper case), `none`, or a reconcile status. */
  state?: string;
  limit?: number;
}

/** GET /v1/events?after=SEQ&since=DURATION|TIME&type=A,B&follow=1 */
export interface EventsRequest {
  afterSeq?: number;
  sinceMs?: number;
  types?: string[];
  follow: boolean;
}

export interface EventsAnswer {
  initial: readonly StreamItem[];
  follow?: (push: (item: StreamItem) => void) => () => void;
  /** Told when a follower is cut off for reading too slowly (counted). */
  onCut?: () => void;
}

export interface RequestContext {
  body: unknown;
  /** Path parameters, percent-decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** Fires at the call's deadline. */
  signal?: AbortSignal;
}

type Handler = (h: ControlHandlers, ctx: RequestContext) => Promise<unknown>;

export interface Route {
  path: RegExp;
  methods: Record<string, Handler>;
}

function obj(body: unknown): Record<string, unknown> {
  if (body instanceof IpLines) {
    throw new InvalidArgumentError(
      'this endpoint takes a JSON object (content-type: application/json), not lines of text',
    );
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidArgumentError('the body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** The body's "ips": checked as IPs to add (`release`: only as addresses), parsed once. */
function ips(body: Record<string, unknown>, mode: 'add' | 'set' | 'release'): ParsedIp[] {
  const v = body.ips;
  if (!Array.isArray(v))
    throw new InvalidArgumentError('"ips" must be a list of IP address strings');
  if (mode !== 'set' && v.length === 0) throw new InvalidArgumentError('"ips" is empty');
  return parseIpList(v, '"ips"', mode === 'release' ? 'release' : 'add');
}

/**
 * A forwardable request's owner and IPs: a JSON object {"owner", "ips"}, or a bulk body (one
 * IP a line, text/plain) with the owner in the query (`?owner=NAME`) or the path.
 */
function forwardableBody(
  ctx: RequestContext,
  mode: 'add' | 'set' | 'release',
  pathOwner?: string,
): { owner: string; ips: IpArg[] } {
  if (ctx.body instanceof IpLines) {
    const owner = checkOwner(pathOwner ?? ctx.query.get('owner') ?? undefined);
    const list = parseIpLines(ctx.body.lines, 'the body', mode === 'release' ? 'release' : 'add');
    if (mode !== 'set' && list.length === 0) throw new InvalidArgumentError('the body holds no IP');
    return { owner, ips: list };
  }
  const b = obj(ctx.body);
  return { owner: checkOwner(pathOwner ?? b.owner), ips: ips(b, mode) };
}

/** The canonical text of parsed IPs. */
const texts = (list: readonly ParsedIp[]): string[] => list.map((ip) => ip.address);

/** The body's optional "nodes" and "labels" (eligibility of a cluster IP), checked. */
function eligibility(body: Record<string, unknown>): ClusterEligibility {
  const { nodes = [], labels = {}, mode = 'single' } = body;
  if (mode !== 'single' && mode !== 'active-active') {
    throw new InvalidArgumentError(
      `"mode" ${JSON.stringify(mode)} is not one of single, active-active`,
    );
  }
  if (!Array.isArray(nodes) || nodes.some((n) => typeof n !== 'string')) {
    throw new InvalidArgumentError('"nodes" must be a list of node names');
  }
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) {
    throw new InvalidArgumentError('"labels" must be an object of label values by key');
  }
  return {
    nodes: [...new Set(nodes as string[])].map((n) => validateNodeName(n, 'eligible node')),
    labels: validateLabels(labels as Record<string, string>),
    ...(mode === 'active-active' ? { mode } : {}),
  };
}

function noBody(ctx: RequestContext): void {
  if (ctx.body !== undefined) throw new InvalidArgumentError('this endpoint takes no body');
}

/** A query parameter that must be a whole number in [min, max], or undefined when absent. */
function intParam(q: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new InvalidArgumentError(`?${name}= must be a whole number from ${min} to ${max}`);
  }
  return Number(v);
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** ?since=: a duration back from now (90s, 5m, 1h30m) or an ISO 8601 time; as wall-clock ms. */
export function parseSince(v: string, now = Date.now()): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let end = 0;
  for (let m = re.exec(v); m; m = re.exec(v)) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    end = re.lastIndex;
  }
  if (end === v.length && end > 0) return now - total;
  const t = Date.parse(v);
  if (/^\d{4}-\d\d-\d\d/.test(v) && !Number.isNaN(t)) return t;
  throw new InvalidArgumentError(
    `?since=${v}: give a duration back from now (30s, 5m, 1h) or an ISO 8601 time (2025-06-01T10:00:00Z)`,
  );
}

/** The next hop states `?state=` takes: the kernel's NUD states, none, the reconcile ones. */
export const STATUS_STATES = [
  'INCOMPLETE',
  'REACHABLE',
  'STALE',
  'DELAY',
  'PROBE',
  'FAILED',
  'NOARP',
  'PERMANENT',
  'none',
  'pending',
  'done',
  'error',
] as const;

function statusState(v: string): string {
  const known = STATUS_STATES as readonly string[];
  if (known.includes(v.toUpperCase())) return v.toUpperCase();
  if (known.includes(v.toLowerCase())) return v.toLowerCase();
  throw new InvalidArgumentError(
    `?state=${v}: give a kernel state (${STATUS_STATES.slice(0, 8).join(', ')}), none (no kernel entry) or a reconcile status (pending, done, error)`,
  );
}

function statusRequest(q: URLSearchParams): StatusRequest | undefined {
  const out: StatusRequest = {};
  const ip = q.get('ip');
  if (ip !== null) {
    try {
      out.ip = canonicalIp(ip);
    } catch (err) {
      throw new InvalidArgumentError(`?ip=: ${(err as Error).message}`);
    }
  }
  const owner = q.get('owner');
  if (owner !== null) out.owner = owner;
  const device = q.get('device');
  if (device !== null) out.device = device;
  const state = q.get('state');
  if (state !== null) out.state = statusState(state);
  const limit = intParam(q, 'limit', 1, 1_000_000);
  if (limit !== undefined) out.limit = limit;
  return Object.keys(out).length === 0 ? undefined : out;
}

function eventsRequest(q: URLSearchParams): EventsRequest {
  const out: EventsRequest = { follow: ['1', 'true', 'yes'].includes(q.get('follow') ?? '') };
  const after = intParam(q, 'after', 0, Number.MAX_SAFE_INTEGER);
  if (after !== undefined) out.afterSeq = after;
  const since = q.get('since');
  if (since !== null) out.sinceMs = parseSince(since);
  const type = q.get('type');
  if (type !== null && type !== '') out.types = type.split(',').map((t) => t.trim());
  return out;
}

export const ROUTES: readonly Route[] = [
  {
    path: /^\/v1\/forwardable$/,
    methods: {
      GET: async (h, ctx) => (noBody(ctx), { forwardable: await h.forwardableList() }),
      POST: async (h, ctx) => {
        const { owner, ips } = forwardableBody(ctx, 'add');
        return { ok: true, ...(await h.forwardableAdd(owner, ips, ctx.signal)) };
      },
      DELETE: async (h, ctx) => {
        const { owner, ips } = forwardableBody(ctx, 'release');
        return { ok: true, ...(await h.forwardableDelete(owner, ips, ctx.signal)) };
      },
    },
  },
  {
    path: /^\/v1\/owners\/(?<owner>[^/]+)\/forwardable$/,
    methods: {
      PUT: async (h, ctx) => {
        const { owner, ips } = forwardableBody(ctx, 'set', ctx.params.owner ?? '');
        return { ok: true, ...(await h.forwardableSetOwner(owner, ips, ctx.signal)) };
      },
    },
  },
  {
    path: /^\/v1\/extip$/,
    methods: {
      GET: async (h, ctx) => (noBody(ctx), { extip: await h.extipList() }),
      POST: async (h, ctx) => {
        await h.extipAdd(ips(obj(ctx.body), 'add'), ctx.signal);
        return { ok: true };
      },
      DELETE: async (h, ctx) => {
        const r = await h.extipDelete(ips(obj(ctx.body), 'release'), ctx.signal);
        return { ok: true, absent: (r && r.absent) ?? [] };
      },
    },
  },
  {
    path: /^\/v1\/cluster\/extip$/,
    methods: {
      GET: async (h, ctx) => (noBody(ctx), { extip: await h.clusterExtipList() }),
      POST: async (h, ctx) => {
        const b = obj(ctx.body);
        const list = texts(ips(b, 'add'));
        await h.clusterExtipAdd(list, eligibility(b), ctx.signal);
        return { ok: true, ips: list };
      },
      DELETE: async (h, ctx) => {
        const deleted = await h.clusterExtipDelete(
          texts(ips(obj(ctx.body), 'release')),
          ctx.signal,
        );
        return { ok: true, deleted };
      },
    },
  },
  {
    path: /^\/v1\/cluster\/(?<verb>drain|uncordon)$/,
    methods: {
      POST: async (h, ctx) => {
        const b = obj(ctx.body);
        if (typeof b.node !== 'string')
          throw new InvalidArgumentError('"node" must be a node name');
        const node = validateNodeName(b.node, 'node');
        if (ctx.params['verb'] === 'drain')
          return { ok: true, node, new: await h.clusterDrain(node) };
        return { ok: true, node, was: await h.clusterUncordon(node) };
      },
    },
  },
  {
    path: /^\/v1\/bgp\/status$/,
    methods: { GET: async (h, ctx) => (noBody(ctx), await h.bgpStatus()) },
  },
  {
    path: /^\/v1\/cluster\/status$/,
    methods: { GET: async (h, ctx) => (noBody(ctx), h.clusterStatus()) },
  },
  {
    path: /^\/v1\/status$/,
    methods: { GET: async (h, ctx) => (noBody(ctx), h.status(statusRequest(ctx.query))) },
  },
  {
    path: /^\/v1\/events$/,
    methods: {
      GET: async (h, ctx) => {
        noBody(ctx);
        const a = h.events(eventsRequest(ctx.query));
        return new StreamReply(a.initial, a.follow, a.onCut);
      },
    },
  },
  {
    path: /^\/v1\/xdp\/misses$/,
    methods: {
      GET: async (h, ctx) => (
        noBody(ctx),
        h.xdpMisses(intParam(ctx.query, 'limit', 1, 4096) ?? 20)
      ),
    },
  },
  { path: /^\/v1\/probe$/, methods: { GET: async (h, ctx) => (noBody(ctx), h.probe()) } },
  {
    path: /^\/v1\/xdp\/detach$/,
    methods: { POST: async (h, ctx) => (noBody(ctx), h.xdpDetach()) },
  },
];
