// After the request socket lost replies (ENOBUFS: the receive buffer overflowed; or a
// datagram that did not arrive whole): which requests lost theirs? Those already queued
// still arrive. A probe — a NOOP asking for an ack — answers it: the kernel handles the
// messages of a socket in order, so when the probe's ack comes back, whatever was sent before
// it and is still unanswered never will be. Those requests fail with ENOBUFS ("may have been
// applied"); bulk operations report their lost items and go on; dumps are not affected (the
// kernel paces them instead of dropping their data).
//
// The liveness probe (health.ts, Client.sendProbe) is the same NOOP, sent every round: when
// its ack comes back, a request sent before it that has heard nothing at all never will, with
// or without an overflow (a kernel that did not answer): it fails as retryable then, not only
// at the client's 30 s timeout. A dump that has begun is left alone.
import { backoff, Timer, type Clock } from '../sched/index.js';
import { NetlinkError, NLM_F_ACK, NLMSG_ERROR, NLMSG_NOOP } from './codec/index.js';
import { BulkOp, ENOBUFS } from './bulk.js';
import { DumpCutShortError, isDump } from './dumps.js';
import { singleOp, type ClientStats, type Encode, type Op } from './ops.js';

/** Probes sent after a receive overflow before giving up (the op timeouts then fail them). */
const PROBE_ATTEMPTS = 20;
const ETIMEDOUT = 110;
const UNANSWERED =
  'no reply, although the kernel answered what was sent after it (the request may or may not have been applied)';

/** What the recovery needs of the client. */
export interface OverflowHost {
  readonly clock: Clock;
  readonly closed: boolean;
  readonly sendCounter: number;
  readonly stats: ClientStats;
  allocSeq(n: number): number;
  issue(op: Op, send: () => void, reject: (err: Error) => void): void;
  sendOne(encode: Encode, seq: number, addFlags: number, what: string): void;
  ops(): Op[];
  isPending(op: Op): boolean;
  drop(op: Op): void;
}

export class OverflowRecovery {
  readonly #host: OverflowHost;
  #scheduled = false;

  constructor(host: OverflowHost) {
    this.#host = host;
  }

  /** Sends a probe on the next turn (once, however many losses were reported meanwhile). */
  schedule(): void {
    if (this.#scheduled || this.#host.closed) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#host.closed) this.#send(0);
    });
  }

  /**
   * Sends a probe. Until the receive queue has been drained the socket stays congested
   * and the kernel drops the probe's ack too, without a new ENOBUFS; so an unanswered
   * probe is repeated (10 ms, doubling, up to 1 s) until one comes back.
   */
  #send(attempt: number): void {
    const host = this.#host;
    const seq = host.allocSeq(1);
    const before = host.ops();
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
    host.issue(
      probe,
      () => {
        host.sendOne((w) => w.end(w.begin(NLMSG_NOOP, 0, 0)), seq, NLM_F_ACK, 'probe');
        sendIndex = host.sendCounter;
      },
      () => undefined,
    );
    new Timer(host.clock, { unref: true }).start(backoff(10, 1000, attempt + 1), () => {
      if (!host.closed && host.isPending(probe) && attempt < PROBE_ATTEMPTS) {
        this.#send(attempt + 1);
      }
    });
  }

  /**
   * A liveness probe: sent behind everything before it; its ack settles the requests sent
   * before it that heard nothing. False when it could not be sent.
   */
  sendLiveness(): boolean {
    const host = this.#host;
    const seq = host.allocSeq(1);
    const before = host.ops();
    let sendIndex = Infinity;
    let sent = true;
    const probe = singleOp(
      seq,
      (type) => {
        if (type !== NLMSG_ERROR) return false;
        for (const op of before) this.#unanswered(op, sendIndex);
        return true;
      },
      () => undefined,
    );
    probe.probe = true;
    host.issue(
      probe,
      () => {
        host.sendOne((w) => w.end(w.begin(NLMSG_NOOP, 0, 0)), seq, NLM_F_ACK, 'liveness probe');
        sendIndex = host.sendCounter;
      },
      () => (sent = false),
    );
    return sent;
  }

  #unanswered(op: Op, probeSendIndex: number): void {
    const host = this.#host;
    if (!host.isPending(op)) return;
    if (op instanceof BulkOp) {
      const lost = (what: string) => new NetlinkError(what, ETIMEDOUT, { message: UNANSWERED });
      host.stats.lostAcks += op.loseInFlight(probeSendIndex, lost);
      return;
    }
    if (op.heard === true) return; // a dump that has begun
    host.drop(op);
    if (op.probe) return; // an earlier probe that went unanswered
    op.fail(
      isDump(op)
        ? new DumpCutShortError(op.what, 'no reply to the dump request')
        : new NetlinkError('netlink request', ETIMEDOUT, { message: UNANSWERED }),
    );
  }

  #loseAck(op: Op, probeSendIndex: number): void {
    const host = this.#host;
    if (!host.isPending(op) || op.survivesOverflow) return; // answered meanwhile, or a dump
    if (op.probe) {
      host.drop(op); // an earlier probe whose ack was dropped
      return;
    }
    if (op instanceof BulkOp) {
      host.stats.lostAcks += op.loseInFlight(probeSendIndex);
      return;
    }
    host.stats.lostAcks++;
    host.drop(op);
    op.fail(
      new NetlinkError('netlink request', ENOBUFS, {
        message:
          'the reply was dropped: receive buffer overflow (the request may have been applied)',
      }),
    );
  }
}
