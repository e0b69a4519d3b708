// A TCP port on 127.0.0.1 for a process a test starts (an agent's metrics, a Prometheus).
// Taken below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by
// default), where bind(0) and connect() never land: a port found free by binding port 0 and
// closing it again can be handed to another process's bind(0) (an etcd, a proxy of a file
// running beside) before the test's process binds it, as a CI run saw (EADDRINUSE).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
  } catch {
    return 32768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A port from 10000 up to the ephemeral range, at random, that binds on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  const high = Math.max(ephemeralLow(), 10_001);
  for (let i = 0; i < 100; i++) {
    const port = 10_000 + Math.floor(Math.random() * (high - 10_000));
    if (await bindable(port)) return port;
  }
  throw new Error('no free port below the ephemeral range after 100 tries');
}
