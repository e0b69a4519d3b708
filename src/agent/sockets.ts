// A kernel socket the agent holds was closed and opened afresh (netlink/health.ts, the
// xdp_features socket, the packet sockets): one log line with the errno, and the count in
// fibkeeper_socket_reopens_total{socket}; a reopen that failed is logged as an error (it is
// tried again, and /livez says so meanwhile).
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import type { SocketName } from '../netlink/index.js';
import type { AgentMetrics } from './metrics.js';

export function reportReopen(
  log: Logger,
  metrics: Pick<AgentMetrics, 'socketReopens'>,
  socket: SocketName,
  cause: string,
  err?: unknown,
): void {
  if (err === undefined) {
    metrics.socketReopens.inc({ socket });
    log.warn({ socket, errno: cause }, `kernel socket ${socket} reopened after ${cause}`);
  } else {
    log.error(
      { socket, errno: cause, err: describeError(err) },
      `kernel socket ${socket} could not be reopened after ${cause}; tried again`,
    );
  }
}
