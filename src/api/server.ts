// The control API: HTTP/JSON over a unix socket (and, only when configured, an explicit TCP
// address). Handlers are injected; this file only does transport, limits and error mapping.
import { mkdirSync, chmodSync, lstatSync, unlinkSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname } from 'node:path';
import { ConflictError, FibkeeperError, InvalidArgumentError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { parseHostPort } from '../metrics/index.js';
import { ROUTES, type ControlHandlers } from './routes.js';

/** Largest request body accepted (a list of a few thousand IPs fits). */
export const MAX_BODY_BYTES = 1 << 20;

export interface ApiServerParams {
  socketPath: string;
  /** Mode of the socket file: 0o600 or 0o660. */
  socketMode: number;
  /** Optional "host:port"; empty for none. */
  tcp?: string;
  handlers: ControlHandlers;
  log: Logger;
}

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
    };
    return { status: status[err.code] ?? 500, code: err.code };
  }
  return { status: 500, code: 'FIBKEEPER_ERR_INTERNAL' };
}

async function readBody(req: IncomingMessage): Promise<unknown> {
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
      'the body must be JSON (content-type: application/json)',
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
  private servers: Server[] = [];
  constructor(private readonly p: ApiServerParams) {
    if (p.socketMode & 0o007) {
      throw new InvalidArgumentError(
        'api.socketMode must not give access to others (use 0600 or 0660)',
      );
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body) + '\n';
      res.writeHead(status, { 'content-type': 'application/json' }).end(text);
    };
    try {
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
      const result = await handler(this.p.handlers, {
        body,
        params: match?.groups ?? {},
        query: url.searchParams,
      });
      send(200, result ?? { ok: true });
    } catch (err) {
      const { status, code } = statusOf(err);
      if (status >= 500) this.p.log.error({ err }, 'control API request failed');
      send(status, { error: { code, message: err instanceof Error ? err.message : String(err) } });
    }
  }

  private newServer(): Server {
    return createServer((req, res) => {
      void this.handle(req, res);
    });
  }

  async start(): Promise<void> {
    await this.listenUnix();
    if (this.p.tcp) {
      const { host, port } = parseHostPort(this.p.tcp);
      const s = this.newServer();
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, host, () => resolve());
      });
      this.servers.push(s);
      this.p.log.warn({ address: this.p.tcp }, 'control API also listening on TCP');
    }
  }

  private async listenUnix(): Promise<void> {
    const path = this.p.socketPath;
    const dir = dirname(path);
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    if ((statSync(dir).mode & 0o007) !== 0) {
      throw new ConflictError(
        `${dir} is accessible to others; make it 0750 or 0700 (chmod o-rwx ${dir})`,
      );
    }
    await removeStaleSocket(path);
    const s = this.newServer();
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
    chmodSync(path, this.p.socketMode);
    this.servers.push(s);
    this.p.log.info({ socket: path, mode: this.p.socketMode.toString(8) }, 'control API listening');
  }

  /** Graceful and idempotent; removes the socket file. */
  async stop(): Promise<void> {
    const servers = this.servers;
    this.servers = [];
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
        unlinkSync(this.p.socketPath);
      } catch {
        /* already gone */
      }
    }
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
