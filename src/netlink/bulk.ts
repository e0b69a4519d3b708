// A bulk pipeline: `count` requests encoded straight into the client's Buffer, a batch
// per sendmsg, at most `window` unanswered at once, every failure reported per item.
import {
  NetlinkError,
  NLM_F_ACK,
  NLM_F_REQUEST,
  NLMSG_ERROR,
  parseErrorMessage,
  type Writer,
} from './codec/index.js';
import type { Clock } from '../sched/index.js';
import { u16le, w16le, w32le } from '../util/index.js';

/** The part of the client a bulk operation uses. */
export interface BulkHost {
  /** Time of the operations' activity (PendingOps times them out on it). */
  readonly clock: Clock;
  readonly params: { window: number; maxSendBytes: number };
  readonly sendCounter: number;
  /** Requests of all bulk operations sent and not yet answered (the window is shared). */
  inFlight: number;
  allocSeq(n: number): number;
  writer(): Writer;
  /** `queue`: on the transport's send thread, where there is one. */
  sendRaw(buf: Buffer, messages: number, what: string, queue?: boolean): void;
  /** Lets every bulk operation send into the room that answers freed. */
  pumpAll(): void;
  finished(op: BulkOp<unknown>): void;
}

export interface BulkSpec<T> {
  /** Name of the operation, for errors ("neighSetMany"). */
  what: string;
  count: number;
  /** Encodes item `i` as one message (header via w.begin). May throw to fail item `i`. */
  encode(w: Writer, i: number): void;
  /**
   * 'ack': success is silent; only the last message of each batch asks for an ack, and
   * the kernel still reports each failure. 'reply': every item is answered by one message,
   * parsed with `parse`.
   */
  mode: 'ack' | 'reply';
  parse?: (buf: Buffer, off: number, len: number) => T;
  /** Describes item `i` for its error ("neighSet 10.0.0.1 dev 3"). */
  describe?(i: number): string;
}

export interface BulkFailure {
  index: number;
  error: Error;
}

export interface BulkOutcome<T> {
  /** 'reply' mode: the parsed answer of item i, undefined where it failed. */
  results: (T | undefined)[];
  /** Every item that failed, in index order, with a typed error (NetlinkError from the kernel). */
  failures: BulkFailure[];
}

interface Batch {
  /** First item index in the batch. */
  first: number;
  /** One past the last item index. */
  end: number;
  /**
   * Index of the last item actually sent; -1 once nothing more is awaited (none was sent:
   * all failed to encode; or the batch was answered, or its send failed, while a batch
   * before it still waits). Then every item's outcome is known: none can lose its reply.
   */
  lastSent: number;
  /** Messages actually sent (counted in the host's inFlight until the batch retires). */
  sentCount: number;
  sendIndex: number;
}

export const ENOBUFS = 105;

export class BulkOp<T> {
  readonly firstSeq: number;
  readonly lastSeq: number;
  lastActivity: number;
  readonly #host: BulkHost;
  readonly #spec: BulkSpec<T>;
  readonly #resolve: (o: BulkOutcome<T>) => void;
  readonly #reject: (err: Error) => void;
  readonly #results: (T | undefined)[];
  readonly #failures: BulkFailure[] = [];
  readonly #batches: Batch[] = [];
  #sent = 0; // items handed to sendmsg (or failed before it)
  #done = 0; // items whose outcome is known
  #over = false;

  constructor(
    host: BulkHost,
    spec: BulkSpec<T>,
    resolve: (o: BulkOutcome<T>) => void,
    reject: (err: Error) => void,
  ) {
    this.#host = host;
    this.lastActivity = host.clock.now();
    this.#spec = spec;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#results = spec.mode === 'reply' ? new Array<T | undefined>(spec.count) : [];
    this.firstSeq = host.allocSeq(spec.count);
    this.lastSeq = this.firstSeq + spec.count - 1;
  }

  #describe(i: number): string {
    return this.#spec.describe ? this.#spec.describe(i) : `${this.#spec.what}[${i}]`;
  }

  /** Sends batches until the shared window is full or every item is out. */
  pump(): void {
    const host = this.#host;
    while (!this.#over && this.#sent < this.#spec.count) {
      const room = host.params.window - host.inFlight;
      if (room <= 0) break;
      this.#sendBatch(room);
    }
    this.#completeBatches();
  }

  /** Retires the batch at the head of the queue: its outcome is fully known. */
  #retire(): void {
    const b = this.#batches.shift()!;
    this.#done = b.end;
    this.#host.inFlight -= b.sentCount;
  }

  #sendBatch(room: number): void {
    const spec = this.#spec;
    const w = this.#host.writer();
    const limit = Math.min(spec.count, this.#sent + room);
    const maxBytes = this.#host.params.maxSendBytes;
    const batch: Batch = {
      first: this.#sent,
      end: this.#sent,
      lastSent: -1,
      sentCount: 0,
      sendIndex: 0,
    };
    let lastStart = -1;
    let n = 0;
    for (let i = this.#sent; i < limit && (n === 0 || w.off < maxBytes); i++) {
      const start = w.off;
      try {
        spec.encode(w, i);
      } catch (err) {
        w.off = start;
        this.#failures.push({ index: i, error: err as Error });
        batch.end = i + 1;
        continue;
      }
      const b = w.buf;
      w32le(b, this.firstSeq + i, start + 8);
      w16le(b, u16le(b, start + 6) | NLM_F_REQUEST, start + 6);
      lastStart = start;
      batch.lastSent = i;
      batch.end = i + 1;
      n++;
    }
    this.#sent = batch.end;
    if (n > 0) {
      if (spec.mode === 'ack') w16le(w.buf, u16le(w.buf, lastStart + 6) | NLM_F_ACK, lastStart + 6);
      try {
        this.#host.sendRaw(w.bytes(), n, spec.what, true);
      } catch (err) {
        // Nothing of this batch reached the kernel; stop here and fail the rest as well.
        const failed = new Set(this.#failures.map((f) => f.index));
        for (let i = batch.first; i < spec.count; i++) {
          if (!failed.has(i)) this.#failures.push({ index: i, error: err as Error });
        }
        this.#sent = spec.count;
        this.#batches.push({ ...batch, end: spec.count, lastSent: -1 });
        return;
      }
      batch.sentCount = n;
      batch.sendIndex = this.#host.sendCounter;
      this.#host.inFlight += n;
      this.lastActivity = this.#host.clock.now();
    }
    this.#batches.push(batch);
  }

  /** Retires leading batches whose outcome is fully known; finishes when all are. */
  #completeBatches(): void {
    while (this.#batches.length > 0 && this.#batches[0]!.lastSent < 0) this.#retire();
    if (!this.#over && this.#done === this.#spec.count) {
      this.#over = true;
      this.#failures.sort((a, b) => a.index - b.index);
      this.#host.finished(this as BulkOp<unknown>);
      this.#resolve({ results: this.#results, failures: this.#failures });
    }
  }

  /** One message for this operation; true when the whole operation is over. */
  handle(
    buf: Buffer,
    off: number,
    len: number,
    type: number,
    _flags: number,
    seq: number,
  ): boolean {
    const i = seq - this.firstSeq;
    if (type === NLMSG_ERROR) {
      const e = parseErrorMessage(buf, off, len);
      if (e.error !== 0) {
        this.#failures.push({
          index: i,
          error: new NetlinkError(this.#describe(i), e.error, e.extAck),
        });
      }
    } else if (this.#spec.mode === 'reply' && this.#spec.parse) {
      try {
        this.#results[i] = this.#spec.parse(buf, off, len);
      } catch (err) {
        this.#failures.push({ index: i, error: err as Error }); // a ParseError, for this item only
      }
    } else {
      return false;
    }
    const head = this.#batches[0];
    if (head && i === head.lastSent) {
      this.#retire();
      this.#host.pumpAll();
    } else if (head && i > head.lastSent) {
      this.#answeredAhead(i);
    }
    return this.#over;
  }

  /**
   * Item `i` of a batch behind the head was answered while the head waits: the head's send
   * failed on the send thread, and the news of it (sendFailed) comes later than the kernel's
   * answers to what was sent after it. The batch is retired behind the head.
   */
  #answeredAhead(i: number): void {
    for (let k = 1; k < this.#batches.length; k++) {
      const b = this.#batches[k]!;
      if (b.first > i) return;
      if (i === b.lastSent) {
        b.lastSent = -1;
        return;
      }
    }
  }

  /**
   * A queued sendmsg failed: the items with sequence numbers `firstSeq` to `lastSeq` never
   * reached the kernel. Each of them (without another failure already) fails with `cause`.
   */
  sendFailed(firstSeq: number, lastSeq: number, cause: Error & { errno?: number }): void {
    if (this.#over) return;
    const from = firstSeq - this.firstSeq;
    const to = lastSeq - this.firstSeq;
    for (const b of this.#batches) {
      if (b.lastSent < 0 || b.end <= from || b.first > to) continue;
      const failed = new Set(this.#failures.map((f) => f.index));
      for (let i = Math.max(b.first, from); i < Math.min(b.end, to + 1); i++) {
        if (failed.has(i)) continue;
        this.#failures.push({
          index: i,
          error: new NetlinkError(`${this.#describe(i)}: sendmsg`, cause.errno ?? 0, {}, { cause }),
        });
      }
      b.lastSent = -1;
    }
    this.#completeBatches();
  }

  /**
   * After a receive overflow: every batch sent before the probe with send index
   * `probeSendIndex` and still unanswered lost its replies. Its items without a known
   * failure are reported as failed (ENOBUFS by default, or `error(description)`; they may
   * or may not have been applied). Returns how many items were affected. With Infinity
   * (the socket was replaced), every batch in flight is lost and the rest goes on.
   */
  loseInFlight(probeSendIndex: number, error?: (what: string) => Error): number {
    let lost = 0;
    while (this.#batches.length > 0 && this.#batches[0]!.sendIndex < probeSendIndex) {
      const b = this.#batches[0]!;
      const failed = new Set(this.#failures.map((f) => f.index));
      for (let i = b.lastSent < 0 ? b.end : b.first; i < b.end; i++) {
        if (failed.has(i) || (this.#spec.mode === 'reply' && this.#results[i] !== undefined))
          continue;
        lost++;
        this.#failures.push({
          index: i,
          error:
            error?.(this.#describe(i)) ??
            new NetlinkError(this.#describe(i), ENOBUFS, {
              message:
                'the reply was dropped: receive buffer overflow (the request may have been applied)',
            }),
        });
      }
      this.#retire();
    }
    this.#host.pumpAll();
    return lost;
  }

  fail(err: Error): void {
    if (this.#over) return;
    this.#over = true;
    while (this.#batches.length > 0) this.#retire();
    this.#reject(err);
  }
}
