// The Reconciler's urgent requeues, full resync, batch operations and lifecycle, on a fake
// target (FakeOps, FakeBatchOps) and fake timers; the rounds, retries, prune and refresh are in
// reconciler.test.ts (the same setup: reconcilerHarness in testing.ts).
import { describe, expect, it, vi } from 'vitest';
import { ClosedError, ConfigError } from '../errors/index.js';
import {
  FakeBatchOps,
  FakeOps,
  insert,
  ipKeyOf,
  ipTable,
  reconcilerHarness,
  statuses,
  type IpEntry,
} from './testing.js';
import { RateLimiter } from '../sched/index.js';
import {
  Reconciler,
  type ReconcileOp,
  type ReconcilerConfig,
  type ReconcilerMetrics,
} from './index.js';

type Entry = IpEntry;
const keyOf = ipKeyOf;
const { setup, advance } = reconcilerHarness();

describe('Reconciler: urgent requeues', () => {
  it('go ahead of the requeues already waiting for the rate limiter', async () => {
    const limiter = new RateLimiter({ rate: 10, burst: 1, now: () => Date.now() });
    const { table, ops, r } = setup({ requeueMinIntervalMs: 0, pruneIntervalMs: 0 }, { limiter });
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4');
    r.start();
    await r.waitFirstRound();
    await advance(r, 1000);
    ops.take();
    // Three routine refreshes wait for the limiter, then a repair comes.
    for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) r.requeue(ip);
    r.requeue('10.0.0.4', { urgent: true });
    const order: string[] = [];
    for (let t = 0; t < 5; t++) {
      await advance(r, 100);
      order.push(...ops.take());
    }
    expect(order).toEqual([
      'update(10.0.0.4) ok',
      'update(10.0.0.1) ok',
      'update(10.0.0.2) ok',
      'update(10.0.0.3) ok',
    ]);
  });
});

describe('Reconciler: full resync', () => {
  it('marks every row pending, updates them all, then prunes', async () => {
    const { table, ops, r } = setup();
    insert(table, '10.0.0.1', '10.0.0.2');
    r.start();
    await r.waitFirstRound();
    ops.take();
    // The target drifted behind our back.
    ops.target.clear();
    ops.target.set('10.0.0.8', { ip: '10.0.0.8' });
    const release = ops.hold();
    r.triggerFullResync();
    await ops.nextCall();
    expect(statuses(table)).toEqual(['10.0.0.1:pending', '10.0.0.2:pending']);
    release();
    await r.waitIdle();
    expect(ops.take()).toEqual([
      'update(10.0.0.1) ok',
      'update(10.0.0.2) ok',
      'prune(10.0.0.8) ok',
    ]);
    expect(statuses(table)).toEqual(['10.0.0.1:done', '10.0.0.2:done']);
    expect([...ops.target.keys()].sort()).toEqual(['10.0.0.1', '10.0.0.2']);
  });
});

describe('Reconciler: batches', () => {
  it('uses updateBatch/deleteBatch in batches of batchSize with per-object results', async () => {
    const ops = new FakeBatchOps<Entry>(keyOf);
    const { table, r } = setup({ batchSize: 2 }, {}, ops);
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5');
    ops.failKeys.add('10.0.0.4');
    r.start();
    await r.waitFirstRound();
    expect(ops.take()).toEqual([
      'updateBatch(2)',
      'update(10.0.0.1) ok',
      'update(10.0.0.2) ok',
      'updateBatch(2)',
      'update(10.0.0.3) ok',
      'update(10.0.0.4) fail',
      'updateBatch(1)',
      'update(10.0.0.5) ok',
      'prune() ok',
    ]);
    expect(table.status('10.0.0.4')?.kind).toBe('error');
    ops.failKeys.clear();
    await advance(r, 100);
    expect(ops.take()).toEqual(['updateBatch(1)', 'update(10.0.0.4) ok']);
    table.write((w) => {
      w.delete('10.0.0.1');
      w.delete('10.0.0.2');
      w.delete('10.0.0.3');
    });
    await r.waitIdle();
    expect(ops.take()).toEqual([
      'deleteBatch(2)',
      'delete(10.0.0.1) ok',
      'delete(10.0.0.2) ok',
      'deleteBatch(1)',
      'delete(10.0.0.3) ok',
    ]);
    expect(statuses(table)).toEqual(['10.0.0.4:done', '10.0.0.5:done']);
  });

  it('pipeline 2: the next batch call starts while the one before is under way, never more', async () => {
    const ops = new FakeBatchOps<Entry>(keyOf);
    let running = 0;
    let most = 0;
    const waiting: (() => void)[] = [];
    const batch = ops.updateBatch.bind(ops);
    ops.updateBatch = async (objs) => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => waiting.push(resolve));
      running--;
      return batch(objs);
    };
    const { table, r } = setup({ batchSize: 2, pipeline: 2 }, {}, ops);
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5');
    ops.failKeys.add('10.0.0.3');
    r.start();
    await vi.waitFor(() => expect(waiting).toHaveLength(2));
    expect(running).toBe(2); // the second call did not wait for the first
    waiting.shift()!();
    await vi.waitFor(() => expect(waiting).toHaveLength(2)); // the third starts in its place
    while (waiting.length > 0) {
      waiting.shift()!();
      await vi.waitFor(() => expect(running).toBe(waiting.length));
    }
    await r.waitFirstRound();
    expect(most).toBe(2);
    // (The failed one may have been retried meanwhile: the first five outcomes are the round's.)
    expect(
      ops
        .take()
        .filter((h) => h.startsWith('update('))
        .slice(0, 5),
    ).toEqual([
      'update(10.0.0.1) ok',
      'update(10.0.0.2) ok',
      'update(10.0.0.3) fail',
      'update(10.0.0.4) ok',
      'update(10.0.0.5) ok',
    ]);
    expect(statuses(table)).toEqual([
      '10.0.0.1:done',
      '10.0.0.2:done',
      '10.0.0.3:error',
      '10.0.0.4:done',
      '10.0.0.5:done',
    ]);
  });

  it('fails every object of a batch call that throws or returns the wrong count', async () => {
    const ops = new FakeBatchOps<Entry>(keyOf);
    ops.updateBatch = async () => {
      throw new Error('netlink: ENOBUFS');
    };
    const { table, r } = setup({}, {}, ops);
    insert(table, '10.0.0.1', '10.0.0.2');
    r.start();
    await r.waitFirstRound();
    expect(table.status('10.0.0.1')).toMatchObject({ kind: 'error', error: 'netlink: ENOBUFS' });
    expect(table.status('10.0.0.2')).toMatchObject({ kind: 'error', error: 'netlink: ENOBUFS' });
    ops.updateBatch = async () => [undefined];
    await advance(r, 100);
    expect(table.status('10.0.0.1')).toMatchObject({
      kind: 'error',
      error: 'update batch returned 1 results for 2',
    });
  });
});

describe('Reconciler: lifecycle', () => {
  it('stop waits for the operation in flight and runs no more', async () => {
    const { table, ops, r } = setup();
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3');
    const release = ops.hold();
    r.start();
    r.start();
    await ops.nextCall();
    let stopped = false;
    const stopping = r.stop().then(() => (stopped = true));
    expect(r.stop()).toBe(r.stop());
    await vi.advanceTimersByTimeAsync(1000);
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(ops.take()).toEqual(['update(10.0.0.1) ok']);
    expect(statuses(table)).toEqual(['10.0.0.1:done', '10.0.0.2:pending', '10.0.0.3:pending']);
    insert(table, '10.0.0.4');
    await vi.advanceTimersByTimeAsync(1000);
    expect(ops.take()).toEqual([]);
    expect(() => r.start()).toThrow(ClosedError);
    await expect(r.waitFirstRound()).rejects.toThrow(ClosedError);
    await r.waitIdle();
    // The watcher was closed: the table keeps no deletions for it.
    table.delete('10.0.0.1');
    expect(table.retainedDeletions).toBe(0);
  });

  it('stop before start resolves and forbids start', async () => {
    const { r } = setup();
    await r.stop();
    expect(() => r.start()).toThrow(ClosedError);
  });

  it('validates options and names the one at fault', () => {
    const table = ipTable();
    const ops = new FakeOps(keyOf);
    const make = (config: Record<string, unknown>, configPath?: string) => () =>
      new Reconciler<Entry>({
        table: ipTable(),
        ops,
        config: config as Partial<ReconcilerConfig>,
        configPath,
      });
    expect(make({ retryBackoffMinMs: 0 })).toThrow(ConfigError);
    expect(make({ retryBackoffMinMs: -1 })).toThrow(/^reconciler\.retryBackoffMinMs: must be > 0/);
    expect(make({ batchSize: 1.5 }, 'neighbor.reconciler')).toThrow(
      /^neighbor\.reconciler\.batchSize: must be an integer >= 1/,
    );
    expect(make({ retryBackoffMinMs: 500, retryBackoffMaxMs: 100 })).toThrow(
      /^reconciler\.retryBackoffMaxMs: must be >= retryBackoffMinMs/,
    );
    expect(make({ pruneInterval: 5 })).toThrow(/^reconciler\.pruneInterval: unknown option/);
    expect(make({ refreshIntervalMs: Number.NaN })).toThrow(/must be a finite number/);
    try {
      make({ maxHealthErrors: -1 })();
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).option).toBe('reconciler.maxHealthErrors');
    }
    // Two reconcilers cannot write one table's status.
    new Reconciler<Entry>({ table, ops });
    expect(() => new Reconciler<Entry>({ table, ops, name: 'other' })).toThrow(/status/);
  });

  it('reports metrics for operations, errors, rounds and resyncs', async () => {
    const calls: Record<string, number> = {};
    const add = (k: string, n: number): void => {
      calls[k] = (calls[k] ?? 0) + n;
    };
    const metrics: ReconcilerMetrics = {
      reconcileDuration: (_r, op: ReconcileOp) => add(`duration:${op}`, 1),
      reconcileOps: (_r, op: ReconcileOp, n) => add(`ops:${op}`, n),
      reconcileErrors: (_r, op: ReconcileOp, n) => add(`errors:${op}`, n),
      currentErrors: (r, n) => (calls[`current:${r}`] = n),
      rateLimited: (_r, n) => add('limited', n),
      fullResyncs: (_r, n) => add('resyncs', n),
      roundDuration: () => add('rounds', 1),
    };
    const { table, ops, r } = setup({}, { metrics });
    insert(table, '10.0.0.1', '10.0.0.2');
    ops.failKeys.add('10.0.0.2');
    r.start();
    await r.waitFirstRound();
    expect(calls).toEqual({
      'duration:update': 2,
      'ops:update': 2,
      'errors:update': 1,
      'duration:prune': 1,
      'ops:prune': 1,
      'current:ips': 1,
      rounds: 1,
    });
    ops.failKeys.clear();
    r.triggerFullResync();
    await r.waitIdle();
    expect(calls['resyncs']).toBe(1);
    expect(calls['current:ips']).toBe(0);
  });
});
