// The request side of rtnetlink: one socket, requests matched to replies by sequence
// number and port id, dumps (serialized, retried on NLM_F_DUMP_INTR: dumps.ts), and bulk
// pipelines that put a window of messages into few sendmsg calls.
//
// Errors: replies the kernel dropped (ENOBUFS) or that did not arrive whole (EMSGSIZE, a
// malformed datagram) are found out with a probe (a NOOP asking for an ack); a dump that lost
// data is tried again. Any other receive error, a send error that says the descriptor is
// gone, and a socket that stopped answering the liveness probes (health.ts) close the socket
// and open a fresh one (reopen): the requests in flight fail as retryable (bulk operations go
// on, reporting only their lost items), and the callers retry.
//
// The kernel handles the messages of one sendmsg synchronously and in order, and answers
// in order on the socket. The bulk path relies on that: only the last message of a batch
// asks for an ack; failures are answered individually (the kernel always reports an
// error); so the ack for the last message proves every message before it was handled.
import { ClosedError } from '../errors/index.js';
import type { NetlinkReceiver, SystemError } from '../native/index.js';
import {
  NetlinkError,
  NLM_F_ACK,
  NLM_F_REQUEST,
  NLMSG_ERROR,
  parseErrorMessage,
  SIZEOF_NLMSGHDR,
  Writer,
} from './codec/index.js';
import { BulkOp, type BulkHost, type BulkOutcome, type BulkSpec } from './bulk.js';
import { DumpCutShortError, Dumps, isDump, type DumpHost } from './dumps.js';
import type { Probed } from './health.js';
import { OverflowRecovery } from './overflow.js';
import { PendingOps } from './pending.js';
import { systemClock, type Clock } from '../sched/index.js';
import {
  singleOp,
  type ClientParams,
  type ClientStats,
  type Encode,
  type Op,
  type Parse,
  type Transport,
} from './ops.js';
import { u16le, u32le, w16le, w32le } from '../util/index.js';

export type { ClientParams, ClientStats, Encode, Op, Parse, Transport } from './ops.js';

const SEQ_LIMIT = 0xffff_ffff;
/** Receive errors after which the socket works on: replies were dropped, or one did not fit. */
const LOSSES = new Set(['ENOBUFS', 'EMSGSIZE']);
/**
 * Send errors that say the descriptor no longer works. Every other sendmsg error is about
 * the message (EINVAL, EMSGSIZE, EPERM) or a moment's shortage (ENOBUFS, ENOMEM, EAGAIN,
 * EBUSY): the request fails and its caller retries.
 */
const SEND_BROKEN = new Set(['EBADF', 'ENOTSOCK', 'EPIPE', 'ENOTCONN', 'EFAULT']);
const ETIMEDOUT = 110;

export class Client implements NetlinkReceiver, BulkHost, DumpHost, Probed {
  #t: Transport;
  /** Which transport the receive callbacks come from (a replaced one's are ignored). */
  #epoch = 0;
  readonly params: ClientParams;
  /** Time and timers of the operations (params.clock, or the process clock). */
  readonly clock: Clock;
  readonly #w = new Writer(64 * 1024);
  readonly #ops: PendingOps;
  #seq = 1 + Math.floor(Math.random() * 0x1000_0000);
  #closed = false;
  readonly #dumps = new Dumps(this);
  readonly #overflow = new OverflowRecovery(this);
  readonly socketName = 'request' as const;
  readonly paused = false;
  /** Clock time of the last datagram received. */
  lastHeard: number;
  /** The transport's send thread runs (started by the first queued send). */
  #senderStarted = false;
  readonly stats: ClientStats = {
    sendCalls: 0,
    messagesSent: 0,
    receiveOverflows: 0,
    strayMessages: 0,
    lostAcks: 0,
    failedSends: 0,
    reopens: 0,
    malformed: 0,
  };

  constructor(params: ClientParams) {
    this.params = params;
    this.clock = params.clock ?? systemClock;
    this.#ops = new PendingOps({
      clock: this.clock,
      timeoutMs: params.timeoutMs,
      busy: (on) => (on ? this.#t.ref() : this.#t.unref()),
      timedOut: () => this.pumpAll(), // failed bulk operations gave their room back
    });
    this.lastHeard = this.#now();
    this.#t = params.transport;
    this.#attach(params.transport);
  }

  #now(): number {
    return this.params.now?.() ?? this.clock.now();
  }

  /** Receives on `t` from now on; what the previous transport still delivers is ignored. */
  #attach(t: Transport): void {
    this.#t = t;
    const epoch = ++this.#epoch;
    this.#senderStarted = false;
    if (this.#ops.count > 0) t.ref();
    else t.unref();
    t.receive({
      onData: (chunk) => {
        if (epoch === this.#epoch) this.onData(chunk);
      },
      onError: (err) => {
        if (epoch === this.#epoch) this.onError(err);
      },
    });
  }

  get portId(): number {
    return this.#t.portId;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The error after which the socket is no longer polled (see SystemError.fatal). */
  stoppedBy: SystemError | undefined = undefined;

  /** Bulk requests sent and unanswered, across all bulk operations (bounded by window). */
  inFlight = 0;

  /** How many sendmsg calls have succeeded: orders sends for overflow recovery. */
  get sendCounter(): number {
    return this.stats.sendCalls;
  }

  /** Allocates `n` consecutive sequence numbers (never wrapping inside the block). */
  allocSeq(n: number): number {
    if (this.#seq + n > SEQ_LIMIT) this.#seq = 1;
    const base = this.#seq;
    this.#seq += n;
    return base;
  }

  /**
   * Sends what `buf` holds. `queue`: hand it to the transport's send thread (bulk batches:
   * the kernel's work in sendmsg then overlaps ours); a queued send that fails reaches
   * #sendFailed. Otherwise it is sent at once, in order with what is queued; a failed
   * sendmsg throws NetlinkError.
   */
  sendRaw(buf: Buffer, messages: number, what: string, queue = false): void {
    const t = this.#t;
    try {
      if (queue && t.submit !== undefined && t.startSender !== undefined) {
        if (!this.#senderStarted) {
          const epoch = this.#epoch;
          t.startSender((err, first, last) => {
            if (epoch === this.#epoch) this.#sendFailed(err, first, last);
          });
          this.#senderStarted = true;
        }
        t.submit(buf, true);
      } else if (this.#senderStarted) t.submit!(buf, false);
      else t.send(buf);
    } catch (err) {
      const e = err as Partial<SystemError>;
      const failed = new NetlinkError(`${what}: sendmsg`, e.errno ?? 0, {}, { cause: err });
      // The descriptor is gone: reopen once the caller has this request's error.
      if (SEND_BROKEN.has(e.code ?? '')) queueMicrotask(() => this.reopen(e.code!, e.errno));
      throw failed;
    }
    this.stats.sendCalls++;
    this.stats.messagesSent += messages;
  }

  /**
   * A queued sendmsg failed: the messages with sequence numbers `first` to `last` never
   * reached the kernel, and will never be answered.
   */
  #sendFailed(err: SystemError, first: number, last: number): void {
    if (this.#closed) return;
    this.stats.failedSends++;
    if (SEND_BROKEN.has(err.code)) queueMicrotask(() => this.reopen(err.code, err.errno));
    for (const op of this.#ops.all()) {
      if (op.lastSeq < first || op.firstSeq > last) continue;
      if (op instanceof BulkOp) {
        op.sendFailed(first, last, err);
        continue;
      }
      this.#unregister(op);
      op.fail(new NetlinkError('netlink request: sendmsg', err.errno, {}, { cause: err }));
    }
    this.pumpAll();
  }

  /** The client's reusable writer (valid until the next request). */
  writer(): Writer {
    this.#checkOpen();
    this.#w.reset();
    return this.#w;
  }

  register(op: Op): void {
    this.#checkOpen();
    this.#ops.add(op);
  }

  #unregister(op: Op): void {
    this.#ops.drop(op);
  }

  /** Sends one message built by `encode`, with the given seq and extra header flags. */
  sendOne(encode: Encode, seq: number, addFlags: number, what: string): void {
    const w = this.writer();
    encode(w);
    const b = w.buf;
    w32le(b, seq, 8);
    w16le(b, u16le(b, 6) | NLM_F_REQUEST | addFlags, 6);
    this.sendRaw(w.bytes(), 1, what);
  }

  /** A request answered by an ack: resolves when the kernel reports success. */
  ack(encode: Encode, what: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const seq = this.allocSeq(1);
      const op = singleOp(
        seq,
        (type, buf, off, len) => {
          if (type !== NLMSG_ERROR) return false;
          const e = parseErrorMessage(buf, off, len);
          if (e.error === 0) resolve();
          else reject(new NetlinkError(what, e.error, e.extAck));
          return true;
        },
        reject,
      );
      this.issue(op, () => this.sendOne(encode, seq, NLM_F_ACK, what), reject);
    });
  }

  /** A GET answered by one message (or an error). */
  get<T>(encode: Encode, parse: Parse<T>, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const seq = this.allocSeq(1);
      const op = singleOp(
        seq,
        (type, buf, off, len) => {
          if (type === NLMSG_ERROR) {
            const e = parseErrorMessage(buf, off, len);
            if (e.error === 0) return false; // a stray ack; the reply is what counts
            reject(new NetlinkError(what, e.error, e.extAck));
            return true;
          }
          resolve(parse(buf, off, len));
          return true;
        },
        reject,
      );
      this.issue(op, () => this.sendOne(encode, seq, 0, what), reject);
    });
  }

  /**
   * A dump: every message until NLMSG_DONE, parsed. Dumps run one at a time (the kernel
   * allows one per socket); an interrupted dump (NLM_F_DUMP_INTR) is repeated up to
   * `dumpAttempts` times, then DumpInterruptedError.
   */
  dump<T>(encode: Encode, parse: Parse<T>, what: string): Promise<T[]> {
    let items: T[] = [];
    return this.dumpEach(
      encode,
      (buf, off, len) => void items.push(parse(buf, off, len)),
      what,
      () => (items = []),
    ).then(() => items);
  }

  /**
   * A dump whose messages are handed to `each` as they arrive (the bytes are valid only
   * during the call), without an array of them: for tables of a million rows. `begin` is
   * called before every attempt (an interrupted dump starts over: what the previous attempt
   * handed over may be stale). An exception thrown by `each` fails the dump, once it has
   * drained. Resolves with the number of messages of the attempt that completed.
   */
  dumpEach(
    encode: Encode,
    each: (buf: Buffer, off: number, len: number) => void,
    what: string,
    begin?: () => void,
  ): Promise<number> {
    return this.#dumps.each(encode, each, what, begin);
  }

  /** Many requests pipelined; see BulkSpec. Per-message failures are reported, not thrown. */
  bulk<T>(spec: BulkSpec<T>): Promise<BulkOutcome<T>> {
    this.#checkOpen();
    if (spec.count === 0) return Promise.resolve({ results: [], failures: [] });
    return new Promise((resolve, reject) => {
      const op = new BulkOp(this, spec, resolve, reject);
      this.register(op as BulkOp<unknown>);
      op.pump();
    });
  }

  /** Lets every running bulk operation use the room in the window. */
  pumpAll(): void {
    for (const op of this.#ops.ranges()) if (op instanceof BulkOp) op.pump();
  }

  /** Called by BulkOp when it has completed. */
  finished(op: BulkOp<unknown>): void {
    this.#unregister(op);
  }

  /** Registers `op`, then runs `send`; a throw unregisters it and rejects. */
  issue(op: Op, send: () => void, reject: (err: Error) => void): void {
    try {
      this.register(op);
      send();
    } catch (err) {
      this.#unregister(op);
      reject(err as Error);
    }
  }

  // --- receiving ------------------------------------------------------------------------

  onData(chunk: Buffer): void {
    const end = chunk.length;
    const port = this.#t.portId;
    const now = this.clock.now();
    this.lastHeard = this.#now();
    let off = 0;
    while (off < end) {
      const len = end - off >= SIZEOF_NLMSGHDR ? u32le(chunk, off) : 0;
      if (len < SIZEOF_NLMSGHDR || len > end - off) {
        // Cut short: the rest of the datagram is lost, replies and dump data alike.
        this.stats.malformed++;
        this.#lost('a malformed datagram');
        return;
      }
      const type = u16le(chunk, off + 4);
      const flags = u16le(chunk, off + 6);
      const seq = u32le(chunk, off + 8);
      const pid = u32le(chunk, off + 12);
      const op = pid === port ? this.#ops.find(seq) : undefined;
      if (op) {
        op.lastActivity = now;
        op.heard = true;
        this.#deliver(op, chunk, off, len, type, flags, seq);
      } else this.stats.strayMessages++;
      off += (len + 3) & ~3;
    }
  }

  #deliver(op: Op, b: Buffer, off: number, len: number, type: number, flags: number, seq: number) {
    let done: boolean;
    try {
      done = op.handle(b, off, len, type, flags, seq);
    } catch (err) {
      this.#unregister(op);
      op.fail(err as Error);
      return;
    }
    if (done) this.#unregister(op);
  }

  onError(err: SystemError): void {
    if (this.#closed) return;
    if (!LOSSES.has(err.code)) {
      if (err.fatal === true) this.stoppedBy = err;
      this.reopen(err.code, err.errno);
      return;
    }
    // Replies were dropped (or one did not fit). Those already queued still arrive; to tell
    // which requests lost theirs, send a NOOP that asks for an ack: when it comes back,
    // whatever was sent before it and is still unanswered never will be.
    this.stats.receiveOverflows++;
    if (err.code === 'ENOBUFS') this.#overflow.schedule();
    else this.#lost(`${err.code} on receive`);
  }

  /**
   * A datagram was lost on the way (EMSGSIZE) or cut short: replies may be gone, and unlike
   * an overflow (the kernel paces dumps, it never drops their data) so may a dump's data.
   * The running dump is tried again; the probe finds the requests that lost their replies.
   */
  #lost(why: string): void {
    for (const op of this.#ops.all()) {
      if (!isDump(op)) continue;
      this.#unregister(op);
      op.fail(new DumpCutShortError(op.what, why));
    }
    this.#overflow.schedule();
  }

  // --- liveness and reopening -----------------------------------------------------------

  /**
   * A liveness probe (health.ts): a NOOP asking for an ack, behind anything queued; its ack
   * also settles the requests sent before it that heard nothing (overflow.ts).
   */
  sendProbe(): boolean {
    if (this.#closed) return false;
    return this.#overflow.sendLiveness();
  }

  /**
   * Closes the socket and opens a fresh one, after `cause` (an errno name; ETIMEDOUT: it
   * stopped answering). Requests in flight fail as retryable; bulk operations lose only
   * their items in flight and go on. Without `params.reopen`, or when the new socket cannot
   * be opened, the old one stays (the next liveness round tries again) and the failure is
   * reported to `params.reopened`.
   */
  reopen(cause: string, errno = ETIMEDOUT): void {
    const open = this.params.reopen;
    if (this.#closed || open === undefined) return;
    let fresh: Transport;
    try {
      fresh = open();
    } catch (err) {
      this.params.reopened?.(cause, err);
      return;
    }
    const old = this.#t;
    this.#attach(fresh);
    this.stoppedBy = undefined;
    this.stats.reopens++;
    try {
      old.close();
    } catch {
      /* closing a broken socket is best effort */
    }
    this.params.reopened?.(cause);
    this.#failInFlight(cause, errno);
  }

  #failInFlight(cause: string, errno: number): void {
    const message = `the request socket was reopened after ${cause}; the request may or may not have been applied`;
    for (const op of this.#ops.all()) {
      if (op.probe) {
        this.#unregister(op);
        continue;
      }
      if (op instanceof BulkOp) {
        op.loseInFlight(Infinity, (what) => new NetlinkError(what, errno, { message }));
        continue;
      }
      this.#unregister(op);
      op.fail(
        isDump(op)
          ? new DumpCutShortError(op.what, `socket reopened after ${cause}`)
          : new NetlinkError('netlink request', errno, { message }),
      );
    }
    this.pumpAll();
  }

  /** Whether `op` still waits for its reply. */
  isPending(op: Op): boolean {
    return this.#ops.has(op);
  }

  /** Forgets `op` (it will not be answered any more). */
  drop(op: Op): void {
    this.#ops.drop(op);
  }

  /** Every operation waiting for a reply. */
  ops(): Op[] {
    return this.#ops.all();
  }

  // --- lifetime -------------------------------------------------------------------------

  /** Fails every pending request with ClosedError and closes the socket. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const ops = this.#ops.clear();
    this.#t.close();
    const err = new ClosedError('netlink handle closed');
    for (const op of ops) op.fail(err);
  }

  #checkOpen(): void {
    if (this.#closed) throw new ClosedError('netlink handle closed');
  }
}
