// Real UDP traffic between two lab namespaces: a receiver counts datagrams, a sender sends
// them, both as `node` processes inside their namespaces.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

// The receiver asks for a socket buffer (4 MiB unless told; the kernel caps it at
// net.core.rmem_max) and, once told the sender is done, reads until nothing has come for
// 300 ms: a receiver that the scheduler held back still has datagrams queued, which a fixed
// wait would leave unread.
const RECEIVER = `
const type = process.argv[1].includes(':') ? 'udp6' : 'udp4';
const s = require('node:dgram').createSocket({ type, recvBufferSize: Number(process.argv[3]) });
let n = 0;
let last = Date.now();
s.on('message', () => { n++; last = Date.now(); });
s.bind(Number(process.argv[2]), () => process.stdout.write('ready\\n'));
process.stdin.on('data', () => {});
process.stdin.on('end', () => {
  const ended = Date.now();
  const check = () => {
    const now = Date.now();
    if (now - Math.max(last, ended) >= 300 || now - ended > 10000) {
      process.stdout.write(n + '\\n');
      process.exit(0);
    }
    setTimeout(check, 50);
  };
  check();
});
`;

const SENDER = `
const [ip, port, count] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const s = require('node:dgram').createSocket(ip.includes(':') ? 'udp6' : 'udp4');
const payload = Buffer.alloc(64, 0x61);
let sent = 0;
function burst() {
  for (let i = 0; i < 50 && sent < count; i++, sent++) s.send(payload, port, ip);
  if (sent < count) setTimeout(burst, 2); else setTimeout(() => s.close(), 50);
}
burst();
`;

const running = new Set<ChildProcess>();
/** Set by stopFlows(): no new traffic process starts afterwards. */
let stopped = false;

function inNetns(
  netns: string,
  script: string,
  args: string[],
): ChildProcess & { stdin: Writable; stdout: Readable } {
  if (stopped) throw new Error('traffic stopped (interrupted)');
  const child = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Ends the traffic processes still running (Ctrl-C in the middle of a flow). */
export async function stopFlows(): Promise<void> {
  stopped = true;
  const waits = [...running].map(
    (c) =>
      new Promise((r) =>
        c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r),
      ),
  );
  for (const c of running) c.kill('SIGKILL');
  await Promise.all(waits);
}

/** What a flow sent, what its receiver read, and what the receiver's kernel dropped. */
export interface FlowResult {
  sent: number;
  /** Datagrams the receiving process read. */
  received: number;
  /**
   * Datagrams that reached the receiving namespace but found its socket buffer full (the
   * namespace's UDP RcvbufErrors during the flow): a receiver the scheduler held back on a
   * busy machine, not a loss on the way.
   */
  droppedAtReceiver: number;
}

/** The namespace's UDP (IPv4) or UDP6 receive-buffer drops, from /proc/net/snmp(6). */
function rcvbufErrors(netns: string, v6: boolean): number {
  const r = spawnSync(
    'ip',
    ['netns', 'exec', netns, 'cat', v6 ? '/proc/net/snmp6' : '/proc/net/snmp'],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`reading UDP counters in ${netns}: ${r.stderr.trim()}`);
  if (v6) {
    const line = r.stdout.split('\n').find((l) => l.startsWith('Udp6RcvbufErrors'));
    return Number(line?.split(/\s+/)[1] ?? NaN);
  }
  const lines = r.stdout.split('\n');
  const head = lines.find((l) => l.startsWith('Udp: InDatagrams'))?.split(/\s+/) ?? [];
  const vals = lines.find((l) => /^Udp: \d/.test(l))?.split(/\s+/) ?? [];
  return Number(vals[head.indexOf('RcvbufErrors')] ?? NaN);
}

/** Hooks on a flow's receiving process (a test stalls it to prove the drop count). */
export interface FlowHooks {
  /** The receiver listens; the sender has not started. */
  listening?(rx: ChildProcess): void;
  /** The sender has sent everything and exited. */
  sent?(rx: ChildProcess): void;
}

export interface FlowOptions {
  /** The receiver's UDP port (default: a random one in 40000-49999). */
  port?: number;
  hooks?: FlowHooks;
  /** The receiving socket's SO_RCVBUF request in bytes (default 4 MiB). */
  rcvbuf?: number;
}

/** Sends `count` UDP datagrams from `fromNs` to `toIp` in `toNs` and counts what arrived. */
export async function udpFlow(
  fromNs: string,
  toNs: string,
  toIp: string,
  count: number,
  opts: FlowOptions = {},
): Promise<FlowResult> {
  const { port = 40_000 + Math.floor(Math.random() * 10_000), hooks = {}, rcvbuf = 4 << 20 } = opts;
  const v6 = toIp.includes(':');
  const rx = inNetns(toNs, RECEIVER, [toIp, String(port), String(rcvbuf)]);
  let out = '';
  rx.stdout.on('data', (d: Buffer) => (out += d.toString()));
  let early: (code: number | null) => void = () => {};
  await new Promise<void>((resolve, reject) => {
    early = (code) => reject(new Error(`receiver in ${toNs} exited (${code})`));
    rx.once('exit', early);
    const check = () => (out.includes('ready') ? resolve() : setTimeout(check, 5));
    check();
  });
  hooks.listening?.(rx);
  const dropsBefore = rcvbufErrors(toNs, v6);
  const tx = inNetns(fromNs, SENDER, [toIp, String(port), String(count)]);
  tx.stdin.end();
  await new Promise((resolve) => tx.once('exit', resolve));
  hooks.sent?.(rx);
  rx.off('exit', early);
  const done = new Promise((resolve) => rx.once('exit', resolve));
  rx.stdin.end();
  await done;
  const received = Number(out.split('\n').filter(Boolean).pop());
  return {
    sent: count,
    received: Number.isFinite(received) ? received : 0,
    droppedAtReceiver: Math.max(0, rcvbufErrors(toNs, v6) - dropsBefore),
  };
}

/** Datagrams that reached the receiving host: read, or dropped by its full socket. */
export function arrived(f: FlowResult): number {
  return f.received + f.droppedAtReceiver;
}
