// Runs a history against the real agent: many clients send random requests over the
// control socket while the agent is killed (SIGKILL) at random points — some right as it
// starts writing the state file — and restarted. After every restart, with no request in
// flight, the state file and the API must agree and explain the history (history.ts); at
// the end the kernel (`ip neigh`, `ip addr`) must show exactly that state too.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { waitFor } from '../helpers/netns.js';
import {
  allKeys,
  checkHistory,
  prng,
  randomRequest,
  type Op,
  type Outcome,
  type Pools,
  type Request,
  type Violation,
} from './history.js';
import {
  call,
  holderIps,
  ownedNeighbors,
  startAgent,
  stopAgent,
  type AgentProc,
  type AgentWorld,
} from './harness.js';

export interface HistoryParams {
  seed: number;
  ops: number;
  clients: number;
  kills: number;
  /** Wraps the agent's command line (a mount namespace: `nsenter -t PID -m`). */
  wrap?: string[];
  /** How this process sees a path of the agent's (through /proc/PID/root). */
  seen?: (path: string) => string;
  /** Called while the run goes (fills and frees a small disk). */
  disturb?: () => Promise<void>;
}

export interface HistorySummary {
  seed: number;
  ops: number;
  acknowledged: number;
  failed: number;
  refusedStorage: number;
  unknown: number;
  /** Why outcomes are unknown: the connection broke (the agent died), or another answer. */
  unknownBy: Record<string, number>;
  killPoints: number;
  killsOnWrite: number;
  killsWithTempFile: number;
  checks: number;
  violations: Violation[];
  seconds: number;
}

export const POOLS: Pools = {
  owners: ['a', 'b', 'c', 'constructor'],
  forwardable: Array.from({ length: 24 }, (_, i) => `10.88.20.${i + 1}`),
  extip: Array.from({ length: 16 }, (_, i) => `10.89.20.${i + 1}`),
};

/** Keys as the state file holds them (none before its first write). */
function stateKeys(path: string): Set<string> {
  if (!existsSync(path)) return new Set();
  const s = JSON.parse(readFileSync(path, 'utf8')) as {
    forwardable: Record<string, string[]>;
    extip: string[];
  };
  const out = new Set<string>();
  for (const [o, ips] of Object.entries(s.forwardable))
    for (const ip of ips) out.add(`fw ${o} ${ip}`);
  for (const ip of s.extip) out.add(`ext ${ip}`);
  return out;
}

/** Keys as the API lists them (the pools' owners only). */
async function apiKeys(sock: string): Promise<Set<string>> {
  const out = new Set<string>();
  const f = await call(sock, 'GET', '/v1/forwardable');
  for (const e of f.body.forwardable as { ip: string; owners: string[] }[]) {
    for (const o of e.owners) if (POOLS.owners.includes(o)) out.add(`fw ${o} ${e.ip}`);
  }
  const x = await call(sock, 'GET', '/v1/extip');
  for (const e of x.body.extip as { ip: string }[]) out.add(`ext ${e.ip}`);
  return out;
}

const diff = (a: Set<string>, b: Set<string>) => ({
  onlyFirst: [...a].filter((k) => !b.has(k)),
  onlySecond: [...b].filter((k) => !a.has(k)),
});

function classify(status: number, body: Record<string, unknown>): Outcome | 'retry' {
  if (status === 200) return 'ok';
  const code = (body.error as { code?: string } | undefined)?.code;
  if (status === 503 && code === 'FIBKEEPER_ERR_CLOSED') return 'retry'; // refused before the queue
  if (status === 507 || (status >= 400 && status < 500) || status === 501) return 'fail';
  return 'unknown';
}

/** One run: the agent, its clients, its killer, and what was recorded. */
class HistoryRun {
  readonly rand: () => number;
  readonly requests: Request[];
  readonly killAt: number[];
  readonly seen: (path: string) => string;
  readonly ops: Op[] = [];
  /** Ops of each agent generation whose outcome is unknown: they complete when it dies. */
  readonly pendingUnknown = new Map<number, Op[]>();
  readonly violations: Violation[] = [];
  readonly sum = { killsOnWrite: 0, killsWithTempFile: 0, checks: 0, refusedStorage: 0 };
  agent: AgentProc | undefined;
  gen = 0;
  gate: Promise<void> = Promise.resolve();
  open: () => void = () => undefined;
  next = 0;
  done = 0;
  inFlight = 0;

  constructor(
    readonly w: AgentWorld,
    readonly p: HistoryParams,
  ) {
    this.rand = prng(p.seed);
    this.requests = Array.from({ length: p.ops }, () => randomRequest(this.rand, POOLS));
    this.killAt = Array.from({ length: p.kills - 1 }, () =>
      Math.floor(p.ops * (0.05 + 0.9 * this.rand())),
    ).sort((a, b) => a - b);
    this.seen = p.seen ?? ((x: string) => x);
  }

  start(): Promise<AgentProc> {
    return startAgent(this.w, this.p.wrap ? { wrap: this.p.wrap } : {});
  }

  /** One client: sends requests until none is left; retries what never reached an agent. */
  async client(): Promise<void> {
    for (let i = this.next++; i < this.requests.length; i = this.next++) {
      const req = this.requests[i] as Request;
      for (;;) {
        await this.gate;
        const gen = this.gen;
        const invoke = performance.now();
        this.inFlight++;
        let outcome: Outcome | 'retry';
        let detail: string;
        try {
          const r = await call(this.w.sock, req.method, req.path, req.body, { timeoutMs: 30_000 });
          outcome = classify(r.status, r.body);
          detail = `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
          if (r.status === 507) this.sum.refusedStorage++;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          outcome = code === 'ECONNREFUSED' || code === 'ENOENT' ? 'retry' : 'unknown';
          detail = String(err);
        } finally {
          this.inFlight--;
        }
        if (outcome === 'retry') continue;
        const op: Op = { ...req, id: i, invoke, complete: performance.now(), outcome, detail };
        if (outcome === 'unknown') {
          op.complete = Infinity; // until the agent that had it is dead
          const list = this.pendingUnknown.get(gen) ?? [];
          this.pendingUnknown.set(gen, [...list, op]);
        }
        this.ops.push(op);
        this.done++;
        break;
      }
    }
  }

  /** With no request in flight: the state file and the API agree and explain the history. */
  async verify(where: string): Promise<void> {
    await waitFor(() => this.inFlight === 0, { what: 'no request in flight', timeoutMs: 40_000 });
    const file = stateKeys(this.seen(this.w.stateFile));
    const api = await apiKeys(this.w.sock);
    const d = diff(file, api);
    if (d.onlyFirst.length + d.onlySecond.length > 0) {
      throw new Error(`${where}: state file and API differ: ${JSON.stringify(d)}`);
    }
    this.sum.checks++;
    for (const v of checkHistory(this.ops, (k) => file.has(k), allKeys(POOLS))) {
      this.violations.push({ ...v, why: [`at ${where}`, ...v.why] });
    }
  }

  /** SIGKILL (on a timer, or as the agent starts a write), restart, verify. */
  async kill(k: number, onWrite: boolean): Promise<void> {
    const agent = this.agent as AgentProc;
    const tmp = this.seen(`${this.w.stateFile}.tmp`);
    if (onWrite) {
      let watcher: FSWatcher | undefined;
      await new Promise<void>((resolve) => {
        const fallback = setTimeout(resolve, 2000);
        watcher = watch(dirname(tmp), (_event, name) => {
          if (name !== 'state.json.tmp') return;
          clearTimeout(fallback);
          agent.child.kill('SIGKILL'); // the temp file is the first step of a write
          resolve();
        });
      });
      watcher?.close();
      this.sum.killsOnWrite++;
    } else {
      await new Promise((r) => setTimeout(r, this.rand() * 30));
    }
    this.gate = new Promise<void>((r) => (this.open = r)); // nothing new until verified
    await stopAgent(agent, 'SIGKILL');
    const died = performance.now();
    if (existsSync(tmp)) this.sum.killsWithTempFile++;
    for (const op of this.pendingUnknown.get(this.gen) ?? []) op.complete = died;
    this.pendingUnknown.delete(this.gen);
    this.gen++;
    this.agent = await this.start();
    await this.verify(`kill point ${k + 1}`);
    this.open();
  }

  async killer(): Promise<void> {
    for (const [k, at] of this.killAt.entries()) {
      await waitFor(() => this.done >= at, {
        what: `${at} requests done`,
        timeoutMs: 120_000,
        intervalMs: 5,
      });
      await this.kill(k, this.rand() < 0.5);
    }
  }

  /** The kernel shows the final state (the reconciler converges after the restart). */
  async kernelAgrees(): Promise<void> {
    const w = this.w;
    const final = stateKeys(this.seen(w.stateFile));
    const fw = [...final].filter((k) => k.startsWith('fw ')).map((k) => k.split(' ')[2] as string);
    const wantNeigh = [...new Set(fw)].sort();
    const wantExt = [...final]
      .filter((k) => k.startsWith('ext '))
      .map((k) => k.slice(4))
      .sort();
    const neigh = () => ownedNeighbors(w.ns, w.dev).filter((ip) => POOLS.forwardable.includes(ip));
    const same = (a: string[], b: string[]) => JSON.stringify(a) === JSON.stringify(b);
    await waitFor(() => same(neigh(), wantNeigh) && same(holderIps(w.ns), wantExt), {
      what: `the kernel to show neighbors ${wantNeigh.join(' ')} and holder ${wantExt.join(' ')}`,
      timeoutMs: 20_000,
    }).catch((err: Error) => {
      throw new Error(
        `${err.message}; it shows ${neigh().join(' ')} and ${holderIps(w.ns).join(' ')}`,
      );
    });
  }
}

export async function runHistory(w: AgentWorld, p: HistoryParams): Promise<HistorySummary> {
  const t0 = performance.now();
  const run = new HistoryRun(w, p);
  run.agent = await run.start();
  const disturbing = { on: true };
  const disturber = (async () => {
    while (p.disturb && disturbing.on) await p.disturb();
  })();
  await Promise.all([run.killer(), ...Array.from({ length: p.clients }, () => run.client())]);
  disturbing.on = false;
  await disturber;
  await run.kill(p.kills - 1, false); // the last kill point: after everything, then restart
  await run.kernelAgrees();
  await stopAgent(run.agent);
  const count = (o: Outcome) => run.ops.filter((x) => x.outcome === o).length;
  return {
    seed: p.seed,
    ops: run.ops.length,
    acknowledged: count('ok'),
    failed: count('fail'),
    refusedStorage: run.sum.refusedStorage,
    unknown: count('unknown'),
    unknownBy: run.ops
      .filter((x) => x.outcome === 'unknown')
      .reduce<Record<string, number>>((m, x) => {
        const why = /^\d{3} /.test(x.detail) ? `http ${x.detail.slice(0, 3)}` : 'connection lost';
        m[why] = (m[why] ?? 0) + 1;
        return m;
      }, {}),
    killPoints: p.kills,
    killsOnWrite: run.sum.killsOnWrite,
    killsWithTempFile: run.sum.killsWithTempFile,
    checks: run.sum.checks,
    violations: run.violations,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
  };
}

/** Fills a small disk (inside the agent's mount namespace) and frees it again, at random. */
export function diskFiller(
  holderPid: number,
  dir: string,
  rand: () => number,
): () => Promise<void> {
  const sh = (script: string) =>
    new Promise<void>((resolve) => {
      const c = spawn('nsenter', ['-t', String(holderPid), '-m', 'sh', '-c', script], {
        stdio: 'ignore',
      });
      c.on('close', () => resolve());
    });
  let full = false;
  return async () => {
    await new Promise((r) => setTimeout(r, 100 + rand() * 400));
    full = !full;
    const fill = join(dir, 'fill');
    await sh(full ? `dd if=/dev/zero of=${fill} bs=4096 2>/dev/null; true` : `rm -f ${fill}`);
  };
}
