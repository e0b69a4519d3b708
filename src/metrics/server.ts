// The HTTP listener for Prometheus scrapes and the health endpoints:
//   GET /metrics  the registry in the text exposition format
//   GET /livez    200 while the process works (its event loop answers this, its netlink
//                 sockets are open): for liveness probes; nothing else makes it fail, so
//                 a condition that a restart cannot cure never turns into a restart loop
//   GET /readyz   200 once the initial dumps and the first reconciliation are done
//   GET /healthz  200 when every reconciler is healthy, 503 with the reasons otherwise:
//                 "an operator should look" (alerts), never a reason to restart
import type { Server } from 'node:http';
import { createServer } from '../util/index.js';
import type { Registry } from 'prom-client';
import { FibkeeperError } from '../errors/index.js';
import { parseHostPort } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';

export interface HealthReport {
  ok: boolean;
  /** Short reasons when not ok ("neighbor reconciler: 3 errors"). */
  reasons: string[];
}

export interface MetricsServerParams {
  /** "127.0.0.1:9470", "[::1]:9470" (the config turns a bare IP into this form). */
  address: string;
  registry: Registry;
  live: () => HealthReport;
  health: () => HealthReport;
  ready: () => HealthReport;
  log: Logger;
}

export class MetricsServer {
  #server: Server | undefined;
  #boundPort = 0;
  readonly #p: MetricsServerParams;
  constructor(p: MetricsServerParams) {
    this.#p = p;
  }

  /** The port actually bound (useful with port 0). */
  get port(): number {
    return this.#boundPort;
  }

  async start(): Promise<void> {
    const { host, port } = parseHostPort(this.#p.address);
    const checks = new Map([
      ['/livez', this.#p.live],
      ['/readyz', this.#p.ready],
      ['/healthz', this.#p.health],
    ]);
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      if (path === '/metrics') {
        this.#p.registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': this.#p.registry.contentType }).end(text);
          },
          (err: unknown) => {
            this.#p.log.error({ err }, 'metrics collection failed');
            res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`);
          },
        );
        return;
      }
      const check = checks.get(path ?? '');
      if (check !== undefined) {
        const r = check();
        res
          .writeHead(r.ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' })
          .end(r.ok ? 'ok\n' : `${r.reasons.join('\n')}\n`);
        return;
      }
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: try /metrics, /livez, /readyz, /healthz\n');
    });
    await new Promise<void>((resolve, reject) => {
      const failed = (err: NodeJS.ErrnoException) => {
        const why =
          err.code === 'EADDRNOTAVAIL'
            ? ': not an address of this node (in the network namespace the agent runs in)'
            : err.code === 'EADDRINUSE'
              ? ': something else listens there already'
              : '';
        reject(
          new FibkeeperError(
            `metrics.address ${this.#p.address}: cannot listen (${err.code})${why}`,
            {
              cause: err,
              code: 'FIBKEEPER_ERR_SYSTEM',
            },
          ),
        );
      };
      server.once('error', failed);
      server.listen(port, host, () => {
        server.off('error', failed);
        resolve();
      });
    });
    const addr = server.address();
    this.#boundPort = typeof addr === 'object' && addr ? addr.port : port;
    this.#server = server;
    this.#p.log.info({ address: `${host}:${this.#boundPort}` }, 'metrics endpoint listening');
  }

  /** Graceful and idempotent. */
  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }
}
