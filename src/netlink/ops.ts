// The client's vocabulary: the socket it needs (Transport), its parameters and
// statistics, and the pending operations that incoming messages are routed to.
import type { NetlinkReceiver, SystemError } from '../native/index.js';
import type { Writer } from './codec/index.js';
import type { Clock } from '../sched/index.js';

/** What the client needs from a socket; the native NetlinkSocket fits, tests pass a fake. */
export interface Transport {
  readonly portId: number;
  send(data: Buffer | readonly Buffer[]): number;
  /**
   * A send thread (NetlinkSocket.startSender/submit): submit(data, true) queues `data` for
   * it, submit(data, false) sends at once unless sends are queued, keeping the order.
   */
  startSender?(onError: (err: SystemError, firstSeq: number, lastSeq: number) => void): void;
  submit?(data: Buffer, queue: boolean): boolean;
  receive(receiver: NetlinkReceiver): void;
  /** Stops polling (datagrams queue in the kernel) until receive() is called again. */
  pause?(): void;
  /** Bytes the kernel holds in the receive queue (NetlinkSocket.queuedBytes). */
  queuedBytes?(): number | undefined;
  ref(): void;
  unref(): void;
  close(): void;
}

/** Encodes one request message with Writer `w` (header via w.begin, flags included). */
export type Encode = (w: Writer) => void;
/** Parses one reply message of `len` bytes at `off` in `buf`. */
export type Parse<T> = (buf: Buffer, off: number, len: number) => T;

export interface ClientParams {
  transport: Transport;
  /** Most messages a bulk call keeps unanswered (bounded by the receive buffer). */
  window: number;
  /** Most bytes per sendmsg. */
  maxSendBytes: number;
  /** Attempts of a dump before DumpInterruptedError. */
  dumpAttempts: number;
  /** An operation that hears nothing for this long fails with TimeoutError. */
  timeoutMs: number;
  /** Opens a fresh socket for Client.reopen; without it a broken socket stays broken. */
  reopen?: () => Transport;
  /** The socket was replaced after `cause` (an errno name), or could not be (`err`). */
  reopened?: (cause: string, err?: unknown) => void;
  /** The clock of lastHeard (the liveness prober's); default `clock`. */
  now?: () => number;
  /** Time and timers of the operations (timeouts, dump and probe retries); default the process clock. */
  clock?: Clock;
}

/** An operation waiting for messages; `handle` returns true when it is complete. */
export interface Op {
  readonly firstSeq: number;
  readonly lastSeq: number;
  lastActivity: number;
  /** Dumps: the kernel paces them instead of dropping, so an overflow cannot lose them. */
  readonly survivesOverflow?: boolean;
  /** An overflow or liveness probe (overflow.ts). */
  probe?: boolean;
  /** Some reply arrived for it (a dump that has begun). */
  heard?: boolean;
  handle(buf: Buffer, off: number, len: number, type: number, flags: number, seq: number): boolean;
  fail(err: Error): void;
}

/** Statistics for metrics and tests. */
export interface ClientStats {
  sendCalls: number;
  messagesSent: number;
  receiveOverflows: number;
  strayMessages: number;
  lostAcks: number;
  /** Queued sendmsg calls that failed (their messages reached the kernel not at all). */
  failedSends: number;
  /** Times the socket was closed and opened afresh after an error or silence. */
  reopens: number;
  /** Datagrams that were cut short (their rest lost). */
  malformed: number;
}

export type SingleHandler = (
  type: number,
  buf: Buffer,
  off: number,
  len: number,
  flags: number,
) => boolean;

/** An operation answered under one sequence number. */
export function singleOp(
  seq: number,
  handler: SingleHandler,
  fail: (err: Error) => void,
  survivesOverflow = false,
): Op {
  return {
    survivesOverflow,
    firstSeq: seq,
    lastSeq: seq,
    lastActivity: 0, // PendingOps.add sets it
    handle: (buf, off, len, type, flags) => handler(type, buf, off, len, flags),
    fail,
  };
}
