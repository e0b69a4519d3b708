// Cluster members as child processes (test/cluster/member-proc.mjs) against a real etcd,
// with their hold-set histories collected for the checks. Every process is ended by its
// own PID when the test ends (and by the reaper, or on their stdin's end, should we die).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { cleanupLater } from '../helpers/cleanup.js';
import type { ClusterOptions, HoldRecord } from '../../src/cluster/index.js';
import { Reaper } from '../../src/lab/index.js';

/** Ends the members and the etcd of this file by PID should the file never reach afterAll. */
export const reaper = Reaper.start();
afterAll(() => reaper.close());

const SCRIPT = fileURLToPath(new URL('./member-proc.mjs', import.meta.url));
const NODE = process.execPath;

export interface HoldLine {
  type: 'hold';
  node: string;
  at: number;
  ips: string[];
  deadline: number | null;
  reason: string;
}

export type Line =
  | HoldLine
  | { type: 'ready' | 'stopped'; at: number }
  | { type: 'resync' | 'renew-failure'; reason: string };

export class MemberProc {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly lines: Line[] = [];
  #waiters = new Set<() => void>();
  exited = false;

  constructor(endpoint: string, name: string, options: Partial<ClusterOptions> = {}) {
    this.name = name;
    this.proc = reaper.child(
      spawn(NODE, [SCRIPT, JSON.stringify({ endpoint, nodeName: name, options })], {
        stdio: ['pipe', 'pipe', 'inherit'],
      }),
    );
    let buf = '';
    this.proc.stdout!.setEncoding('utf8');
    this.proc.stdout!.on('data', (s: string) => {
      buf += s;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        this.lines.push(JSON.parse(buf.slice(0, i)) as Line);
        buf = buf.slice(i + 1);
      }
      for (const w of this.#waiters) w();
    });
    this.proc.on('exit', () => {
      this.exited = true;
      for (const w of this.#waiters) w();
    });
    cleanupLater(() => this.kill('SIGKILL'));
  }

  holds(): HoldLine[] {
    return this.lines.filter((l): l is HoldLine => l.type === 'hold');
  }

  /** The IPs of the last hold set. */
  held(): string[] {
    return this.holds().at(-1)?.ips ?? [];
  }

  records(): HoldRecord[] {
    return this.holds().map((h) => ({
      node: h.node,
      at: h.at,
      ips: h.ips,
      deadline: h.deadline ?? -Infinity,
    }));
  }

  kill(signal: NodeJS.Signals): void {
    if (!this.exited && this.proc.pid !== undefined) process.kill(this.proc.pid, signal);
  }

  async until(pred: () => boolean, timeoutMs = 15_000, what = 'condition'): Promise<void> {
    if (pred()) return;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(
            `${this.name}: ${what} not reached in ${timeoutMs} ms; last lines ${JSON.stringify(this.lines.slice(-3))}`,
          ),
        );
      }, timeoutMs);
      const check = (): void => {
        if (!pred()) return;
        clearTimeout(t);
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
    });
  }

  async exit(): Promise<void> {
    if (this.exited) return;
    await new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
  }
}

/** Polls `pred` every 20 ms until true or the timeout. */
export async function eventually(
  pred: () => boolean,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`${what}: not reached in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** IP → nodes whose last hold set has it. */
export function holders(members: readonly MemberProc[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of members) {
    if (m.exited) continue;
    for (const ip of m.held()) out.set(ip, [...(out.get(ip) ?? []), m.name]);
  }
  return out;
}
