// The control API: HTTP/JSON over a unix socket (and, only when configured, an explicit TCP
// address). Handlers are injected; this file only does transport, limits and error mapping.
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdirSync, chmodSync, lstatSync, unlinkSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from '../util/index.js';
import { dirname } from 'node:path';
import {
  ConflictError,
  FibkeeperError,
  InvalidArgumentError,
  TimeoutError,
  describeError,
} from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { systemClock, Timer, type Clock } from '../sched/index.js';
import { parseHostPort } from '../metrics/index.js';
import { IpLines } from './lines.js';
import { ROUTES, type ControlHandlers } from './routes.js';
import { StreamReply, sendStream } from './stream.js';

/** Largest JSON request body accepted (a list of a few thousand IPs fits). */
export const MAX_BODY_BYTES = 1 << 20;
/**
 * Largest bulk body accepted: text/plain, one IP a line, read as a stream (4,000,000 IPv4
 * addresses fit; 1,000,000 take about 13 MiB).
 */
export const MAX_BULK_BODY_BYTES = 64 << 20;

/**
 * Reads a text body line by line as it arrives, each line decoded from the bytes on its own
 * (a flat string of its own: no slice that keeps a whole chunk alive). Past the limit the
 * rest is read and dropped (the client sees the 413), up to a hard cap.
 */
async function readLines(req: IncomingMessage): Promise<IpLines> {
  const lines: string[] = [];
  let size = 0;
  let tail: Buffer | undefined = undefined;
  let over = false;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 2 * MAX_BULK_BODY_BYTES) {
      req.destroy();
      break;
    }
    if (size > MAX_BULK_BODY_BYTES) over = true;
    if (over) continue;
    const buf: Buffer = tail === undefined ? chunk : Buffer.concat([tail, chunk]);
    let start = 0;
    for (let nl = buf.indexOf(10); nl >= 0; nl = buf.indexOf(10, start)) {
      const end = nl > start && buf[nl - 1] === 13 ? nl - 1 : nl;
      lines.push(buf.toString('latin1', start, end));
      start = nl + 1;
    }
    tail = start < buf.length ? Buffer.from(buf.subarray(start)) : undefined;
  }
  if (over) {
    throw new HttpError(
      413,
      'FIBKEEPER_ERR_INVALID_ARGUMENT',
      `request body over ${MAX_BULK_BODY_BYTES} bytes (${MAX_BULK_BODY_BYTES >> 20} MiB); send the IPs in several requests (forwardable add --file adds to what the owner holds); nothing was changed`,
    );
  }
  if (tail !== undefined) lines.push(tail.toString('latin1'));
  return new IpLines(lines);
}

export interface ApiServerParams {
  socketPath: string;
  /** Mode of the socket file: 0o600 or 0o660. */
  socketMode: number;
  /** Optional "host:port"; empty for none. */
  tcp?: string;
  /** The secret TCP clients must send (`Authorization: Bearer <token>`); unix clients need none. */
  token?: Buffer;
  /** Deadline of every call; past it the answer is 503 with the reason. Default 10 s. */
  requestTimeoutMs?: number;
  handlers: ControlHandlers;
  log: Logger;
  /** The calls' deadlines; default the process clock. */
  clock?: Clock;
}

/** Default deadline of a call. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** How long past the deadline a handler may take to say why, before a generic 503. */
const DEADLINE_GRACE_MS = 250;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function statusOf(err: unknown): { status: number; code: string } {
  if (err instanceof HttpError) return { status: err.status, code: err.code };
  if (err instanceof FibkeeperError) {
    const status: Record<string, number> = {
      FIBKEEPER_ERR_INVALID_ARGUMENT: 400,
      FIBKEEPER_ERR_NOT_FOUND: 404,
      FIBKEEPER_ERR_CONFLICT: 409,
      FIBKEEPER_ERR_NOT_SUPPORTED: 501,
      FIBKEEPER_ERR_CLOSED: 503,
      FIBKEEPER_ERR_TIMEOUT: 503,
      FIBKEEPER_ERR_STORAGE: 507,
    };
    return { status: status[err.code] ?? 500, code: err.code };
  }
  return { status: 500, code: 'FIBKEEPER_ERR_INTERNAL' };
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  if ((req.headers['content-type'] ?? '').startsWith('text/plain')) return readLines(req);
  const chunks: Buffer[] = [];
  let size = 0;
  // Past the limit the rest is read and dropped (so the client sees the 413 instead of a
  // broken pipe), up to a hard cap where the connection is cut.
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 16 * MAX_BODY_BYTES) {
      req.destroy();
      break;
    }
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  if (size > MAX_BODY_BYTES) {
    throw new HttpError(
      413,
      'FIBKEEPER_ERR_INVALID_ARGUMENT',
      `request body over ${MAX_BODY_BYTES} bytes`,
    );
  }
  if (size === 0) return undefined;
  const type = req.headers['content-type'] ?? '';
  if (!type.startsWith('application/json')) {
    throw new HttpError(
      415,
      'FIBKEEPER_ERR_INVALID_ARGUMENT',
      'the body must be JSON (content-type: application/json), or for the forwardable endpoints one IP a line (content-type: text/plain)',
    );
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (err) {
    throw new HttpError(
      400,
      'FIBKEEPER_ERR_INVALID_ARGUMENT',
      `the body is not valid JSON: ${(err as Error).message}`,
    );
  }
}

export class ApiServer {
  #servers: Server[] = [];
  #tcpPort: number | undefined;

  /** The TCP port bound (with port 0 in api.tcp: the one the kernel chose). */
  get tcpPort(): number | undefined {
    return this.#tcpPort;
  }

  readonly #p: ApiServerParams;
  constructor(p: ApiServerParams) {
    this.#p = p;
    if (p.socketMode & 0o007) {
      throw new InvalidArgumentError(
        'api.socketMode must not give access to others (use 0600 or 0660)',
      );
    }
  }

  async #handle(req: IncomingMessage, res: ServerResponse, viaTcp: boolean): Promise<void> {
    let answered = false;
    const send = (status: number, body: unknown) => {
      if (answered || res.headersSent) return;
      answered = true;
      const text = JSON.stringify(body) + '\n';
      res.writeHead(status, { 'content-type': 'application/json' }).end(text);
    };
    const sendError = (err: unknown) => {
      const { status, code } = statusOf(err);
      // Only the agent's own failures are errors of the agent; a request it answers with
      // 4xx, 501 (a subsystem that is off), 503 (starting, deadline) or 507 (disk) is the
      // caller's business and goes to the debug log.
      if (status === 500) this.#p.log.error({ err }, 'control API request failed');
      else
        this.#p.log.debug({ status, code, err: describeError(err) }, 'control API request refused');
      if (status === 401) res.setHeader('www-authenticate', 'Bearer');
      const details = (err as { details?: unknown } | undefined)?.details;
      send(status, {
        error: {
          code,
          message: err instanceof Error ? err.message : String(err),
          // what a caller can act on without parsing the message (a conflict's MAC)
          ...(typeof details === 'object' && details !== null ? { details } : {}),
        },
      });
    };
    const timeoutMs = this.#p.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const deadline = new AbortController();
    const clock = this.#p.clock ?? systemClock;
    const timer = new Timer(clock);
    timer.start(timeoutMs, () => deadline.abort());
    // A handler that does not answer for itself soon after the deadline gets a generic 503.
    const backstop = new Timer(clock);
    backstop.start(timeoutMs + DEADLINE_GRACE_MS, () =>
      sendError(
        new TimeoutError(
          `no answer within ${timeoutMs} ms (api.requestTimeout); the outcome is unknown`,
        ),
      ),
    );
    try {
      if (viaTcp) this.#authorize(req);
      const url = new URL(req.url ?? '/', 'http://fibkeeper');
      const route = ROUTES.find((r) => r.path.test(url.pathname));
      if (!route)
        throw new HttpError(404, 'FIBKEEPER_ERR_NOT_FOUND', `no endpoint ${url.pathname}`);
      const handler = route.methods[req.method ?? 'GET'];
      if (!handler) {
        res.setHeader('allow', Object.keys(route.methods).join(', '));
        throw new HttpError(
          405,
          'FIBKEEPER_ERR_INVALID_ARGUMENT',
          `${req.method} is not allowed on ${url.pathname}`,
        );
      }
      const body = await readBody(req);
      const match = route.path.exec(url.pathname);
      const params: Record<string, string> = {};
      for (const [k, v] of Object.entries(match?.groups ?? {})) {
        try {
          params[k] = decodeURIComponent(v);
        } catch {
          throw new HttpError(
            400,
            'FIBKEEPER_ERR_INVALID_ARGUMENT',
            `the path segment ${JSON.stringify(v)} is not valid percent-encoding`,
          );
        }
      }
      const result = await handler(this.#p.handlers, {
        body,
        params,
        query: url.searchParams,
        signal: deadline.signal,
      });
      if (result instanceof StreamReply) {
        // A stream has no deadline: it lasts until the client hangs up.
        timer.cancel();
        backstop.cancel();
        if (answered || res.headersSent) return;
        answered = true;
        sendStream(req, res, result);
        return;
      }
      send(200, result ?? { ok: true });
    } catch (err) {
      sendError(err);
    } finally {
      timer.cancel();
      backstop.cancel();
    }
  }

  /** TCP clients send the token; compared in constant time (over digests of equal length). */
  #authorize(req: IncomingMessage): void {
    const token = this.#p.token;
    if (token === undefined) return;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    const digest = (b: Buffer) => createHash('sha256').update(b).digest();
    const given = Buffer.from(m?.[1] ?? '', 'utf8');
    if (!m || !timingSafeEqual(digest(given), digest(token))) {
      throw new HttpError(
        401,
        'FIBKEEPER_ERR_PERMISSION',
        'this TCP listener needs the token of api.tokenFile: send "Authorization: Bearer <token>"',
      );
    }
  }

  #newServer(viaTcp: boolean): Server {
    const s = createServer((req, res) => {
      void this.#handle(req, res, viaTcp);
    });
    return s;
  }

  async start(): Promise<void> {
    await this.#listenUnix();
    if (this.#p.tcp) {
      const { host, port } = parseHostPort(this.#p.tcp);
      const s = this.#newServer(true);
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, host, () => resolve());
      });
      this.#servers.push(s);
      const addr = s.address();
      this.#tcpPort = typeof addr === 'object' && addr ? addr.port : undefined;
      this.#p.log.warn(
        { address: this.#p.tcp, token: this.#p.token !== undefined },
        this.#p.token !== undefined
          ? 'control API also listening on TCP (token required)'
          : 'control API also listening on TCP without a token: every local user can control the agent',
      );
    }
  }

  async #listenUnix(): Promise<void> {
    const path = this.#p.socketPath;
    const dir = dirname(path);
    checkSocketDir(dir);
    await removeStaleSocket(path);
    const s = this.#newServer(false);
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      // Create the socket with no access for anyone but the owner, then widen to the mode.
      const old = process.umask(0o177);
      try {
        s.listen(path, () => resolve());
      } finally {
        process.umask(old);
      }
    });
    chmodSync(path, this.#p.socketMode);
    this.#servers.push(s);
    this.#p.log.info(
      { socket: path, mode: this.#p.socketMode.toString(8) },
      'control API listening',
    );
  }

  /** Graceful and idempotent; removes the socket file. */
  async stop(): Promise<void> {
    const servers = this.#servers;
    this.#servers = [];
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    if (servers.length > 0) {
      try {
        unlinkSync(this.#p.socketPath);
      } catch {
        /* already gone */
      }
    }
  }
}

/**
 * The socket's directory: created 0750 if absent; refused unless it is a directory owned by
 * root or by the agent's own user (another owner could swap in a socket of its own) and
 * closed to others.
 */
export function checkSocketDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  const st = statSync(dir);
  const me = process.geteuid?.() ?? 0;
  if (!st.isDirectory()) throw new ConflictError(`${dir} is not a directory; set api.socket`);
  if (st.uid !== 0 && st.uid !== me) {
    throw new ConflictError(
      `the socket directory ${dir} is owned by uid ${st.uid}, not by root or this agent's user (uid ${me}); its owner could replace the socket: chown ${me} ${dir}, or set api.socket elsewhere`,
    );
  }
  if ((st.mode & 0o007) !== 0) {
    throw new ConflictError(
      `the socket directory ${dir} is accessible to others (mode ${(st.mode & 0o777).toString(8)}); make it 0750 or 0700 (chmod o-rwx ${dir})`,
    );
  }
}

/** A socket file left by a crashed agent is removed; a live one means another agent runs. */
async function removeStaleSocket(path: string): Promise<void> {
  let isSocket = false;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return;
  }
  if (!isSocket)
    throw new ConflictError(`${path} exists and is not a socket; remove it or set api.socket`);
  const alive = await new Promise<boolean>((resolve) => {
    const c = createConnection(path);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
  if (alive) {
    throw new ConflictError(
      `another fibkeeper agent is serving ${path}; stop it first or set api.socket`,
    );
  }
  unlinkSync(path);
}
