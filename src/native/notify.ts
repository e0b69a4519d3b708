// systemd's notification protocol (sd_notify(3)): "READY=1", "STATUS=...", "RELOADING=1",
// "STOPPING=1" as one datagram to the socket that $NOTIFY_SOCKET names.
import { InvalidArgumentError } from '../errors/index.js';
import { binding } from './binding.js';

/**
 * Sends `fields` (in order, one `KEY=value` line each) to `socket`: an absolute path or
 * "@name" for an abstract socket, as systemd sets NOTIFY_SOCKET. Throws SystemError when
 * the datagram cannot be sent (no listener: ECONNREFUSED or ENOENT).
 */
export function sdNotify(socket: string, fields: Readonly<Record<string, string | number>>): void {
  const lines = Object.entries(fields).map(([k, v]) => {
    const text = String(v);
    if (!/^[A-Z_][A-Z0-9_]*$/.test(k) || text.includes('\n')) {
      throw new InvalidArgumentError(`sdNotify: ${k}=${JSON.stringify(text)} is not KEY=one line`);
    }
    return `${k}=${text}`;
  });
  if (typeof socket !== 'string' || !/^[/@]./.test(socket)) {
    throw new InvalidArgumentError(
      `NOTIFY_SOCKET ${JSON.stringify(socket)} is neither an absolute path nor @name`,
    );
  }
  binding().sdNotify(socket, lines.join('\n'));
}
