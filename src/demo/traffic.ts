// Real UDP traffic between two lab namespaces: a receiver counts datagrams, a sender sends
// them, both as `node` processes inside their namespaces.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

const RECEIVER = `
const s = require('node:dgram').createSocket(process.argv[1].includes(':') ? 'udp6' : 'udp4');
let n = 0;
s.on('message', () => n++);
s.bind(Number(process.argv[2]), () => process.stdout.write('ready\\n'));
process.stdin.on('data', () => {});
process.stdin.on('end', () => setTimeout(() => { process.stdout.write(n + '\\n'); process.exit(0); }, 200));
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

export async function udpFlow(
  fromNs: string,
  toNs: string,
  toIp: string,
  count: number,
  port = 40_000 + Math.floor(Math.random() * 10_000),
): Promise<{ sent: number; received: number }> {
  const rx = inNetns(toNs, RECEIVER, [toIp, String(port)]);
  let out = '';
  rx.stdout.on('data', (d: Buffer) => (out += d.toString()));
  let early: (code: number | null) => void = () => {};
  await new Promise<void>((resolve, reject) => {
    early = (code) => reject(new Error(`receiver in ${toNs} exited (${code})`));
    rx.once('exit', early);
    const check = () => (out.includes('ready') ? resolve() : setTimeout(check, 5));
    check();
  });
  const tx = inNetns(fromNs, SENDER, [toIp, String(port), String(count)]);
  tx.stdin.end();
  await new Promise((resolve) => tx.once('exit', resolve));
  rx.off('exit', early);
  const done = new Promise((resolve) => rx.once('exit', resolve));
  rx.stdin.end();
  await done;
  const received = Number(out.split('\n').filter(Boolean).pop());
  return { sent: count, received: Number.isFinite(received) ? received : 0 };
}
