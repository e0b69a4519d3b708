// A stand-in for systemd's side of sd_notify(3): a datagram socket (a path or an abstract
// "@name") whose messages are collected, read by Python's socket module, which Node lacks
// for AF_UNIX datagrams. systemd-notify(1) checks the receiver itself (test/native/notify).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { cleanupLater } from './cleanup.js';
import { waitFor } from './netns.js';

const RECEIVER = `
import json, socket, sys
addr = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind('\\0' + addr[1:] if addr.startswith('@') else addr)
print(json.dumps({'listening': addr}), flush=True)
while True:
    data, _ = s.recvfrom(65536)
    print(json.dumps({'msg': data.decode()}), flush=True)
`;

export interface NotifyReceiver {
  socket: string;
  /** Every datagram so far, in order. */
  messages: string[];
  /** Waits for a datagram (after `from` ones) that `match` accepts; returns it. */
  next(
    match: (m: string) => boolean,
    opts?: { from?: number; timeoutMs?: number },
  ): Promise<string>;
  close(): void;
}

/** Listens on `socket`; closed when the current test (or file) ends. */
export async function notifyReceiver(socket: string): Promise<NotifyReceiver> {
  const child = spawn('/usr/bin/python3', ['-c', RECEIVER, socket], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const messages: string[] = [];
  let listening = false;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const m = JSON.parse(line) as { listening?: string; msg?: string };
    if (m.listening !== undefined) listening = true;
    if (m.msg !== undefined) messages.push(m.msg);
  });
  const close = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  cleanupLater(close);
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`notify receiver exited ${child.exitCode}`);
      return listening;
    },
    { what: `notify receiver on ${socket}` },
  );
  return {
    socket,
    messages,
    close,
    next: (match, opts = {}) =>
      waitFor(() => messages.slice(opts.from ?? 0).find(match), {
        timeoutMs: opts.timeoutMs ?? 20_000,
        what: `a notification on ${socket}`,
      }),
  };
}
