// Dumps on the request socket: one at a time (the kernel runs one per socket), each message
// handed over as it arrives, an attempt flagged NLM_F_DUMP_INTR repeated up to dumpAttempts
// times before DumpInterruptedError. An attempt whose data may have been cut short (a
// datagram lost or malformed on the way: the client fails it with DumpCutShortError) counts
// as interrupted, and so does one the kernel refused with EBUSY (the previous attempt's dump
// still draining): both are tried again after RETRY_MS. Nobody loads a short view of a table.
import {
  DumpInterruptedError,
  NetlinkError,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_NOOP,
  NLMSG_OVERRUN,
  parseDoneMessage,
  parseErrorMessage,
} from './codec/index.js';
import { FibkeeperError } from '../errors/index.js';
import { singleOp, type Encode, type Op } from './ops.js';
import { sleep, type Clock } from '../sched/index.js';

const EBUSY = 16;
/** Pause before an attempt after one that was cut short or refused with EBUSY, ms. */
const RETRY_MS = 20;

/** A dump attempt lost part of its data on the way (the client saw a datagram lost or cut). */
export class DumpCutShortError extends FibkeeperError {
  constructor(what: string, why: string) {
    super(`${what}: part of the dump was lost (${why})`, {
      code: 'FIBKEEPER_ERR_DUMP_INTERRUPTED',
    });
  }
}

function retryable(err: unknown): boolean {
  return err instanceof DumpCutShortError || (err instanceof NetlinkError && err.errno === EBUSY);
}

/** The part of the client that dumps use. */
export interface DumpHost {
  readonly clock: Clock;
  readonly params: { dumpAttempts: number };
  allocSeq(n: number): number;
  /** Registers `op`, then runs `send`; a throw unregisters it and rejects. */
  issue(op: Op, send: () => void, reject: (err: Error) => void): void;
  /** Sends one message built by `encode` with sequence number `seq` and extra flags. */
  sendOne(encode: Encode, seq: number, addFlags: number, what: string): void;
}

/** A running dump's op: failed by the client when its data may have been cut short. */
export interface DumpOp extends Op {
  readonly dump: true;
  readonly what: string;
}

export class Dumps {
  readonly #host: DumpHost;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(host: DumpHost) {
    this.#host = host;
  }

  /** See Client.dumpEach. */
  each(
    encode: Encode,
    each: (buf: Buffer, off: number, len: number) => void,
    what: string,
    begin?: () => void,
  ): Promise<number> {
    const run = this.#tail.then(async () => {
      for (let attempt = 1; ; attempt++) {
        begin?.();
        const r = await this.#once(encode, each, what).catch((err: unknown) => {
          if (!retryable(err)) throw err;
          return { count: 0, interrupted: true, pause: true };
        });
        if (!r.interrupted) return r.count;
        if (attempt >= this.#host.params.dumpAttempts) {
          throw new DumpInterruptedError(what, attempt);
        }
        if ('pause' in r) await sleep(this.#host.clock, RETRY_MS);
      }
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }

  #once(
    encode: Encode,
    each: (buf: Buffer, off: number, len: number) => void,
    what: string,
  ): Promise<{ count: number; interrupted: boolean }> {
    return new Promise((resolve, reject) => {
      const seq = this.#host.allocSeq(1);
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
      const dumpOp: DumpOp = Object.assign(op, { dump: true as const, what });
      this.#host.issue(dumpOp, () => this.#host.sendOne(encode, seq, NLM_F_DUMP, what), reject);
    });
  }
}

export function isDump(op: Op): op is DumpOp {
  return (op as Partial<DumpOp>).dump === true;
}
