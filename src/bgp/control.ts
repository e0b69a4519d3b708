// BIRD's control socket (what birdc speaks): the daemon greets with "0001 BIRD x ready.",
// each command is one line, each reply line starts with a four-digit code followed by "-"
// (more follows) or " " (the last line), or with a space (more of the line before). Codes
// 8xxx and 9xxx are errors. One command at a time per connection.
import { connect, type Socket } from 'node:net';

export interface BirdReply {
  /** Each line's code (the code of the line it continues, for continuations) and text. */
  lines: { code: number; text: string }[];
}

export class BirdControlError extends Error {
  constructor(
    readonly command: string,
    readonly reply: string,
  ) {
    super(`birdc ${command}: ${reply}`);
  }
}

/** One connection to the control socket; commands are queued. */
export class BirdControl {
  #sock: Socket | undefined;
  #buf = '';
  #waiter: ((line: string | Error) => void) | undefined;
  #lines: string[] = [];
  #queue: Promise<unknown> = Promise.resolve();

  /** Connects and reads the greeting; throws when nothing listens. */
  static async open(path: string): Promise<BirdControl> {
    const c = new BirdControl();
    await new Promise<void>((resolve, reject) => {
      const s = connect(path);
      s.once('connect', () => resolve());
      s.once('error', reject);
      c.#sock = s;
    });
    c.#sock!.on('data', (d: Buffer) => c.#data(d.toString('utf8')));
    c.#sock!.on('error', (err) => c.#fail(err));
    c.#sock!.on('close', () => c.#fail(new Error('the control socket closed')));
    const hello = await c.#line();
    if (!hello.startsWith('0001 ')) throw new Error(`not a BIRD control socket: ${hello}`);
    return c;
  }

  #data(text: string): void {
    this.#buf += text;
    let nl: number;
    while ((nl = this.#buf.indexOf('\n')) >= 0) {
      this.#lines.push(this.#buf.slice(0, nl));
      this.#buf = this.#buf.slice(nl + 1);
    }
    this.#wake();
  }

  #wake(): void {
    if (this.#waiter && this.#lines.length > 0) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w(this.#lines.shift()!);
    }
  }

  #closed: Error | undefined;
  #fail(err: Error): void {
    this.#closed ??= err;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.(err);
  }

  #line(): Promise<string> {
    if (this.#lines.length > 0) return Promise.resolve(this.#lines.shift()!);
    if (this.#closed) return Promise.reject(this.#closed);
    return new Promise((resolve, reject) => {
      this.#waiter = (l) => (l instanceof Error ? reject(l) : resolve(l));
    });
  }

  /** Runs one command; rejects with BirdControlError when the reply's code is 8xxx/9xxx. */
  command(cmd: string): Promise<BirdReply> {
    const run = async (): Promise<BirdReply> => {
      this.#sock!.write(cmd + '\n');
      const lines: BirdReply['lines'] = [];
      let code = 0;
      for (;;) {
        const l = await this.#line();
        const m = /^(\d{4})([ -])(.*)$/.exec(l);
        if (m) {
          code = Number(m[1]);
          lines.push({ code, text: m[3]! });
          if (code >= 8000) throw new BirdControlError(cmd, m[3]!);
          if (m[2] === ' ') return { lines };
        } else {
          lines.push({ code, text: l.replace(/^ /, '') });
        }
      }
    };
    const p = this.#queue.then(run, run);
    this.#queue = p.catch(() => undefined);
    return p;
  }

  close(): void {
    this.#sock?.destroy();
  }
}

/** One BGP protocol as `show protocols all` tells it. */
export interface BirdProtocolState {
  name: string;
  /** up, start, down, … (BIRD's protocol state). */
  state: string;
  since: string;
  /** Established, Idle, Active, Connect, OpenSent, … */
  info: string;
  /** Routes exported to the peer (advertised now). */
  exported: number;
  lastError: string;
  /** The peer sent the graceful restart capability (it keeps our routes on a planned restart). */
  peerGracefulRestart: boolean;
}

/** Parses `show protocols all` (codes 1002 rows, 1006 details) into BGP protocol states. */
export function parseProtocols(reply: BirdReply): BirdProtocolState[] {
  const out: BirdProtocolState[] = [];
  let cur: BirdProtocolState | undefined;
  let caps: 'local' | 'neighbor' | undefined; // the capability list being read
  for (const { code, text } of reply.lines) {
    if (code === 1002) {
      const f = text.trim().split(/\s+/);
      cur = undefined;
      if (f[1] !== 'BGP') continue;
      cur = {
        name: f[0]!,
        state: f[3] ?? '',
        since: f[4] ?? '',
        info: f.slice(5).join(' '),
        exported: 0,
        lastError: '',
        peerGracefulRestart: false,
      };
      caps = undefined;
      out.push(cur);
    } else if (code === 1006 && cur) {
      const routes = /Routes:\s+\d+ imported, (?:\d+ filtered, )?(\d+) exported/.exec(text);
      if (routes) cur.exported += Number(routes[1]);
      const err = /Last error:\s+(.*)$/.exec(text);
      if (err) cur.lastError = err[1]!.trim();
      const t = text.trim();
      if (t === 'Local capabilities') caps = 'local';
      else if (t === 'Neighbor capabilities') caps = 'neighbor';
      else if (/^(Session|Channel)\b/.test(t)) caps = undefined;
      else if (caps === 'neighbor' && t === 'Graceful restart') cur.peerGracefulRestart = true;
    }
  }
  return out;
}
