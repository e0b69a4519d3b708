// NetlinkSocket: an AF_NETLINK socket from the addon, with checked options and a typed API.
import { InvalidArgumentError } from '../errors/index.js';
import { checkBool, checkBuffer, checkNetns, checkReceiver, checkUint } from './args.js';
import {
  binding,
  type RawNetlinkOptions,
  type RawNetlinkSocket,
  type SystemError,
} from './binding.js';
import { adopt, openHandle, PolledSocket } from './handle.js';

/** Options of NetlinkSocket.open: the addon's own (see RawNetlinkOptions), checked first. */
export interface NetlinkSocketOptions extends RawNetlinkOptions {}

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
 * batches of whole datagrams (only those sent by the kernel) to a receiver. `pause()` leaves
 * datagrams queued in the kernel; `close()` stops polling and closes the socket.
 */
export class NetlinkSocket extends PolledSocket<RawNetlinkSocket> {
  /** The port id the socket is bound to (as getsockname reports it). */
  readonly portId: number;

  private constructor(handle: RawNetlinkSocket) {
    super(handle, 'netlink socket');
    this.portId = handle.portId;
  }

  /** Opens, configures and binds a netlink socket. Throws SystemError or InvalidArgumentError. */
  static open(opts: NetlinkSocketOptions = {}): NetlinkSocket {
    const handle = new (binding().NetlinkSocket)(nativeOptions(opts));
    return adopt(handle, (h) => new NetlinkSocket(h));
  }

  /** One non-blocking sendmsg to the kernel (one iovec per buffer). Returns bytes sent. Throws SystemError. */
  send(data: Buffer | readonly Buffer[]): number {
    const handle = openHandle(this);
    const list = Buffer.isBuffer(data) ? [data] : data;
    if (!Array.isArray(list))
      throw new InvalidArgumentError('send: data must be a Buffer or Buffer[]');
    list.forEach((b, i) => checkBuffer(`send: data[${i}]`, b));
    return handle.send(list);
  }

  /**
   * Starts the socket's send thread (see submit). `onError` hears of a queued send that
   * failed: none of its messages, sequence numbers `firstSeq` to `lastSeq`, reached the
   * kernel. Idempotent (the first handler stays).
   */
  startSender(onError: (err: SystemError, firstSeq: number, lastSeq: number) => void): void {
    if (typeof onError !== 'function')
      throw new InvalidArgumentError('startSender: onError must be a function');
    openHandle(this).startSender(onError);
  }

  /**
   * One sendmsg of `data`, in order with every earlier submit, on the send thread: the
   * kernel does a request's work inside sendmsg, and there it does not hold up the JS
   * thread. With `queue` false and nothing queued, `data` is sent at once on this thread
   * (a failure throws SystemError) and true is returned; otherwise a copy is queued (a
   * failure goes to startSender's onError) and false is returned.
   */
  submit(data: Buffer, queue: boolean): boolean {
    const handle = openHandle(this);
    checkBuffer('submit: data', data);
    return handle.submit(data, queue === true);
  }

  /** Joins multicast group `group` (an RTNLGRP_* number). */
  addMembership(group: number): void {
    openHandle(this).addMembership(checkUint('group', group, 0xffff_ffff, 1));
  }

  /** Leaves multicast group `group`. */
  dropMembership(group: number): void {
    openHandle(this).dropMembership(checkUint('group', group, 0xffff_ffff, 1));
  }

  /** Sets SO_RCVBUF(FORCE); returns the effective size the kernel reports (usually 2 × bytes). */
  setReceiveBuffer(bytes: number): number {
    return openHandle(this).setReceiveBuffer(checkUint('bytes', bytes, 0x7fff_ffff, 1));
  }

  /** Starts libuv polling; batches of datagrams go to `receiver`. Calling it again replaces the receiver. */
  receive(receiver: NetlinkReceiver): void {
    const handle = openHandle(this);
    checkReceiver(receiver, ['onData', 'onError']);
    handle.receive(
      (chunk) => receiver.onData(chunk),
      (err) => receiver.onError(err),
    );
  }
}
