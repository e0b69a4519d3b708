// The peer heartbeat's sockets: UDP in the managed network namespace (src/native creates
// them there; Node's dgram takes them over). One socket listens on the node's heartbeat
// address; each peer gets a socket of its own, connected to the peer's address, so that the
// kernel reports a refusal (ICMP port unreachable: the peer's process is gone) on exactly
// that peer's socket (ECONNREFUSED).
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import { describeError, FibkeeperError } from '../errors/index.js';
import { udpSocketIn } from '../native/index.js';
import type { PeerAddress, PeerTransport, PeerTransportHandlers } from './peers.js';

export interface UdpPeerTransportOptions {
  /** This node's heartbeat address (its first node IP) and port. */
  local: PeerAddress;
  /** The managed namespace (name or path); default the process's own. */
  netns?: string;
  log?: (msg: string, err?: unknown) => void;
}

export class UdpPeerTransport implements PeerTransport {
  readonly local: PeerAddress;
  readonly #netns: string | undefined;
  readonly #log: ((msg: string, err?: unknown) => void) | undefined;
  readonly #family: 4 | 6;
  #listener: Socket | undefined;
  readonly #peers = new Map<string, Socket>();
  #handlers: PeerTransportHandlers | undefined;
  #closed = false;

  constructor(o: UdpPeerTransportOptions) {
    this.local = o.local;
    this.#netns = o.netns;
    this.#log = o.log;
    this.#family = isIPv6(o.local.ip) ? 6 : 4;
  }

  async open(handlers: PeerTransportHandlers): Promise<void> {
    this.#handlers = handlers;
    let fd: number;
    try {
      fd = udpSocketIn(this.#family, this.local.ip, this.local.port, this.#netns);
    } catch (err) {
      throw new FibkeeperError(
        `cluster heartbeat: cannot listen on ${this.local.ip} port ${this.local.port} (the first of cluster.nodeIPs, cluster.heartbeatPort): ${describeError(err)}; give a node IP of this node, or a free port`,
        { cause: err },
      );
    }
    const s = createSocket({ type: this.#family === 4 ? 'udp4' : 'udp6' });
    s.on('message', (msg) => handlers.onMessage(msg));
    s.on('error', (err) => this.#log?.('cluster heartbeat socket', err));
    bindFd(s, fd);
    this.#listener = s;
  }

  connect(node: string, addr: PeerAddress): void {
    this.disconnect(node);
    if (this.#closed) return;
    if ((isIPv6(addr.ip) ? 6 : 4) !== this.#family) {
      this.#log?.(`cluster heartbeat: ${node} listens on ${addr.ip}, another address family`);
      return;
    }
    let fd: number;
    try {
      fd = udpSocketIn(this.#family, this.local.ip, 0, this.#netns);
    } catch (err) {
      this.#log?.(`cluster heartbeat: no socket for ${node}`, err);
      return;
    }
    const s = createSocket({ type: this.#family === 4 ? 'udp4' : 'udp6' });
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') this.#handlers?.onRefused(node);
      else this.#log?.(`cluster heartbeat to ${node}`, err);
    });
    // Datagrams from the peer to this socket are not heartbeats (those go to the listener).
    s.on('message', () => undefined);
    try {
      bindFd(s, fd);
      s.connect(addr.port, addr.ip);
    } catch (err) {
      this.#log?.(`cluster heartbeat: socket for ${node}: ${describeError(err)}`);
      close(s);
      return;
    }
    this.#peers.set(node, s);
  }

  disconnect(node: string): void {
    const s = this.#peers.get(node);
    if (s === undefined) return;
    this.#peers.delete(node);
    close(s);
  }

  send(node: string, msg: Buffer): void {
    const s = this.#peers.get(node);
    if (s === undefined) return;
    try {
      s.send(msg, (err) => {
        if (err && (err as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
          this.#handlers?.onRefused(node);
        }
      });
    } catch {
      // not connected yet (bind or connect pending): a lost heartbeat
    }
  }

  close(): void {
    this.#closed = true;
    for (const node of [...this.#peers.keys()]) this.disconnect(node);
    if (this.#listener) close(this.#listener);
    this.#listener = undefined;
  }
}

/**
 * Takes over a bound descriptor. dgram binds an `fd` synchronously and emits 'listening'
 * before a callback given to bind() could be attached, so none is.
 */
function bindFd(s: Socket, fd: number): void {
  s.bind({ fd });
}

function close(s: Socket): void {
  try {
    s.close();
  } catch {
    // closed already
  }
}
