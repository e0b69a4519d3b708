// A small world for control-plane tests: one namespace the agent manages (`dev` towards a
// peer namespace, 10.88.0.1/16 and fd88::1/64 on it), the agent started from the built CLI
// with a config file, driven over its control socket with plain HTTP, and stopped or killed
// by its PID. Everything is removed when the test file ends, also when a test fails.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll } from 'vitest';
import { cleanupLater } from '../helpers/cleanup.js';
import { ip, ipJson, makeNetns, sysctl, vethPair, waitFor } from '../helpers/netns.js';

export const BIN = resolve('bin/fibkeeper.js');

export interface AgentWorld {
  /** The namespace the agent manages. */
  ns: string;
  peer: string;
  /** The agent's device towards the peer (the external interface and a selected device). */
  dev: string;
  dir: string;
  sock: string;
  stateFile: string;
  configFile: string;
}

export function makeWorld(tag: string, opts: { dir?: string } = {}): AgentWorld {
  const ns = makeNetns(`${tag}a`, { scope: 'file' });
  const peer = makeNetns(`${tag}p`, { scope: 'file' });
  vethPair(ns, 'fk-a', peer, 'eth0');
  ip(ns, 'addr', 'add', '10.88.0.1/16', 'dev', 'fk-a');
  ip(ns, 'addr', 'add', 'fd88::1/64', 'dev', 'fk-a', 'nodad');
  ip(peer, 'addr', 'add', '10.88.0.2/16', 'dev', 'eth0');
  sysctl(ns, 'net.ipv4.ip_forward', 1);
  sysctl(ns, 'net.ipv6.conf.all.forwarding', 1);
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), `fk-${tag}-`));
  if (!opts.dir) cleanupLater(() => rmSync(dir, { recursive: true, force: true }));
  return {
    ns,
    peer,
    dev: 'fk-a',
    dir,
    sock: join(dir, 'run', 'api.sock'),
    stateFile: join(dir, 'state', 'state.json'),
    configFile: join(dir, 'config.yaml'),
  };
}

export interface ConfigOptions {
  xdp?: boolean;
  forwardableStatic?: string[];
  extipStatic?: string[];
  /** More lines under `api:`. */
  api?: string[];
  /** More top-level lines. */
  extra?: string[];
}

/** The config the tests start from: XDP off unless asked (it is not what they test). */
export function baseConfig(w: AgentWorld, o: ConfigOptions = {}): string {
  const list = (v: string[] | undefined) => `[${(v ?? []).map((x) => `"${x}"`).join(', ')}]`;
  return [
    `netns: ${w.ns}`,
    `devices: ["${w.dev}"]`,
    `stateFile: ${w.stateFile}`,
    'xdp:',
    `  enabled: ${o.xdp === true}`,
    `  pinDir: ${join(w.dir, 'bpf')}`,
    'forwardable:',
    `  static: ${list(o.forwardableStatic)}`,
    'extip:',
    '  enabled: true',
    '  holderKind: bridge',
    `  interface: ${w.dev}`,
    '  announceCount: 1',
    `  static: ${list(o.extipStatic)}`,
    'api:',
    `  socket: ${w.sock}`,
    ...(o.api ?? []).map((l) => `  ${l}`),
    'metrics:',
    '  address: ""',
    ...(o.extra ?? []),
  ].join('\n');
}

export function writeConfig(w: AgentWorld, text: string): void {
  writeFileSync(w.configFile, text + '\n');
}

export interface Reply {
  status: number;
  body: Record<string, unknown>;
}

/** One request over the control socket (a connection of its own). Rejects on a broken connection. */
export function call(
  sock: string,
  method: string,
  path: string,
  body?: unknown,
  opts: { timeoutMs?: number; headers?: Record<string, string>; text?: string } = {},
): Promise<Reply> {
  const payload = opts.text ?? (body === undefined ? undefined : JSON.stringify(body));
  const type = opts.text !== undefined ? 'text/plain' : 'application/json';
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath: sock,
        agent: false,
        method,
        path,
        timeout: opts.timeoutMs ?? 60_000,
        headers: {
          ...(payload
            ? { 'content-type': type, 'content-length': String(Buffer.byteLength(payload)) }
            : {}),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown>;
          try {
            parsed = JSON.parse(text) as Record<string, unknown>;
          } catch {
            parsed = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in ${opts.timeoutMs ?? 60_000} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

const agents = new Set<AgentProc>();
afterAll(() => {
  for (const a of agents) {
    if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill('SIGKILL');
  }
});

export interface AgentProc {
  child: ChildProcess;
  pid: number;
  /** The agent's stderr and stdout so far. */
  log(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `fibkeeper run --config FILE` (optionally through a wrapper such as `nsenter`), and
 * resolves once the control API reports ready. `ready: false` returns right after spawn.
 */
export async function startAgent(
  w: AgentWorld,
  opts: {
    wrap?: string[];
    args?: string[];
    ready?: boolean;
    timeoutMs?: number;
    /** Options of `node` itself (the shipped unit gives AGENT_NODE_FLAGS of src/cli/node-flags.ts). */
    nodeArgs?: string[];
    /** More environment (FIBKEEPER_TEST_FAULTS). */
    env?: Record<string, string>;
  } = {},
): Promise<AgentProc> {
  const logPath = join(w.dir, `agent-${Date.now()}-${Math.random().toString(16).slice(2)}.log`);
  const fd = openSync(logPath, 'a');
  const argv = [
    ...(opts.wrap ?? []),
    'node',
    ...(opts.nodeArgs ?? []),
    BIN,
    'run',
    '--config',
    w.configFile,
    ...(opts.args ?? []),
  ];
  const child = spawn(argv[0] as string, argv.slice(1), {
    stdio: ['ignore', fd, fd],
    ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const proc: AgentProc = {
    child,
    pid: child.pid ?? 0,
    log: () => readFileSync(logPath, 'utf8'),
    exited,
  };
  // An agent may outlive the test that started it (a restart in one test, used by the next):
  // it is killed at the end of the file at the latest.
  agents.add(proc);
  if (opts.ready === false) return proc;
  await waitReady(w, proc, opts.timeoutMs);
  return proc;
}

export async function waitReady(w: AgentWorld, a: AgentProc, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    async () => {
      if (a.child.exitCode !== null || a.child.signalCode !== null) {
        throw new Error(
          `agent exited (${a.child.exitCode ?? a.child.signalCode}): ${a.log().slice(-1500)}`,
        );
      }
      // Not ready yet: what the agent answered (or why it did not) and its last log lines
      // become the timeout's message.
      const r = await call(w.sock, 'GET', '/v1/status', undefined, { timeoutMs: 5000 }).catch(
        (err: Error) => {
          throw new Error(`status: ${err.message}; log: ${a.log().slice(-1500)}`);
        },
      );
      if (r.status === 200 && r.body.ready === true) return true;
      throw new Error(
        `status ${r.status}: ${JSON.stringify(r.body).slice(0, 800)}; log: ${a.log().slice(-1500)}`,
      );
    },
    { timeoutMs, intervalMs: 50, what: 'agent ready' },
  );
}

export async function stopAgent(a: AgentProc, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (a.child.exitCode !== null || a.child.signalCode !== null) return;
  a.child.kill(signal);
  await a.exited;
}

/** Runs the built CLI synchronously. */
export function cli(...args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync('node', [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** External IPs on the holder device, as `ip -j addr show dev HOLDER` lists them. */
export function holderIps(ns: string, holder = 'fibkeeper0'): string[] {
  let links: { addr_info: { local: string; scope: string }[] }[];
  try {
    links = ipJson(ns, 'addr', 'show', 'dev', holder);
  } catch {
    return [];
  }
  return (links[0]?.addr_info ?? [])
    .filter((a) => a.scope === 'global')
    .map((a) => a.local)
    .sort();
}

/** Destinations of fibkeeper's own neighbor entries (proto 241) on `dev`. */
export function ownedNeighbors(ns: string, dev: string): string[] {
  return ipJson<{ dst: string; protocol?: string }[]>(ns, 'neigh', 'show', 'dev', dev, 'nud', 'all')
    .filter((n) => n.protocol === '241')
    .map((n) => n.dst)
    .sort();
}

export function readState(w: AgentWorld): {
  forwardable: Record<string, string[]>;
  extip: string[];
} {
  return JSON.parse(readFileSync(w.stateFile, 'utf8')) as {
    forwardable: Record<string, string[]>;
    extip: string[];
  };
}
