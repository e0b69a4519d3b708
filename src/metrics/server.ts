// The HTTP listener for Prometheus scrapes and the health endpoints:
//   GET /metrics  the registry in the text exposition format
//   GET /healthz  200 when every reconciler is healthy, 503 with the reasons otherwise
//   GET /readyz   200 once the initial dumps and the first reconciliation are done
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { InvalidArgumentError } from '../errors/index.js';
import type { Logger } from '../log/index.js';

export interface HealthReport {
  ok: boolean;
  /** Short reasons when not ok ("neighbor reconciler: 3 errors"). */
  reasons: string[];
}

export interface MetricsServerParams {
  /** "127.0.0.1:9470", "[::1]:9470". */
  address: string;
  registry: Registry;
  health: () => HealthReport;
  ready: () => HealthReport;
  log: Logger;
}

export function parseHostPort(address: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(address);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new InvalidArgumentError(`"${address}" is not host:port (e.g. 127.0.0.1:9470)`);
  }
  return { host: (m[1] ?? m[2]) as string, port };
}

export class MetricsServer {
  private server: Server | undefined;
  private boundPort = 0;
  constructor(private readonly p: MetricsServerParams) {}

  /** The port actually bound (useful with port 0). */
  get port(): number {
    return this.boundPort;
  }

  async start(): Promise<void> {
    const { host, port } = parseHostPort(this.p.address);
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      if (path === '/metrics') {
        this.p.registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': this.p.registry.contentType }).end(text);
          },
          (err: unknown) => {
            this.p.log.error({ err }, 'metrics collection failed');
            res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`);
          },
        );
        return;
      }
      if (path === '/healthz' || path === '/readyz') {
        const r = path === '/healthz' ? this.p.health() : this.p.ready();
        res
          .writeHead(r.ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' })
          .end(r.ok ? 'ok\n' : `${r.reasons.join('\n')}\n`);
        return;
      }
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: try /metrics, /healthz, /readyz\n');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    this.boundPort = typeof addr === 'object' && addr ? addr.port : port;
    this.server = server;
    this.p.log.info({ address: `${host}:${this.boundPort}` }, 'metrics endpoint listening');
  }

  /** Graceful and idempotent. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }
}
