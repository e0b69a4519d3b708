// PacketSocket: AF_PACKET/SOCK_RAW bound to one interface, for gratuitous ARP / unsolicited
// neighbor advertisements (send) and for watching frames in tests and tools (receive).
import { endianness } from 'node:os';
import { InvalidArgumentError } from '../errors/index.js';
import { checkBool, checkBuffer, checkNetns, checkReceiver, checkUint } from './args.js';
import {
  binding,
  type RawPacketOptions,
  type RawPacketSocket,
  type SystemError,
} from './binding.js';
import { adopt, openHandle, PolledSocket } from './handle.js';
import { w16be, w16le, w32be, w32le } from '../util/index.js';

/** Every ethertype (the default filter). */
export const ETH_P_ALL = 0x0003;
export const ETH_P_IP = 0x0800;
export const ETH_P_ARP = 0x0806;
export const ETH_P_IPV6 = 0x86dd;

export interface PacketSocketOptions {
  /** Interface to bind to (in `netns` when given). */
  ifindex: number;
  /** Ethertype filter (host order); default ETH_P_ALL. */
  protocol?: number;
  /** Network namespace of the interface: a name under /run/netns or an absolute path. */
  netns?: string;
  /** PACKET_IGNORE_OUTGOING: do not receive frames this host sends (kernel 4.20+). */
  ignoreOutgoing?: boolean;
  /** Receive buffer in bytes (SO_RCVBUFFORCE, falling back to SO_RCVBUF). */
  rcvbuf?: number;
}

/** sll_pkttype of a received frame. */
export type PacketType =
  'host' | 'broadcast' | 'multicast' | 'otherhost' | 'outgoing' | 'loopback' | 'user' | 'kernel';

const PACKET_TYPES: readonly PacketType[] = [
  'host',
  'broadcast',
  'multicast',
  'otherhost',
  'outgoing',
  'loopback',
  'user',
  'kernel',
];

export interface FrameInfo {
  ifindex: number;
  /** Ethertype (host order). */
  protocol: number;
  pktType: PacketType;
}

export interface PacketReceiver {
  /** One frame (Ethernet header included). Frames of one batch share one backing buffer. */
  onFrame(frame: Buffer, info: FrameInfo): void;
  onError(err: SystemError): void;
}

/**
 * A raw packet socket bound to one interface and one ethertype (or all). `pause()` leaves
 * frames queued in the kernel until the receive buffer is full; `close()` is idempotent.
 */
export class PacketSocket extends PolledSocket<RawPacketSocket> {
  readonly ifindex: number;
  readonly protocol: number;

  private constructor(handle: RawPacketSocket, ifindex: number, protocol: number) {
    super(handle, 'packet socket');
    this.ifindex = ifindex;
    this.protocol = protocol;
  }

  /** Opens and binds the socket. Throws SystemError (ENODEV: no such interface) or InvalidArgumentError. */
  static open(opts: PacketSocketOptions): PacketSocket {
    if (typeof opts !== 'object' || opts === null) {
      throw new InvalidArgumentError('packet socket options must be an object');
    }
    const raw: RawPacketOptions = {
      ifindex: checkUint('ifindex', opts.ifindex, 0x7fff_ffff, 1),
      protocol: checkUint('protocol', opts.protocol ?? ETH_P_ALL, 0xffff),
    };
    if (opts.netns !== undefined) raw.netns = checkNetns('netns', opts.netns);
    if (opts.ignoreOutgoing !== undefined)
      raw.ignoreOutgoing = checkBool('ignoreOutgoing', opts.ignoreOutgoing);
    if (opts.rcvbuf !== undefined) raw.rcvbuf = checkUint('rcvbuf', opts.rcvbuf, 0x7fff_ffff, 1);
    const handle = new (binding().PacketSocket)(raw);
    return adopt(handle, (h) => new PacketSocket(h, raw.ifindex, raw.protocol));
  }

  /** Sends one whole frame (Ethernet header included) out of the bound interface. Returns bytes sent. */
  send(frame: Buffer): number {
    return openHandle(this).send(checkBuffer('frame', frame));
  }

  /**
   * Joins (`join` true) or leaves a link-layer multicast group on the bound interface, like
   * `ip maddr add MAC dev IFACE` but owned by this socket: the interface then accepts frames
   * sent to `mac`, and the kernel leaves the group when the socket closes. Joining twice
   * counts twice. Throws SystemError (EINVAL: not a multicast MAC).
   */
  membership(mac: Buffer, join: boolean): void {
    const m = checkBuffer('mac', mac);
    if (m.length !== 6 || (m[0]! & 1) === 0) {
      throw new InvalidArgumentError(`membership: ${m.toString('hex')} is not a multicast MAC`);
    }
    openHandle(this).membership(m, checkBool('join', join));
  }

  /**
   * Attaches a classic BPF filter (`struct sock_filter` instructions, 8 bytes each, as
   * `tcpdump -dd` prints them): only frames it accepts are received (SO_ATTACH_FILTER).
   * Frames queued before the call (the socket receives from the moment it opens) are dropped.
   */
  attachFilter(program: Buffer): void {
    const p = checkBuffer('program', program);
    if (p.length === 0 || p.length % 8 !== 0 || p.length > 8 * 4096) {
      throw new InvalidArgumentError(
        'attachFilter: the program is 1 to 4096 instructions of 8 bytes',
      );
    }
    openHandle(this).attachFilter(p);
  }

  /**
   * Starts polling; each received frame goes to `receiver.onFrame` with its own info. Calling
   * it again replaces the receiver. If onFrame throws, the rest of the batch is still
   * delivered and the first exception is rethrown afterwards (an uncaught exception).
   */
  receive(receiver: PacketReceiver): void {
    const handle = openHandle(this);
    checkReceiver(receiver, ['onFrame', 'onError']);
    handle.receive(
      (frames, meta) => deliverFrames(receiver, frames, meta),
      (err) => receiver.onError(err),
    );
  }
}

function deliverFrames(receiver: PacketReceiver, frames: Buffer, meta: Uint32Array): void {
  let first: { err: unknown } | undefined;
  for (let i = 0; i + 5 <= meta.length; i += 5) {
    const offset = meta[i] ?? 0;
    const length = meta[i + 1] ?? 0;
    const info: FrameInfo = {
      ifindex: meta[i + 2] ?? 0,
      protocol: meta[i + 3] ?? 0,
      pktType: PACKET_TYPES[meta[i + 4] ?? 0] ?? 'kernel',
    };
    try {
      receiver.onFrame(frames.subarray(offset, offset + length), info);
    } catch (err) {
      first ??= { err };
    }
  }
  if (first) throw first.err;
}

/** One classic BPF instruction (`struct sock_filter`, host byte order) for attachFilter(). */
export function bpfInsn(code: number, jt: number, jf: number, k: number): Buffer {
  const b = Buffer.alloc(8);
  const le = endianness() === 'LE';
  if (le) w16le(b, code, 0);
  else w16be(b, code, 0);
  b[2] = jt;
  b[3] = jf;
  if (le) w32le(b, k >>> 0, 4);
  else w32be(b, k >>> 0, 4);
  return b;
}
