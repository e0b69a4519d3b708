// A throwaway single-member etcd for the tests, the benchmark and the demo: Debian's
// `etcd` binary (package etcd-server) started as a child process on loopback, random
// ports, a temporary data dir (in memory where /dev/shm exists), short raft timers;
// stopped (or killed) by its own PID. Never a system service, never anything but 127.0.0.1.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NotFoundError, TimeoutError } from '../errors/index.js';

export interface LocalEtcdOptions {
  /** The etcd binary (default: `etcd` found on PATH, /usr/bin/etcd on Debian). */
  binary?: string;
  /** Raft heartbeat in ms (etcd's default 100; 50 lets etcd grant 1 s leases quickly). */
  heartbeatMs?: number;
  /** Raft election timeout in ms (etcd's default 1000). etcd's shortest lease TTL is
   * ceil(1.5 × election timeout) seconds: ≤ 666 ms gives 1 s leases. */
  electionMs?: number;
  /** How long to wait for the server to answer after a (re)start. */
  startTimeoutMs?: number;
  /** Called with the PID of every etcd process started (start and each restart) and its data
   * dir, e.g. for a watchdog that ends it and removes the dir should the caller die first. */
  onSpawn?: (pid: number, dataDir: string) => void;
}

/** A running (or stopped) local etcd; `restart()` keeps the data dir and ports. */
export class LocalEtcd {
  readonly dataDir: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly heartbeatMs: number;
  readonly electionMs: number;
  readonly #binary: string;
  readonly #startTimeoutMs: number;
  readonly #onSpawn: ((pid: number, dataDir: string) => void) | undefined;
  #child: ChildProcess | undefined;
  #log: string[] = [];

  private constructor(
    opts: Required<Omit<LocalEtcdOptions, 'onSpawn'>> & LocalEtcdOptions,
    ports: [number, number],
    dir: string,
  ) {
    this.#binary = opts.binary;
    this.heartbeatMs = opts.heartbeatMs;
    this.electionMs = opts.electionMs;
    this.#startTimeoutMs = opts.startTimeoutMs;
    this.#onSpawn = opts.onSpawn;
    [this.clientPort, this.peerPort] = ports;
    this.dataDir = dir;
  }

  /** Starts a fresh etcd and resolves once it answers on its client port. */
  static async start(options: LocalEtcdOptions = {}): Promise<LocalEtcd> {
    const binary = options.binary ?? findEtcd();
    const opts = {
      binary,
      heartbeatMs: options.heartbeatMs ?? 50,
      electionMs: options.electionMs ?? 500,
      startTimeoutMs: options.startTimeoutMs ?? 15_000,
      onSpawn: options.onSpawn,
    };
    const dir = mkdtempSync(join(memoryDir(), 'fk-etcd-'));
    const etcd = new LocalEtcd(opts, [await freePort(), await freePort()], dir);
    try {
      await etcd.resume();
    } catch (err) {
      await etcd.destroy();
      throw err;
    }
    return etcd;
  }

  /** `127.0.0.1:PORT`, the endpoint clients use. */
  get endpoint(): string {
    return `127.0.0.1:${this.clientPort}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  /** The settings as printed by the benchmark. */
  describe(): string {
    return `etcd (single member, ${this.endpoint}) heartbeat ${this.heartbeatMs} ms, election timeout ${this.electionMs} ms`;
  }

  /** Starts the process again on the same ports and data dir (after stop/kill). */
  async resume(): Promise<void> {
    if (this.#child) return;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const client = `http://127.0.0.1:${this.clientPort}`;
    const args = [
      '--name=fk',
      `--data-dir=${this.dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=fk=${peer}`,
      `--heartbeat-interval=${this.heartbeatMs}`,
      `--election-timeout=${this.electionMs}`,
      '--logger=zap',
      '--log-level=warn',
    ];
    const child = spawn(this.#binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    if (child.pid !== undefined) this.#onSpawn?.(child.pid, this.dataDir);
    this.#log = [];
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (s: string) => {
      this.#log.push(s);
      if (this.#log.length > 50) this.#log.shift();
    });
    child.on('exit', () => {
      if (this.#child === child) this.#child = undefined;
    });
    await this.#waitReady(child);
  }

  /** Stops the process: SIGKILL (a crash) or SIGTERM (etcd's clean shutdown). */
  async stop(signal: 'SIGKILL' | 'SIGTERM' = 'SIGTERM'): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null) {
      this.#child = undefined;
      return;
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
    this.#child = undefined;
  }

  /** Stops the process and then starts it again (same data, same ports). */
  async restart(signal: 'SIGKILL' | 'SIGTERM' = 'SIGTERM'): Promise<void> {
    await this.stop(signal);
    await this.resume();
  }

  /** Kills the process and removes the data dir. Idempotent. */
  async destroy(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** The last lines etcd wrote to stderr (for failure messages). */
  recentLog(): string {
    return this.#log.join('');
  }

  async #waitReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + this.#startTimeoutMs;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`etcd exited (${child.exitCode ?? child.signalCode}): ${this.recentLog()}`);
      }
      if (await healthy(this.clientPort)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new TimeoutError(`etcd on ${this.endpoint} not ready after ${this.#startTimeoutMs} ms`);
  }
}

/**
 * Where the data dir goes: /dev/shm (memory) when it is there, so that etcd's fsyncs do not
 * wait for a disk that other work keeps busy (a stalled fsync stalls the leader, and every
 * lease expires at once); else the temp dir. A throwaway etcd loses nothing by it.
 */
function memoryDir(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** etcd's HTTP /health says the member has a leader and answers. */
async function healthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, {
      signal: AbortSignal.timeout(500),
    });
    const body = (await res.json()) as { health?: string };
    return res.ok && body.health === 'true';
  } catch {
    return false;
  }
}

/** The etcd binary: `etcd` on PATH or /usr/bin/etcd; NotFoundError saying what to install. */
export function findEtcd(): string {
  for (const dir of (process.env['PATH'] ?? '').split(':').concat('/usr/bin')) {
    const p = join(dir, 'etcd');
    if (dir && existsSync(p)) return p;
  }
  throw new NotFoundError(
    'etcd binary not found: install Debian package etcd-server (make deps, or apt-get install etcd-server)',
  );
}

/** A port that was free a moment ago on 127.0.0.1 (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() =>
        typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port')),
      );
    });
  });
}
