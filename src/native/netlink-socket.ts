// NetlinkSocket: an AF_NETLINK socket from the addon, with checked options and a typed API.
import { ClosedError, InvalidArgumentError } from '../errors/index.js';
import { checkBool, checkBuffer, checkFunction, checkNetns, checkUint } from './args.js';
import {
  binding,
  type RawNetlinkOptions,
  type RawNetlinkSocket,
  type SystemError,
} from './binding.js';

export interface NetlinkSocketOptions {
  /** Netlink protocol; default 0 = NETLINK_ROUTE. */
  protocol?: number;
  /**
   * Network namespace the socket lives in: a name under /run/netns or an absolute path to a
   * netns file. The addon enters it on the calling thread only for socket(), then goes back.
   */
  netns?: string;
  /** Bind to this port id; default 0 (the kernel assigns one, see `portId`). */
  portId?: number;
  /** Multicast groups (RTNLGRP_* numbers) joined with NETLINK_ADD_MEMBERSHIP after bind. */
  groups?: number[];
  /** Receive buffer in bytes: SO_RCVBUFFORCE, falling back to SO_RCVBUF when not permitted. */
  rcvbuf?: number;
  /** Send buffer in bytes: SO_SNDBUFFORCE, falling back to SO_SNDBUF. */
  sndbuf?: number;
  /** NETLINK_EXT_ACK; default true (tolerated as absent on kernels without it). */
  extAck?: boolean;
  /** NETLINK_CAP_ACK; default true (tolerated as absent on kernels without it). */
  capAck?: boolean;
  /** NETLINK_GET_STRICT_CHK; default false. */
  strictCheck?: boolean;
  /** NETLINK_NO_ENOBUFS; default false. */
  noEnobufs?: boolean;
}

export interface NetlinkReceiver {
  /** One or more whole datagrams, concatenated; each datagram is padded to a 4-byte boundary. */
  onData(chunk: Buffer): void;
  /** A receive error (ENOBUFS above all). The socket keeps polling afterwards unless the error is fatal. */
  onError(err: SystemError): void;
}

const NETLINK_MAX_PROTOCOL = 31;

function nativeOptions(opts: NetlinkSocketOptions): RawNetlinkOptions {
  if (typeof opts !== 'object' || opts === null) {
    throw new InvalidArgumentError('netlink socket options must be an object');
  }
  const out: RawNetlinkOptions = {};
  if (opts.protocol !== undefined)
    out.protocol = checkUint('protocol', opts.protocol, NETLINK_MAX_PROTOCOL);
  if (opts.netns !== undefined) out.netns = checkNetns('netns', opts.netns);
  if (opts.portId !== undefined) out.portId = checkUint('portId', opts.portId);
  if (opts.groups !== undefined) {
    if (!Array.isArray(opts.groups)) throw new InvalidArgumentError('groups must be an array');
    out.groups = opts.groups.map((g, i) => checkUint(`groups[${i}]`, g, 0xffff_ffff, 1));
  }
  if (opts.rcvbuf !== undefined) out.rcvbuf = checkUint('rcvbuf', opts.rcvbuf, 0x7fff_ffff, 1);
  if (opts.sndbuf !== undefined) out.sndbuf = checkUint('sndbuf', opts.sndbuf, 0x7fff_ffff, 1);
  for (const key of ['extAck', 'capAck', 'strictCheck', 'noEnobufs'] as const) {
    const v = opts[key];
    if (v !== undefined) out[key] = checkBool(key, v);
  }
  return out;
}

/**
 * A netlink socket: non-blocking `send`, and `receive` that polls on the libuv loop and hands
 * batches of whole datagrams (only those sent by the kernel) to a receiver.
 */
export class NetlinkSocket {
  readonly #handle: RawNetlinkSocket;
  /** The port id the socket is bound to (as getsockname reports it). */
  readonly portId: number;
  #closed = false;

  private constructor(handle: RawNetlinkSocket) {
    this.#handle = handle;
    this.portId = handle.portId;
  }

  /** Opens, configures and binds a netlink socket. Throws SystemError or InvalidArgumentError. */
  static open(opts: NetlinkSocketOptions = {}): NetlinkSocket {
    const handle = new (binding().NetlinkSocket)(nativeOptions(opts));
    try {
      return new NetlinkSocket(handle);
    } catch (err) {
      handle.close();
      throw err;
    }
  }

  /** The socket's file descriptor, -1 after close(). */
  get fd(): number {
    return this.#handle.fd;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** One non-blocking sendmsg to the kernel (one iovec per buffer). Returns bytes sent. Throws SystemError. */
  send(data: Buffer | readonly Buffer[]): number {
    this.#checkOpen();
    const list = Buffer.isBuffer(data) ? [data] : data;
    if (!Array.isArray(list))
      throw new InvalidArgumentError('send: data must be a Buffer or Buffer[]');
    list.forEach((b, i) => checkBuffer(`send: data[${i}]`, b));
    return this.#handle.send(list);
  }

  /** Joins multicast group `group` (an RTNLGRP_* number). */
  addMembership(group: number): void {
    this.#checkOpen();
    this.#handle.addMembership(checkUint('group', group, 0xffff_ffff, 1));
  }

  /** Leaves multicast group `group`. */
  dropMembership(group: number): void {
    this.#checkOpen();
    this.#handle.dropMembership(checkUint('group', group, 0xffff_ffff, 1));
  }

  /** Sets SO_RCVBUF(FORCE); returns the effective size the kernel reports (usually 2 × bytes). */
  setReceiveBuffer(bytes: number): number {
    this.#checkOpen();
    return this.#handle.setReceiveBuffer(checkUint('bytes', bytes, 0x7fff_ffff, 1));
  }

  /** Starts libuv polling; batches of datagrams go to `receiver`. Calling it again replaces the receiver. */
  receive(receiver: NetlinkReceiver): void {
    this.#checkOpen();
    if (typeof receiver !== 'object' || receiver === null) {
      throw new InvalidArgumentError('receive: receiver must be an object');
    }
    checkFunction('receiver.onData', receiver.onData);
    checkFunction('receiver.onError', receiver.onError);
    this.#handle.receive(
      (chunk) => receiver.onData(chunk),
      (err) => receiver.onError(err),
    );
  }

  /** Stops polling (datagrams stay queued in the kernel). */
  pause(): void {
    if (!this.#closed) this.#handle.pause();
  }

  /** The poll keeps the event loop alive (the default while receiving). */
  ref(): void {
    if (!this.#closed) this.#handle.ref();
  }

  /** The poll no longer keeps the event loop alive. */
  unref(): void {
    if (!this.#closed) this.#handle.unref();
  }

  /** Stops polling and closes the socket. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#handle.close();
  }

  #checkOpen(): void {
    if (this.#closed) throw new ClosedError('netlink socket is closed');
  }
}
