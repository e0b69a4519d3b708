// A throwaway single-member etcd for the tests, the benchmark and the demo: Debian's
// `etcd` binary (package etcd-server) started as a child process on loopback, random
// ports, a temporary data dir (in memory where /dev/shm exists), short raft timers;
// stopped (or killed) by its own PID. Never a system service, never anything but 127.0.0.1.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NotFoundError, TimeoutError } from '../errors/index.js';
import { monotonicClock, sleep, type Clock } from '../sched/index.js';

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
  /**
   * Clients over TLS (PEM files): the server's certificate and key, and the CA that client
   * certificates must be signed by (--client-cert-auth). Peers stay plain (loopback).
   */
  tls?: { cert: string; key: string; ca: string };
  /**
   * A member of a cluster: its name, and every member's name and peer port (this one's
   * included). Default: a cluster of one.
   */
  member?: { name: string; peers: { name: string; peerPort: number }[]; token: string };
  /** Fixed ports (a cluster's members must know each other's peer ports in advance). */
  ports?: { client: number; peer: number };
  /** Times the waits for the server (it is a real process: default the monotonic clock). */
  clock?: Clock;
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
  readonly #clock: Clock;
  readonly #onSpawn: ((pid: number, dataDir: string) => void) | undefined;
  readonly #tls: LocalEtcdOptions['tls'];
  readonly #member: LocalEtcdOptions['member'];
  #started = false;
  #child: ChildProcess | undefined;
  #log: string[] = [];

  private constructor(
    opts: Required<
      Pick<LocalEtcdOptions, 'binary' | 'heartbeatMs' | 'electionMs' | 'startTimeoutMs'>
    > &
      LocalEtcdOptions,
    ports: [number, number],
    dir: string,
  ) {
    this.#binary = opts.binary;
    this.heartbeatMs = opts.heartbeatMs;
    this.electionMs = opts.electionMs;
    this.#startTimeoutMs = opts.startTimeoutMs;
    this.#clock = opts.clock ?? monotonicClock;
    this.#onSpawn = opts.onSpawn;
    this.#tls = opts.tls;
    this.#member = opts.member;
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
      ...(options.clock ? { clock: options.clock } : {}),
    };
    const dir = mkdtempSync(join(memoryDir(), 'fk-etcd-'));
    const ports: [number, number] = options.ports
      ? [options.ports.client, options.ports.peer]
      : [await freePort(), await freePort()];
    const etcd = new LocalEtcd(
      {
        ...opts,
        ...(options.tls ? { tls: options.tls } : {}),
        ...(options.member ? { member: options.member } : {}),
      },
      ports,
      dir,
    );
    try {
      await etcd.resume();
    } catch (err) {
      await etcd.destroy();
      throw err;
    }
    return etcd;
  }

  /** `127.0.0.1:PORT` (or `https://127.0.0.1:PORT` with TLS), the endpoint clients use. */
  get endpoint(): string {
    return `${this.#tls ? 'https://' : ''}127.0.0.1:${this.clientPort}`;
  }

  /** The member's name (`fk` alone). */
  get name(): string {
    return this.#member?.name ?? 'fk';
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
    const client = `${this.#tls ? 'https' : 'http'}://127.0.0.1:${this.clientPort}`;
    const m = this.#member;
    const cluster = m
      ? m.peers.map((p) => `${p.name}=http://127.0.0.1:${p.peerPort}`).join(',')
      : `fk=${peer}`;
    const args = [
      `--name=${this.name}`,
      `--data-dir=${this.dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=${cluster}`,
      ...(m ? [`--initial-cluster-token=${m.token}`] : []),
      ...(m && this.#started ? ['--initial-cluster-state=existing'] : []),
      `--heartbeat-interval=${this.heartbeatMs}`,
      `--election-timeout=${this.electionMs}`,
      '--logger=zap',
      '--log-level=warn',
      ...(this.#tls
        ? [
            `--cert-file=${this.#tls.cert}`,
            `--key-file=${this.#tls.key}`,
            `--trusted-ca-file=${this.#tls.ca}`,
            '--client-cert-auth',
          ]
        : []),
    ];
    this.#started = true;
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
    const clock = this.#clock;
    const deadline = clock.now() + this.#startTimeoutMs;
    while (clock.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`etcd exited (${child.exitCode ?? child.signalCode}): ${this.recentLog()}`);
      }
      if (this.#member ? await this.#listening() : await healthy(this.clientPort, this.#tls)) {
        return;
      }
      await sleep(clock, 50);
    }
    throw new TimeoutError(`etcd on ${this.endpoint} not ready after ${this.#startTimeoutMs} ms`);
  }

  /** The client port accepts connections (a cluster member answers once it has a quorum). */
  #listening(): Promise<boolean> {
    return new Promise((resolve) => {
      const s = connect({ host: '127.0.0.1', port: this.clientPort }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
  }

  /** etcd's /health: a leader, and this member answers (the TLS client certificate if any). */
  healthy(): Promise<boolean> {
    return healthy(this.clientPort, this.#tls);
  }
}

/**
 * A local etcd cluster of `size` members (default 3) on loopback: each a LocalEtcd with
 * ports of its own, started together; `endpoints` for clients. Members can be stopped,
 * SIGSTOPped (cut off from the others and from their clients) or killed one by one.
 */
export class LocalEtcdCluster {
  readonly members: LocalEtcd[];

  private constructor(members: LocalEtcd[]) {
    this.members = members;
  }

  static async start(
    size = 3,
    options: Omit<LocalEtcdOptions, 'member' | 'ports'> = {},
  ): Promise<LocalEtcdCluster> {
    const ports = [];
    for (let i = 0; i < size; i++) ports.push({ client: await freePort(), peer: await freePort() });
    const token = `fk-${process.pid}-${ports[0]!.client}`;
    const peers = ports.map((p, i) => ({ name: `fk${i}`, peerPort: p.peer }));
    const members = await Promise.all(
      ports.map((p, i) =>
        LocalEtcd.start({ ...options, ports: p, member: { name: `fk${i}`, peers, token } }),
      ),
    );
    const cluster = new LocalEtcdCluster(members);
    const clock = options.clock ?? monotonicClock;
    const deadline = clock.now() + (options.startTimeoutMs ?? 15_000);
    while (!(await Promise.all(members.map((m) => m.healthy()))).every(Boolean)) {
      if (clock.now() > deadline) {
        await cluster.destroy();
        throw new TimeoutError('the etcd cluster has no leader');
      }
      await sleep(clock, 50);
    }
    return cluster;
  }

  get endpoints(): string[] {
    return this.members.map((m) => m.endpoint);
  }

  /** Kills every member and removes their data. Idempotent. */
  async destroy(): Promise<void> {
    await Promise.all(this.members.map((m) => m.destroy()));
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
async function healthy(port: number, tls?: LocalEtcdOptions['tls']): Promise<boolean> {
  if (tls) return healthyTls(port, tls);
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

/**
 * /health over TLS, with the client certificate (the server asks for one). node:https is
 * loaded here, not at start: it brings tls and crypto (~8 MiB of RSS) that an agent outside
 * cluster mode never uses (docs/neighbor.md, "Memory").
 */
async function healthyTls(
  port: number,
  tls: NonNullable<LocalEtcdOptions['tls']>,
): Promise<boolean> {
  const { request } = await import('node:https');
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/health',
        ca: readFileSync(tls.ca),
        cert: readFileSync(tls.cert),
        key: readFileSync(tls.key),
        timeout: 500,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve(res.statusCode === 200 && body.includes('"true"')));
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}
