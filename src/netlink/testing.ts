// Test doubles of the netlink client (only tests import this): a scripted fake kernel behind
// the Transport interface, with or without a send thread.
import type { NetlinkReceiver, SystemError } from '../native/index.js';
import * as C from './codec/index.js';
import { NetlinkHandle } from './handle.js';
import { formatErrorMessage, type NlMsgHeader, readHeader, Writer } from './codec/index.js';

export const PORT = 4242;

/** A request as the fake kernel saw it. */
export interface Req {
  header: NlMsgHeader;
  msg: Buffer;
  /** Index of the sendmsg it came in. */
  send: number;
}

/** What the fake kernel answers a request with: replies, or nothing (no ack asked). */
export type Script = (req: Req, w: Writer) => void;

export function ack(w: Writer, req: Req, errno = 0, message?: string): void {
  formatErrorMessage(w, req.header.seq, PORT, errno, req.header, { message });
}

/** Acks like the kernel: errors always, success only when NLM_F_ACK was asked for. */
export const kernelAck =
  (fail: (req: Req) => number = () => 0): Script =>
  (req, w) => {
    const errno = fail(req);
    if (errno !== 0 || req.header.flags & C.NLM_F_ACK) ack(w, req, errno);
  };

export class FakeKernel {
  readonly portId = PORT;
  readonly requests: Req[] = [];
  sends = 0;
  refs = 0;
  closed = false;
  receiver: NetlinkReceiver | undefined;
  /** Drop the replies of the next sendmsg and report ENOBUFS. */
  overflowNext = false;
  /** Swallow the acks of this many NOOP probes (a still-congested socket drops them). */
  dropProbes = 0;
  /** Hold replies instead of delivering them (tests release them). */
  hold = false;
  held: Buffer[] = [];
  rcvbuf = 1 << 20;
  /** The multicast groups it was opened with (a subscription's socket). */
  groups: number[] | undefined;
  paused = false;

  constructor(public script: Script = kernelAck()) {}

  send(data: Buffer | readonly Buffer[]): number {
    const buf = Buffer.concat(Buffer.isBuffer(data) ? [data] : [...data]);
    const w = new Writer();
    const send = this.sends++;
    for (let off = 0; off < buf.length;) {
      const header = readHeader(buf, off, buf.length);
      const req = { header, msg: Buffer.from(buf.subarray(off, off + header.len)), send };
      this.requests.push(req);
      if (header.type === C.NLMSG_NOOP && this.dropProbes > 0) this.dropProbes--;
      else this.script(req, w);
      off += (header.len + 3) & ~3;
    }
    if (this.overflowNext) {
      this.overflowNext = false;
      setImmediate(() => this.receiver?.onError(enobufs()));
    } else if (w.off > 0) {
      this.deliver(Buffer.from(w.bytes()));
    }
    return buf.length;
  }

  deliver(chunk: Buffer): void {
    if (this.hold) this.held.push(chunk);
    else setImmediate(() => this.receiver?.onData(chunk));
  }

  receive(r: NetlinkReceiver): void {
    this.receiver = r;
    this.paused = false;
  }
  pause(): void {
    this.paused = true;
  }
  setReceiveBuffer(n: number): number {
    this.rcvbuf = n * 2;
    return this.rcvbuf;
  }
  ref(): void {
    this.refs++;
  }
  unref(): void {
    this.refs--;
  }
  close(): void {
    this.closed = true;
  }
}

/**
 * A fake kernel behind a send thread (NetlinkSocket.startSender/submit): queued sends reach
 * the kernel in order, a turn later. `failSend(i, buf)` makes the i-th queued sendmsg fail with
 * EMSGSIZE; the news of it comes `failureTurns` event-loop turns later, after the kernel has answered
 * what was queued behind it (as a notice from the thread may).
 */
export class ThreadedFakeKernel extends FakeKernel {
  onSendError: ((err: SystemError, first: number, last: number) => void) | undefined;
  readonly queue: Buffer[] = [];
  queuedSends = 0;
  syncSends = 0;
  failSend: (i: number, buf: Buffer) => boolean = () => false;
  failureTurns = 5;
  #draining = false;

  startSender(onError: (err: SystemError, first: number, last: number) => void): void {
    this.onSendError ??= onError;
  }

  submit(data: Buffer, queue: boolean): boolean {
    if (!queue && this.queue.length === 0) {
      this.syncSends++;
      this.send(data);
      return true;
    }
    this.queue.push(Buffer.from(data)); // a copy, as the addon makes
    if (!this.#draining) {
      this.#draining = true;
      setImmediate(() => this.#drain());
    }
    return false;
  }

  #drain(): void {
    this.#draining = false;
    for (const buf of this.queue.splice(0)) {
      const i = this.queuedSends++;
      if (!this.failSend(i, buf)) {
        this.send(buf);
        continue;
      }
      const first = readHeader(buf, 0, buf.length).seq;
      let last = first;
      for (let off = 0; off < buf.length;) {
        const h = readHeader(buf, off, buf.length);
        last = h.seq;
        off += (h.len + 3) & ~3;
      }
      const err = Object.assign(new Error('sendmsg: EMSGSIZE'), {
        code: 'EMSGSIZE',
        errno: 90,
        syscall: 'sendmsg',
      });
      afterTurns(this.failureTurns, () => this.onSendError?.(err, first, last));
    }
  }
}

export function enobufs(): SystemError {
  return Object.assign(new Error('recvmsg: ENOBUFS'), {
    code: 'ENOBUFS',
    errno: 105,
    syscall: 'recvmsg',
  });
}

/** Runs `fn` after `n` turns of the event loop (each behind the I/O of the turn before). */
function afterTurns(n: number, fn: () => void): void {
  if (n <= 0) fn();
  else setImmediate(() => afterTurns(n - 1, fn));
}

/** A neighbor on ifindex 7, REACHABLE at 02:00:00:00:00:01: the tests' usual row. */
export const fakeNeigh = (dst: string): C.Neigh => ({
  family: C.AF_INET,
  ifindex: 7,
  state: C.NUD_REACHABLE,
  flags: 0,
  type: 1,
  flagsExt: 0,
  dst,
  lladdr: '02:00:00:00:00:01',
});

/** A handle over one fake kernel. */
export function openFake(
  kernel: FakeKernel,
  opts: { window?: number; timeoutMs?: number; maxSendBytes?: number } = {},
): NetlinkHandle {
  return NetlinkHandle.open({ openSocket: () => kernel, ...opts });
}
