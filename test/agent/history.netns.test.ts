// The history checker against the real agent (see history-run.ts): 1,000 concurrent mixed
// requests from many clients with SIGKILLs at random points, then the same on a small tmpfs
// that fills up and empties at random (in a mount namespace of the test's own). Every
// acknowledged change must be in the state file, the API and the kernel, in an order
// consistent with the acknowledgements. FIBKEEPER_HISTORY_SEED / _OPS / _KILLS / _CLIENTS
// change the run (bench/history runs it longer).
import { spawn, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupLater } from '../helpers/cleanup.js';
import { privileged, waitFor } from '../helpers/netns.js';
import { baseConfig, makeWorld, writeConfig, type AgentWorld } from './harness.js';
import { prng } from './history.js';
import { diskFiller, runHistory, type HistoryParams, type HistorySummary } from './history-run.js';

const { skip } = privileged();
const env = (name: string, dflt: number) =>
  Number(process.env[`FIBKEEPER_HISTORY_${name}`] ?? dflt);
const params = (): Omit<HistoryParams, 'seed'> & { seed: number } => ({
  seed: env('SEED', randomInt(2 ** 31)),
  ops: env('OPS', 1000),
  kills: env('KILLS', 15),
  clients: env('CLIENTS', 24),
});

function report(name: string, s: HistorySummary): void {
  const line = { run: name, ...s, violations: s.violations.length };
  process.stdout.write(`history ${JSON.stringify(line)}\n`);
}

const config = (w: AgentWorld) =>
  baseConfig(w, { extra: ['log:', '  level: warn'] }).replace(
    '  announceCount: 1',
    '  announceCount: 0',
  );

describe.skipIf(skip)('history checker: acknowledged changes survive SIGKILL', () => {
  it(
    '1,000 concurrent mixed requests, killed at random points (mid-write included)',
    async () => {
      const w = makeWorld('hist');
      writeConfig(w, config(w));
      const p = params();
      const s = await runHistory(w, p);
      report('disk', s);
      expect(s.violations, `seed ${p.seed}`).toEqual([]);
      expect(s.ops).toBe(p.ops);
      expect(s.checks).toBe(p.kills);
      expect(s.acknowledged).toBeGreaterThan(p.ops / 2);
    },
    env('TIMEOUT_MS', 240_000),
  );

  it(
    'the same on a small tmpfs that fills up: refused writes apply nothing',
    async () => {
      const w0 = makeWorld('histfull');
      // A mount namespace that outlives the agent's restarts, made after the network
      // namespaces (so their /run/netns mounts are in it); the tmpfs exists only there.
      const holder = spawn('unshare', ['-m', '--propagation', 'private', 'sleep', 'infinity'], {
        stdio: 'ignore',
      });
      cleanupLater(() => holder.kill('SIGKILL'));
      await waitFor(
        () =>
          readFileSync(`/proc/${holder.pid}/mountinfo`, 'utf8') !==
          readFileSync('/proc/self/mountinfo', 'utf8'),
        { what: 'private mount namespace' },
      );
      const small = join(w0.dir, 'small');
      const mnt = (...a: string[]) => nsExecMnt(holder.pid ?? 0, ...a);
      mnt('mkdir', '-p', small);
      mnt('mount', '-t', 'tmpfs', '-o', 'size=32k,mode=0700', 'tmpfs', small);
      const w: AgentWorld = { ...w0, stateFile: join(small, 'state.json') };
      writeConfig(w, config(w));
      const p = params();
      const s = await runHistory(w, {
        ...p,
        wrap: ['nsenter', '-t', String(holder.pid), '-m'],
        seen: (path) => `/proc/${holder.pid}/root${path}`,
        disturb: diskFiller(holder.pid ?? 0, small, prng(p.seed + 1)),
      });
      report('tmpfs', s);
      expect(s.violations, `seed ${p.seed}`).toEqual([]);
      expect(s.ops).toBe(p.ops);
      expect(s.refusedStorage).toBeGreaterThan(0);
      expect(s.acknowledged).toBeGreaterThan(p.ops / 10);
    },
    env('TIMEOUT_MS', 240_000),
  );
});

/** Runs a command in the mount namespace of `pid`. */
function nsExecMnt(pid: number, ...args: string[]): void {
  const r = spawnSync('nsenter', ['-t', String(pid), '-m', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`nsenter ${args.join(' ')}: ${r.stderr}`);
}
