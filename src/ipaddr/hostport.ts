// Listen addresses: host:port with an IPv4 literal, a bracketed IPv6 literal or localhost,
// and — where a default port exists — a bare IPv4 or IPv6 address, which is what the
// Kubernetes downward API (status.hostIP) and most tools hand over.
import { InvalidArgumentError } from '../errors/index.js';
import { ipFamilyOf, parseIp, type IpFamily } from './address.js';

export interface HostPort {
  /** Canonical IP text (no brackets), or "localhost". */
  host: string;
  port: number;
  /** 4 or 6; 0 for localhost (either family, as the resolver says). */
  family: IpFamily | 0;
}

export interface ParseHostPortOptions {
  /** Port of a bare address ("10.0.0.5", "fd00::5", "[fd00::5]"); without it, one is required. */
  defaultPort?: number;
}

/**
 * Parses "10.0.0.5:9470", "[fd00::5]:9470", "localhost:9470" and, with `defaultPort`, the
 * bare forms "10.0.0.5", "fd00::5" and "[fd00::5]". An unbracketed IPv6 address is always
 * the whole address ("fd00::5:9470" is the address fd00::5:9470): a port after an IPv6
 * address needs brackets. Throws InvalidArgumentError naming the problem and the fix.
 */
export function parseHostPort(text: string, options: ParseHostPortOptions = {}): HostPort {
  if (text === '') throw new InvalidArgumentError('address is empty; write host:port');
  const bare = (host: string): HostPort => {
    const ip = parseIp(host);
    if (options.defaultPort === undefined) {
      const shown = ip.family === 6 ? `[${host}]` : host;
      throw new InvalidArgumentError(`"${text}" has no port: write ${shown}:PORT`);
    }
    return { host: ip.address, port: options.defaultPort, family: ip.family };
  };
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
  if (bracketed) {
    const inner = bracketed[1] as string;
    if (ipFamilyOf(inner) === 4) {
      throw new InvalidArgumentError(
        `"${text}": brackets are for IPv6 addresses; write ${inner}:PORT`,
      );
    }
    const ip = parseIp(inner);
    if (ip.family !== 6) throw new InvalidArgumentError(`"${text}": not an IPv6 address`);
    if (bracketed[2] === undefined) return bare(inner);
    return { host: ip.address, port: parsePort(text, bracketed[2]), family: 6 };
  }
  const colons = text.split(':').length - 1;
  if (colons >= 2) return bare(text); // IPv6 without brackets: an address, never a port
  if (colons === 0) {
    if (ipFamilyOf(text) === 4) return bare(text);
    throw new InvalidArgumentError(`"${text}" is not host:port (e.g. 127.0.0.1:9470)`);
  }
  const [host, port] = text.split(':') as [string, string];
  if (host !== 'localhost' && ipFamilyOf(host) !== 4) {
    if (/^[0-9.]+$/.test(host)) parseIp(host); // explains what is wrong with the number
    throw new InvalidArgumentError(
      `"${text}": the host must be an IP address or localhost (names are not resolved)`,
    );
  }
  const family = host === 'localhost' ? 0 : 4;
  return { host: family === 4 ? parseIp(host).address : host, port: parsePort(text, port), family };
}

function parsePort(text: string, port: string): number {
  if (!/^\d{1,5}$/.test(port)) {
    throw new InvalidArgumentError(`"${text}" is not host:port: "${port}" is not a port number`);
  }
  const n = Number(port);
  if (n > 65535) throw new InvalidArgumentError(`"${text}": port ${n} is above 65535`);
  return n;
}

/** The text form: "10.0.0.5:9470", "[fd00::5]:9470", "localhost:9470". */
export function formatHostPort(a: HostPort): string {
  return a.family === 6 ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
