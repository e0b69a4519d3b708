// The CLI's side of the control API: JSON requests over the unix socket, and streams of JSON
// lines (GET /v1/events).
import type { ClientRequest } from 'node:http';
import { request } from '../util/index.js';
import { FibkeeperError, type ErrorCode } from '../errors/index.js';

export class ApiError extends FibkeeperError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(message, {
      code: code.startsWith('FIBKEEPER_ERR_') ? (code as ErrorCode) : 'FIBKEEPER_ERR_INTERNAL',
    });
  }
}

export class ApiClient {
  readonly #socketPath: string;
  readonly #timeoutMs;
  constructor(socketPath: string, timeoutMs = 30_000) {
    this.#socketPath = socketPath;
    this.#timeoutMs = timeoutMs;
  }

  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return this.#send<T>(method, path, payload, 'application/json');
  }

  /** A bulk request: `lines` (one IP a line) sent as a text/plain body of any size. */
  async callLines<T = unknown>(method: string, path: string, lines: Buffer): Promise<T> {
    return this.#send<T>(method, path, lines, 'text/plain');
  }

  /**
   * A streamed GET: `onItem` gets each JSON line of the answer as it arrives; resolves when
   * the agent ends the stream, or when `signal` aborts (the connection is closed then). The
   * timeout applies until the answer starts: a followed stream may be quiet for long.
   */
  stream(path: string, onItem: (item: unknown) => void, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let started = false; // the answer started: the socket's idle timeout no longer counts
      const req = request(
        { socketPath: this.#socketPath, method: 'GET', path, timeout: this.#timeoutMs },
        (res) => {
          started = true;
          if ((res.statusCode ?? 500) >= 400) {
            this.#collect(res, res.statusCode ?? 500, () => resolve(), reject);
            return;
          }
          let rest = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            const lines = (rest + chunk).split('\n');
            rest = lines.pop() ?? '';
            try {
              for (const line of lines) if (line.trim() !== '') onItem(JSON.parse(line));
            } catch (err) {
              req.destroy(err as Error);
            }
          });
          res.on('end', () => resolve());
          res.on('error', reject);
        },
      );
      if (signal) {
        if (signal.aborted) return resolve();
        signal.addEventListener('abort', () => (req.destroy(), resolve()), { once: true });
      }
      this.#onError(req, reject, () => started);
      req.end();
    });
  }

  #send<T>(
    method: string,
    path: string,
    payload: string | Buffer | undefined,
    type: string,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const req = request(
        {
          socketPath: this.#socketPath,
          method,
          path,
          timeout: this.#timeoutMs,
          headers: payload
            ? { 'content-type': type, 'content-length': Buffer.byteLength(payload) }
            : {},
        },
        (res) => this.#collect(res, res.statusCode ?? 500, resolve, reject),
      );
      this.#onError(req, reject);
      if (payload) req.write(payload);
      req.end();
    });
  }

  /** The whole answer, parsed: resolves a 2xx, rejects others with the agent's error. */
  #collect<T>(
    res: NodeJS.ReadableStream,
    status: number,
    resolve: (v: T) => void,
    reject: (e: Error) => void,
  ): void {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(Buffer.from(c)));
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        reject(new ApiError(status, 'FIBKEEPER_ERR_INTERNAL', `bad reply: ${text.slice(0, 200)}`));
        return;
      }
      if (status >= 400) {
        const e = (parsed as { error?: { code?: string; message?: string } }).error ?? {};
        reject(new ApiError(status, e.code ?? 'FIBKEEPER_ERR_INTERNAL', e.message ?? text));
      } else resolve(parsed as T);
    });
  }

  /** Turns a failed connection into the error that says what to do. */
  #onError(req: ClientRequest, reject: (e: Error) => void, started = () => false): void {
    // the `timeout` option: the socket's idle timeout (Node's, not a timer of ours)
    req.on('timeout', () => {
      if (started()) return;
      req.destroy(new Error(`no answer from ${this.#socketPath} in ${this.#timeoutMs} ms`));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
        // The errno is in the message; the cause ("connect ENOENT PATH") would say it again.
        reject(
          new FibkeeperError(
            `cannot reach the agent at ${this.#socketPath} (${err.code}): is \`fibkeeper run\` running? (--socket, --config or FIBKEEPER_SOCKET name its socket)`,
            { code: 'FIBKEEPER_ERR_NOT_FOUND' },
          ),
        );
      } else if (err.code === 'EACCES') {
        reject(
          new FibkeeperError(
            `permission denied on ${this.#socketPath}: run as root or as a member of its group`,
            { code: 'FIBKEEPER_ERR_PERMISSION', cause: err },
          ),
        );
      } else reject(err);
    });
  }
}
