// The endpoints of the control API and the checks on their bodies. Every mutation validates
// the whole request before it changes anything, so nothing is half-applied.
import { InvalidArgumentError } from '../errors/index.js';

export interface ForwardableEntry {
  ip: string;
  owners: string[];
}

export interface ExternalIpEntry {
  ip: string;
  state: string;
  announcedAt: string | null;
  lastError: string | null;
}

/** What a forwardable call changed for its owner: IPs it took that it did not hold, IPs it gave up. */
export interface ForwardableChange {
  added: number;
  removed: number;
}

/** What the agent provides to the API. Each call is atomic: all IPs valid, or nothing done. */
export interface ControlHandlers {
  forwardableAdd(owner: string, ips: string[]): Promise<ForwardableChange | void>;
  forwardableDelete(owner: string, ips: string[]): Promise<ForwardableChange | void>;
  /** Replaces the whole set of one owner. */
  forwardableSetOwner(owner: string, ips: string[]): Promise<ForwardableChange | void>;
  forwardableList(): Promise<ForwardableEntry[]>;
  extipAdd(ips: string[]): Promise<void>;
  extipDelete(ips: string[]): Promise<void>;
  extipList(): Promise<ExternalIpEntry[]>;
  status(): Promise<unknown>;
  probe(): Promise<unknown>;
  xdpDetach(): Promise<unknown>;
}

export interface RequestContext {
  body: unknown;
  params: Record<string, string>;
  query: URLSearchParams;
}

type Handler = (h: ControlHandlers, ctx: RequestContext) => Promise<unknown>;

export interface Route {
  path: RegExp;
  methods: Record<string, Handler>;
}

export const OWNER_RE = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,62}$/;
/** The most IPs one request may carry. */
export const MAX_IPS_PER_REQUEST = 100_000;

function obj(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidArgumentError('the body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

export function checkOwner(v: unknown): string {
  if (typeof v !== 'string' || !OWNER_RE.test(v)) {
    throw new InvalidArgumentError(
      `"owner" must be a name of 1-63 letters, digits, or _ . : / - (got ${JSON.stringify(v)})`,
    );
  }
  return v;
}

function ips(body: Record<string, unknown>, allowEmpty: boolean): string[] {
  const v = body.ips;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new InvalidArgumentError('"ips" must be a list of IP address strings');
  }
  if (!allowEmpty && v.length === 0) throw new InvalidArgumentError('"ips" is empty');
  if (v.length > MAX_IPS_PER_REQUEST) {
    throw new InvalidArgumentError(
      `"ips" has ${v.length} entries; the limit is ${MAX_IPS_PER_REQUEST}`,
    );
  }
  return v as string[];
}

function noBody(ctx: RequestContext): void {
  if (ctx.body !== undefined) throw new InvalidArgumentError('this endpoint takes no body');
}

export const ROUTES: readonly Route[] = [
  {
    path: /^\/v1\/forwardable$/,
    methods: {
      GET: async (h, ctx) => (noBody(ctx), { forwardable: await h.forwardableList() }),
      POST: async (h, ctx) => {
        const b = obj(ctx.body);
        return { ok: true, ...(await h.forwardableAdd(checkOwner(b.owner), ips(b, false))) };
      },
      DELETE: async (h, ctx) => {
        const b = obj(ctx.body);
        return { ok: true, ...(await h.forwardableDelete(checkOwner(b.owner), ips(b, false))) };
      },
    },
  },
  {
    path: /^\/v1\/owners\/(?<owner>[^/]+)\/forwardable$/,
    methods: {
      PUT: async (h, ctx) => {
        const owner = checkOwner(decodeURIComponent(ctx.params.owner ?? ''));
        return { ok: true, ...(await h.forwardableSetOwner(owner, ips(obj(ctx.body), true))) };
      },
    },
  },
  {
    path: /^\/v1\/extip$/,
    methods: {
      GET: async (h, ctx) => (noBody(ctx), { extip: await h.extipList() }),
      POST: async (h, ctx) => {
        await h.extipAdd(ips(obj(ctx.body), false));
        return { ok: true };
      },
      DELETE: async (h, ctx) => {
        await h.extipDelete(ips(obj(ctx.body), false));
        return { ok: true };
      },
    },
  },
  { path: /^\/v1\/status$/, methods: { GET: async (h, ctx) => (noBody(ctx), h.status()) } },
  { path: /^\/v1\/probe$/, methods: { GET: async (h, ctx) => (noBody(ctx), h.probe()) } },
  {
    path: /^\/v1\/xdp\/detach$/,
    methods: { POST: async (h, ctx) => (noBody(ctx), h.xdpDetach()) },
  },
];
