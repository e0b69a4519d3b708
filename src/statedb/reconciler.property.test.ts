// Property tests: for random sequences of table writes, failures, triggers and time, the
// target the fake ops maintain ends up equal to the table (the desired state), every row ends
// done, and prune never runs before the table is initialized.
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeBatchOps, FakeOps } from './testing.js';
import { RateLimiter } from '../sched/index.js';
import { Reconciler, Table } from './index.js';

interface Entry {
  ip: string;
  v: number;
}
const keyOf = (e: Entry): string => e.ip;
const ip = (k: number): string => `10.0.0.${k}`;

type Cmd =
  | { t: 'upsert'; k: number; v: number }
  | { t: 'delete'; k: number }
  | { t: 'batch'; ks: number[]; v: number }
  | { t: 'fail'; k: number; on: boolean }
  | { t: 'faulty'; on: boolean }
  | { t: 'advance'; ms: number }
  | { t: 'settle' }
  | { t: 'init' }
  | { t: 'prune' }
  | { t: 'resync' }
  | { t: 'requeue'; k: number }
  | { t: 'drift'; k: number; add: boolean };

// Few keys, so that writes, failures and retries of the same row meet often.
const key = fc.integer({ min: 0, max: 2 });
const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>): fc.WeightedArbitrary<T> => ({
  weight,
  arbitrary,
});
// Rounds only run while the test yields (settle, advance), so those come often.
const baseCmds: fc.WeightedArbitrary<Cmd>[] = [
  w(3, fc.record({ t: fc.constant('upsert' as const), k: key, v: fc.integer({ min: 0, max: 3 }) })),
  w(2, fc.record({ t: fc.constant('delete' as const), k: key })),
  w(
    1,
    fc.record({
      t: fc.constant('batch' as const),
      ks: fc.array(key, { maxLength: 6 }),
      v: fc.integer({ min: 0, max: 3 }),
    }),
  ),
  w(2, fc.record({ t: fc.constant('fail' as const), k: key, on: fc.boolean() })),
  w(2, fc.record({ t: fc.constant('faulty' as const), on: fc.boolean() })),
  w(3, fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 700 }) })),
  w(4, fc.constant({ t: 'settle' as const })),
  w(1, fc.constant({ t: 'init' as const })),
  w(1, fc.constant({ t: 'prune' as const })),
  w(1, fc.constant({ t: 'resync' as const })),
  w(1, fc.record({ t: fc.constant('requeue' as const), k: key })),
];
const driftCmd = w(2, fc.record({ t: fc.constant('drift' as const), k: key, add: fc.boolean() }));

interface World {
  table: Table<Entry>;
  ops: FakeOps<Entry>;
  r: Reconciler<Entry>;
  init: () => void;
  initialized: boolean;
}

function makeWorld(batch: boolean, limited: boolean, refresh: boolean): World {
  const table = new Table<Entry>({ name: 'prop', primaryKey: keyOf });
  const init = table.registerInitializer('dump');
  const ops = batch ? new FakeBatchOps<Entry>(keyOf) : new FakeOps<Entry>(keyOf);
  // Something left over from a previous run of the agent, to be pruned.
  ops.target.set('10.0.0.200', { ip: '10.0.0.200', v: 0 });
  const r = new Reconciler<Entry>({
    table,
    ops,
    config: {
      retryBackoffMaxMs: 400,
      batchSize: 3,
      // Refresh would repair some lost updates by itself; run without it too.
      refreshIntervalMs: refresh ? 900 : 0,
      pruneIntervalMs: 0,
    },
    limiter: limited ? new RateLimiter({ rate: 20, burst: 2, now: () => Date.now() }) : undefined,
  });
  return { table, ops, r, init, initialized: false };
}

async function apply(w: World, c: Cmd): Promise<void> {
  const { table, ops, r } = w;
  switch (c.t) {
    case 'upsert':
      table.upsert({ ip: ip(c.k), v: c.v });
      break;
    case 'delete':
      table.delete(ip(c.k));
      break;
    case 'batch':
      table.write((tx) => {
        for (const k of c.ks) {
          if (k % 2 === 0) tx.upsert({ ip: ip(k), v: c.v });
          else tx.delete(ip(k));
        }
      });
      break;
    case 'fail':
      if (c.on) ops.failKeys.add(ip(c.k));
      else ops.failKeys.delete(ip(c.k));
      break;
    case 'faulty':
      ops.faulty = c.on;
      break;
    case 'advance':
      await vi.advanceTimersByTimeAsync(c.ms);
      break;
    case 'settle':
      await r.waitIdle();
      break;
    case 'init':
      w.initialized = true;
      w.init();
      break;
    case 'prune':
      r.triggerPrune();
      break;
    case 'resync':
      r.triggerFullResync();
      break;
    case 'requeue':
      r.requeue(ip(c.k));
      break;
    case 'drift':
      if (c.add) ops.target.set(`10.0.1.${c.k}`, { ip: `10.0.1.${c.k}`, v: 9 });
      else ops.target.delete(ip(c.k));
      break;
  }
}

/** Clears every fault, initializes, and runs time until nothing is failing or scheduled. */
async function converge(w: World, resync: boolean): Promise<void> {
  w.ops.faulty = false;
  w.ops.failKeys.clear();
  if (!w.initialized) {
    w.initialized = true;
    w.init();
  }
  if (resync) w.r.triggerFullResync();
  await w.r.waitIdle();
  for (let i = 0; i < 50 && (w.r.scheduledRetries > 0 || w.r.health().level !== 'ok'); i++) {
    await vi.advanceTimersByTimeAsync(400);
    await w.r.waitIdle();
  }
}

function desired(table: Table<Entry>): Record<string, number> {
  return Object.fromEntries(
    table
      .list()
      .map((e) => [e.ip, e.v] as const)
      .sort(),
  );
}

function applied(ops: FakeOps<Entry>): Record<string, number> {
  return Object.fromEntries([...ops.target.values()].map((e) => [e.ip, e.v] as const).sort());
}

interface Variant {
  batch: boolean;
  limited: boolean;
  refresh: boolean;
}

const variant = fc.record({ batch: fc.boolean(), limited: fc.boolean(), refresh: fc.boolean() });

async function run(cmds: Cmd[], v: Variant, drift: boolean): Promise<void> {
  const w = makeWorld(v.batch, v.limited, v.refresh);
  w.r.start();
  try {
    for (const c of cmds) {
      await apply(w, c);
      if (!w.initialized) {
        expect(w.ops.history.filter((h) => h.startsWith('prune'))).toEqual([]);
      }
    }
    await converge(w, drift);
    expect(applied(w.ops)).toEqual(desired(w.table));
    expect(w.table.statusCounts()).toEqual({ pending: 0, done: w.table.size, error: 0 });
    expect(w.r.health()).toEqual({ level: 'ok', errors: [], errorCount: 0 });
    expect(w.r.firstRoundDone).toBe(true);
  } finally {
    await w.r.stop();
  }
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(0);
});

afterEach(() => {
  vi.useRealTimers();
});

describe('Reconciler properties', () => {
  it('converges the target to the table for any sequence of writes, faults and triggers', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(...baseCmds), { maxLength: 50 }), variant, (cmds, v) =>
        run(cmds, v, false),
      ),
      { numRuns: 1000 },
    );
  });

  it('repairs drift of the target with a full resync', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(...baseCmds, driftCmd), { maxLength: 50 }),
        variant,
        (cmds, v) => run(cmds, v, true),
      ),
      { numRuns: 500 },
    );
  });
});
