// The request side of rtnetlink: one socket, requests matched to replies by sequence
// number and port id, dumps (serialized, retried on NLM_F_DUMP_INTR), and bulk pipelines
// that put a window of messages into few sendmsg calls.
//
// The kernel handles the messages of one sendmsg synchronously and in order, and answers
// in order on the socket. The bulk path relies on that: only the last message of a batch
// asks for an ack; failures are answered individually (the kernel always reports an
// error); so the ack for the last message proves every message before it was handled.
import { ClosedError, TimeoutError } from '../errors/index.js';
import type { NetlinkReceiver, SystemError } from '../native/index.js';
import { backoff } from '../sched/index.js';
import {
  DumpInterruptedError,
  NetlinkError,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_NOOP,
  NLMSG_OVERRUN,
  parseDoneMessage,
  parseErrorMessage,
  SIZEOF_NLMSGHDR,
  Writer,
} from './codec/index.js';
import { BulkOp, ENOBUFS, type BulkHost, type BulkOutcome, type BulkSpec } from './bulk.js';
import {
  singleOp,
  type ClientParams,
  type ClientStats,
  type Encode,
  type Op,
  type Parse,
  type Transport,
} from './ops.js';

export type { ClientParams, ClientStats, Encode, Op, Parse, Transport } from './ops.js';

const SEQ_LIMIT = 0xffff_ffff;
/** Probes sent after a receive overflow before giving up (the watchdog then times out). */
const PROBE_ATTEMPTS = 20;

export class Client implements NetlinkReceiver, BulkHost {
  readonly #t: Transport;
  readonly params: ClientParams;
  readonly #w = new Writer(64 * 1024);
  readonly #single = new Map<number, Op>();
  readonly #ranges: Op[] = [];
  #seq = 1 + Math.floor(Math.random() * 0x1000_0000);
  #pending = 0;
  #closed = false;
  #dumpTail: Promise<unknown> = Promise.resolve();
  #watchdog: NodeJS.Timeout | undefined;
  /** The transport's send thread runs (started by the first queued send). */
  #senderStarted = false;
  #probeScheduled = false;
  readonly stats: ClientStats = {
    sendCalls: 0,
    messagesSent: 0,
    receiveOverflows: 0,
    strayMessages: 0,
    lostAcks: 0,
    failedSends: 0,
  };

  constructor(params: ClientParams) {
    this.params = params;
    this.#t = params.transport;
    this.#t.unref();
    this.#t.receive(this);
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
          t.startSender((err, first, last) => this.#sendFailed(err, first, last));
          this.#senderStarted = true;
        }
        t.submit(buf, true);
      } else if (this.#senderStarted) t.submit!(buf, false);
      else t.send(buf);
    } catch (err) {
      const e = err as Partial<SystemError>;
      throw new NetlinkError(`${what}: sendmsg`, e.errno ?? 0, {}, { cause: err });
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
    for (const op of this.#allOps()) {
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
    if (isSingle(op)) this.#single.set(op.firstSeq, op);
    else this.#ranges.push(op);
    if (this.#pending++ === 0) {
      this.#t.ref();
      this.#startWatchdog();
    }
  }

  #unregister(op: Op): void {
    if (isSingle(op)) {
      if (this.#single.get(op.firstSeq) !== op) return;
      this.#single.delete(op.firstSeq);
    } else {
      const i = this.#ranges.indexOf(op);
      if (i < 0) return;
      this.#ranges.splice(i, 1);
    }
    if (--this.#pending === 0) {
      this.#t.unref();
      this.#stopWatchdog();
    }
  }

  #find(seq: number): Op | undefined {
    const op = this.#single.get(seq);
    if (op) return op;
    for (const r of this.#ranges) if (seq >= r.firstSeq && seq <= r.lastSeq) return r;
    return undefined;
  }

  /** Sends one message built by `encode`, with the given seq and extra header flags. */
  #sendOne(encode: Encode, seq: number, addFlags: number, what: string): void {
    const w = this.writer();
    encode(w);
    const b = w.buf;
    b.writeUInt32LE(seq, 8);
    b.writeUInt16LE(b.readUInt16LE(6) | NLM_F_REQUEST | addFlags, 6);
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
      this.#issue(op, () => this.#sendOne(encode, seq, NLM_F_ACK, what), reject);
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
      this.#issue(op, () => this.#sendOne(encode, seq, 0, what), reject);
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
    const run = this.#dumpTail.then(async () => {
      for (let attempt = 1; ; attempt++) {
        begin?.();
        const r = await this.#dumpOnce(encode, each, what);
        if (!r.interrupted) return r.count;
        if (attempt >= this.params.dumpAttempts) throw new DumpInterruptedError(what, attempt);
      }
    });
    this.#dumpTail = run.catch(() => undefined);
    return run;
  }

  #dumpOnce(
    encode: Encode,
    each: (buf: Buffer, off: number, len: number) => void,
    what: string,
  ): Promise<{ count: number; interrupted: boolean }> {
    return new Promise((resolve, reject) => {
      const seq = this.allocSeq(1);
      let count = 0;
      let interrupted = false;
      let parseError: Error | undefined; // reported at NLMSG_DONE: the dump must drain first
      const op = singleOp(
        seq,
        (type, buf, off, len, flags) => {
          if (flags & NLM_F_DUMP_INTR) interrupted = true;
          if (type === NLMSG_DONE) {
            const d = parseDoneMessage(buf, off, len);
            if (d.error !== 0) reject(new NetlinkError(what, d.error, d.extAck));
            else if (parseError) reject(parseError);
            else resolve({ count, interrupted });
            return true;
          }
          if (type === NLMSG_ERROR) {
            const e = parseErrorMessage(buf, off, len);
            if (e.error === 0) return false;
            reject(new NetlinkError(what, e.error, e.extAck));
            return true;
          }
          if (type === NLMSG_NOOP || type === NLMSG_OVERRUN) return false;
          try {
            each(buf, off, len);
            count++;
          } catch (err) {
            parseError ??= err as Error;
          }
          return false;
        },
        reject,
        true,
      );
      this.#issue(op, () => this.#sendOne(encode, seq, NLM_F_DUMP, what), reject);
    });
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
    for (const op of [...this.#ranges]) if (op instanceof BulkOp) op.pump();
  }

  /** Called by BulkOp when it has completed. */
  finished(op: BulkOp<unknown>): void {
    this.#unregister(op);
  }

  #issue(op: Op, send: () => void, reject: (err: Error) => void): void {
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
    const now = Date.now();
    let off = 0;
    while (end - off >= SIZEOF_NLMSGHDR) {
      const len = chunk.readUInt32LE(off);
      if (len < SIZEOF_NLMSGHDR || len > end - off) break; // malformed: drop the rest
      const type = chunk.readUInt16LE(off + 4);
      const flags = chunk.readUInt16LE(off + 6);
      const seq = chunk.readUInt32LE(off + 8);
      const pid = chunk.readUInt32LE(off + 12);
      const op = pid === port ? this.#find(seq) : undefined;
      if (op) {
        op.lastActivity = now;
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
    if (err.fatal === true) this.stoppedBy = err;
    if (err.code === 'ENOBUFS' || err.code === 'EMSGSIZE') {
      // Replies were dropped (or truncated). Those already queued still arrive; to tell
      // which requests lost theirs, send a NOOP that asks for an ack: when it comes back,
      // whatever was sent before it and is still unanswered never will be.
      this.stats.receiveOverflows++;
      this.#scheduleProbe();
      return;
    }
    const e = new NetlinkError('netlink receive', err.errno, {}, { cause: err });
    for (const op of this.#allOps()) {
      this.#unregister(op);
      op.fail(e);
    }
  }

  #scheduleProbe(): void {
    if (this.#probeScheduled || this.#closed) return;
    this.#probeScheduled = true;
    setImmediate(() => {
      this.#probeScheduled = false;
      if (!this.#closed) this.#sendProbe(0);
    });
  }

  /**
   * Sends a probe. Until the receive queue has been drained the socket stays congested
   * and the kernel drops the probe's ack too, without a new ENOBUFS; so an unanswered
   * probe is repeated (10 ms, doubling, up to 1 s) until one comes back.
   */
  #sendProbe(attempt: number): void {
    const seq = this.allocSeq(1);
    const before = this.#allOps();
    let sendIndex = Infinity;
    const probe = singleOp(
      seq,
      (type) => {
        if (type !== NLMSG_ERROR) return false;
        for (const op of before) this.#loseAck(op, sendIndex);
        return true;
      },
      () => undefined,
    );
    probe.probe = true;
    this.#issue(
      probe,
      () => {
        this.#sendOne((w) => w.end(w.begin(NLMSG_NOOP, 0, 0)), seq, NLM_F_ACK, 'probe');
        sendIndex = this.sendCounter;
      },
      () => undefined,
    );
    const retry = setTimeout(
      () => {
        if (!this.#closed && this.#isPending(probe) && attempt < PROBE_ATTEMPTS) {
          this.#sendProbe(attempt + 1);
        }
      },
      backoff(10, 1000, attempt + 1),
    );
    retry.unref();
  }

  #isPending(op: Op): boolean {
    return this.#single.get(op.firstSeq) === op || this.#ranges.includes(op);
  }

  #loseAck(op: Op, probeSendIndex: number): void {
    if (!this.#isPending(op) || op.survivesOverflow) return; // answered meanwhile, or a dump
    if (op.probe) {
      this.#unregister(op); // an earlier probe whose ack was dropped
      return;
    }
    if (op instanceof BulkOp) {
      this.stats.lostAcks += op.loseInFlight(probeSendIndex);
      return;
    }
    this.stats.lostAcks++;
    this.#unregister(op);
    op.fail(
      new NetlinkError('netlink request', ENOBUFS, {
        message:
          'the reply was dropped: receive buffer overflow (the request may have been applied)',
      }),
    );
  }

  #allOps(): Op[] {
    return [...this.#single.values(), ...this.#ranges];
  }

  // --- lifetime -------------------------------------------------------------------------

  #startWatchdog(): void {
    if (this.#watchdog || this.params.timeoutMs <= 0) return;
    const period = Math.max(10, Math.min(1000, this.params.timeoutMs / 4));
    this.#watchdog = setInterval(() => this.#checkTimeouts(), period);
    this.#watchdog.unref();
  }

  #stopWatchdog(): void {
    if (this.#watchdog) clearInterval(this.#watchdog);
    this.#watchdog = undefined;
  }

  #checkTimeouts(): void {
    const now = Date.now();
    for (const op of this.#allOps()) {
      if (now - op.lastActivity > this.params.timeoutMs) {
        this.#unregister(op);
        op.fail(new TimeoutError(`netlink: no reply for ${this.params.timeoutMs} ms`));
      }
    }
    this.pumpAll(); // failed bulk operations gave their room back
  }

  /** Fails every pending request with ClosedError and closes the socket. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const ops = this.#allOps();
    this.#single.clear();
    this.#ranges.length = 0;
    this.#pending = 0;
    this.#stopWatchdog();
    this.#t.close();
    const err = new ClosedError('netlink handle closed');
    for (const op of ops) op.fail(err);
  }

  #checkOpen(): void {
    if (this.#closed) throw new ClosedError('netlink handle closed');
  }
}

/** Ops answered under one sequence number live in a map; bulk operations in a list. */
function isSingle(op: Op): boolean {
  return op.firstSeq === op.lastSeq && !(op instanceof BulkOp);
}
