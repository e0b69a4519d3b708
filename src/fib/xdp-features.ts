// Which devices can take XDP_REDIRECT frames: the kernel's xdp_features of each device
// (generic netlink family "netdev", Linux 6.3+), read with one dump. A redirect into a device
// without NETDEV_XDP_ACT_NDO_XMIT fails (EOPNOTSUPP) and the frame is lost; a veth has it only
// while its peer runs an XDP program or has GRO on. Such devices stay out of the devmap, so
// frames routed through them go to the kernel, which forwards them.
//
// The socket heals like the rtnetlink ones: a request unanswered for ASK_TIMEOUT_MS, a
// receive error or a datagram cut short fails the request and replaces the socket, so that
// the forwarder's syncs (which wait for read()) never hang on it.
import { describeError, TimeoutError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { NetlinkSocket, type SystemError } from '../native/index.js';
import { systemClock, Timer, type Clock } from '../sched/index.js';

const NETLINK_GENERIC = 16;
const GENL_ID_CTRL = 0x10;
const CTRL_CMD_GETFAMILY = 3;
const CTRL_ATTR_FAMILY_ID = 1;
const CTRL_ATTR_FAMILY_NAME = 2;
const NETDEV_CMD_DEV_GET = 1;
const NETDEV_A_DEV_IFINDEX = 1;
const NETDEV_A_DEV_XDP_FEATURES = 3;
const NLM_F_REQUEST = 1;
const NLM_F_ACK = 4;
const NLM_F_DUMP = 0x300;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;

/** A request unanswered this long fails, and the socket is replaced, ms. */
const ASK_TIMEOUT_MS = 5000;
const ENOENT = 2;

/** NETDEV_XDP_ACT_NDO_XMIT: the device implements ndo_xdp_xmit (redirect target). */
export const NETDEV_XDP_ACT_NDO_XMIT = 1n << 2n;

function attr(type: number, value: Buffer): Buffer {
  const len = 4 + value.length;
  const b = Buffer.alloc((len + 3) & ~3);
  b.writeUInt16LE(len, 0);
  b.writeUInt16LE(type, 2);
  value.copy(b, 4);
  return b;
}

function attrs(buf: Buffer, off: number, end: number): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  while (off + 4 <= end) {
    const len = buf.readUInt16LE(off);
    if (len < 4 || off + len > end) break;
    out.set(buf.readUInt16LE(off + 2) & 0x3fff, buf.subarray(off + 4, off + len));
    off += (len + 3) & ~3;
  }
  return out;
}

/** A genetlink request: nlmsghdr, genlmsghdr (cmd, version 1), attributes. */
function request(type: number, flags: number, seq: number, cmd: number, body: Buffer): Buffer {
  const h = Buffer.alloc(20);
  h.writeUInt32LE(20 + body.length, 0);
  h.writeUInt16LE(type, 4);
  h.writeUInt16LE(flags, 6);
  h.writeUInt32LE(seq, 8);
  h[16] = cmd;
  h[17] = 1;
  return Buffer.concat([h, body]);
}

/**
 * The xdp_features of every device in a namespace. read() answers undefined when the kernel
 * has no "netdev" family (before 6.3): then every selected device is a redirect target, as
 * before. Requests are one at a time (the forwarder's sync is serial).
 */
export class XdpFeatures {
  #sock: NetlinkSocket;
  readonly #netns: string | undefined;
  readonly #log: Logger;
  readonly #onReopen: ((cause: string, err?: unknown) => void) | undefined;
  #seq = 1;
  #family: number | undefined | null = null;
  #pending: { seq: number; out: Buffer[]; done: (err?: Error) => void } | undefined;
  #closed = false;
  readonly #clock: Clock;
  /** Clock time of the last request sent, and of the last answer received. */
  #lastAsk = 0;
  #lastAnswer: number;

  private constructor(
    netns: string | undefined,
    log: Logger,
    onReopen: ((cause: string, err?: unknown) => void) | undefined,
    clock: Clock,
  ) {
    this.#clock = clock;
    this.#lastAnswer = clock.now();
    this.#netns = netns;
    this.#log = log;
    this.#onReopen = onReopen;
    this.#sock = this.#open();
  }

  /**
   * Opens the genetlink socket in `netns`. `onReopen` hears of every replacement of it (after
   * `cause`, an errno name), or of one that failed (`err`). `clock`: the answer's timeout and
   * the silence of liveness (default the process clock).
   */
  static open(
    netns: string | undefined,
    log: Logger,
    onReopen?: (cause: string, err?: unknown) => void,
    clock: Clock = systemClock,
  ): XdpFeatures {
    return new XdpFeatures(netns, log, onReopen, clock);
  }

  #open(): NetlinkSocket {
    const sock = NetlinkSocket.open({
      protocol: NETLINK_GENERIC,
      ...(this.#netns === undefined ? {} : { netns: this.#netns }),
    });
    sock.receive({
      onData: (chunk) => {
        if (sock === this.#sock) this.#onData(chunk);
      },
      onError: (err: SystemError) => {
        if (sock !== this.#sock) return;
        this.#pending?.done(err); // asked again at the next poll
        // A reply dropped (ENOBUFS) or too big (EMSGSIZE): the socket itself is fine.
        if (err.code !== 'ENOBUFS' && err.code !== 'EMSGSIZE') this.#reopen(err.code);
      },
    });
    sock.unref();
    return sock;
  }

  /** Replaces the socket after `cause`; a failure leaves the old one (tried again next time). */
  #reopen(cause: string): void {
    if (this.#closed) return;
    let fresh: NetlinkSocket;
    try {
      fresh = this.#open();
    } catch (err) {
      this.#onReopen?.(cause, err);
      return;
    }
    const old = this.#sock;
    this.#sock = fresh;
    old.close();
    this.#onReopen?.(cause);
  }

  #onData(chunk: Buffer): void {
    this.#lastAnswer = this.#clock.now();
    const p = this.#pending;
    if (p === undefined) return;
    for (let off = 0; off < chunk.length;) {
      const len = off + 16 <= chunk.length ? chunk.readUInt32LE(off) : 0;
      if (len < 16 || off + len > chunk.length) {
        p.done(new Error('genetlink: a reply was cut short'));
        return;
      }
      const type = chunk.readUInt16LE(off + 4);
      if (chunk.readUInt32LE(off + 8) === p.seq) {
        if (type === NLMSG_DONE) return p.done();
        if (type === NLMSG_ERROR) {
          const errno = -chunk.readInt32LE(off + 16);
          if (errno === 0) return p.done();
          return p.done(Object.assign(new Error(`genetlink: errno ${errno}`), { errno }));
        }
        p.out.push(Buffer.from(chunk.subarray(off, off + len)));
      }
      off += (len + 3) & ~3;
    }
  }

  #ask(msg: (seq: number) => Buffer): Promise<Buffer[]> {
    const seq = this.#seq++;
    this.#lastAsk = this.#clock.now();
    return new Promise((resolve, reject) => {
      const out: Buffer[] = [];
      const sock = this.#sock;
      // the socket keeps the process alive only while an answer is awaited
      sock.ref();
      const timer = new Timer(this.#clock, { unref: true });
      timer.start(ASK_TIMEOUT_MS, () => {
        this.#pending?.done(new TimeoutError(`genetlink: no answer in ${ASK_TIMEOUT_MS} ms`));
        this.#reopen('ETIMEDOUT');
      });
      this.#pending = {
        seq,
        out,
        done: (err) => {
          timer.cancel();
          this.#pending = undefined;
          if (!sock.closed) sock.unref();
          if (err) reject(err);
          else resolve(out);
        },
      };
      try {
        sock.send(msg(seq));
      } catch (err) {
        this.#pending?.done(err as Error);
      }
    });
  }

  async #familyId(): Promise<number | undefined> {
    if (this.#family !== null) return this.#family;
    try {
      const name = attr(CTRL_ATTR_FAMILY_NAME, Buffer.from('netdev\0'));
      const [m] = await this.#ask((seq) =>
        request(GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, seq, CTRL_CMD_GETFAMILY, name),
      );
      const id = m && attrs(m, 20, m.length).get(CTRL_ATTR_FAMILY_ID);
      this.#family = id === undefined ? undefined : id.readUInt16LE(0);
    } catch (err) {
      // ENOENT: no such family (Linux before 6.3); anything else is tried again next time
      if ((err as { errno?: number }).errno !== ENOENT) throw err;
      this.#log.info({ err: describeError(err) }, 'xdp: no netdev family; xdp_features unknown');
      this.#family = undefined;
    }
    return this.#family;
  }

  /** ifindex -> xdp_features of every device, or undefined when the kernel cannot tell. */
  async read(): Promise<Map<number, bigint> | undefined> {
    const family = await this.#familyId();
    if (family === undefined) return undefined;
    const msgs = await this.#ask((seq) =>
      request(family, NLM_F_REQUEST | NLM_F_DUMP, seq, NETDEV_CMD_DEV_GET, Buffer.alloc(0)),
    );
    const out = new Map<number, bigint>();
    for (const m of msgs) {
      const a = attrs(m, 20, m.length);
      const ifindex = a.get(NETDEV_A_DEV_IFINDEX);
      const feat = a.get(NETDEV_A_DEV_XDP_FEATURES);
      if (ifindex !== undefined && feat !== undefined && feat.length >= 8) {
        out.set(ifindex.readUInt32LE(0), feat.readBigUInt64LE(0));
      }
    }
    return out;
  }

  /** Why the socket is not alive: asked, and silent for `ms` (across reopens). */
  silence(ms: number): string | undefined {
    const quiet = this.#lastAsk - this.#lastAnswer;
    if (quiet < ms) return undefined;
    return `the genl socket has not answered for ${Math.round(quiet / 1000)} s`;
  }

  close(): void {
    this.#closed = true;
    this.#pending?.done(new Error('closed'));
    this.#sock.close();
  }
}
