// The Reconciler's rounds, failures and retries, prune, refresh, requeue and rate limit, on a
// fake target (FakeOps) and fake timers (urgent requeues, full resync, batches and lifecycle:
// reconciler-batches.test.ts).
import { describe, expect, it } from 'vitest';
import { insert, ipTable, reconcilerHarness, statuses } from './testing.js';
import { RateLimiter } from '../sched/index.js';

const { setup, advance } = reconcilerHarness();

describe('Reconciler: incremental reconciliation', () => {
  it('reconciles the initial rows, prunes once, and reports the first round', async () => {
    const { table, ops, r } = setup();
    ops.target.set('10.9.9.9', { ip: '10.9.9.9' });
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3');
    expect(statuses(table)).toEqual(['10.0.0.1:pending', '10.0.0.2:pending', '10.0.0.3:pending']);
    expect(r.firstRoundDone).toBe(false);
    r.start();
    await r.waitFirstRound();
    expect(r.firstRoundDone).toBe(true);
    expect(ops.take()).toEqual([
      'update(10.0.0.1) ok',
      'update(10.0.0.2) ok',
      'update(10.0.0.3) ok',
      'prune(10.9.9.9) ok',
    ]);
    expect(statuses(table)).toEqual(['10.0.0.1:done', '10.0.0.2:done', '10.0.0.3:done']);
    expect([...ops.target.keys()].sort()).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect(r.health()).toEqual({ level: 'ok', errors: [], errorCount: 0 });
  });

  it('applies later upserts and deletes, and only those', async () => {
    const { table, ops, r } = setup();
    insert(table, '10.0.0.1', '10.0.0.2');
    r.start();
    await r.waitFirstRound();
    ops.take();
    table.upsert({ ip: '10.0.0.2', mac: 'aa' });
    table.delete('10.0.0.1');
    await r.waitIdle();
    expect(ops.take()).toEqual(['delete(10.0.0.1) ok', 'update(10.0.0.2) ok']);
    expect(ops.target.get('10.0.0.2')).toEqual({ ip: '10.0.0.2', mac: 'aa' });
    expect(ops.target.has('10.0.0.1')).toBe(false);
    expect(statuses(table)).toEqual(['10.0.0.2:done']);
  });

  it('a delete followed by a re-insert in the same round is one update', async () => {
    const { table, ops, r } = setup();
    insert(table, '10.0.0.1');
    r.start();
    await r.waitFirstRound();
    ops.take();
    table.write((w) => {
      w.delete('10.0.0.1');
      w.insert({ ip: '10.0.0.1', mac: 'bb' });
      w.insert({ ip: '10.0.0.5' });
      w.delete('10.0.0.5');
    });
    await r.waitIdle();
    expect(ops.take()).toEqual(['delete(10.0.0.5) ok', 'update(10.0.0.1) ok']);
    expect(ops.target.get('10.0.0.1')?.mac).toBe('bb');
  });

  it('leaves changes made during a round to the next round', async () => {
    const { table, ops, r } = setup();
    insert(table, '10.0.0.1');
    const release = ops.hold();
    r.start();
    await ops.nextCall();
    insert(table, '10.0.0.2');
    release();
    await r.waitIdle();
    expect(ops.take()).toEqual(['update(10.0.0.1) ok', 'prune() ok', 'update(10.0.0.2) ok']);
    expect(statuses(table)).toEqual(['10.0.0.1:done', '10.0.0.2:done']);
  });

  it('never marks a newer version done with the result for an older one', async () => {
    const { table, ops, r } = setup();
    insert(table, '10.0.0.1');
    r.start();
    await r.waitFirstRound();
    ops.take();
    const release = ops.hold();
    table.upsert({ ip: '10.0.0.1', mac: 'v2' });
    await ops.nextCall();
    table.upsert({ ip: '10.0.0.1', mac: 'v3' });
    release();
    const release2 = ops.hold();
    await ops.nextCall();
    // v2 is in the target, v3 is being applied: the row (at v3) is still pending.
    expect(ops.target.get('10.0.0.1')?.mac).toBe('v2');
    expect(table.status('10.0.0.1')?.kind).toBe('pending');
    release2();
    await r.waitIdle();
    expect(ops.take()).toEqual(['update(10.0.0.1) ok', 'update(10.0.0.1) ok']);
    expect(ops.target.get('10.0.0.1')?.mac).toBe('v3');
    expect(table.status('10.0.0.1')?.kind).toBe('done');
  });
});

describe('Reconciler: failures and retries', () => {
  it('retries a failed update with exponential backoff and recovers', async () => {
    const { table, ops, r } = setup({ retryBackoffMinMs: 100, retryBackoffMaxMs: 300 });
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3');
    ops.failKeys.add('10.0.0.2');
    r.start();
    await r.waitFirstRound();
    expect(ops.take()).toEqual([
      'update(10.0.0.1) ok',
      'update(10.0.0.2) fail',
      'update(10.0.0.3) ok',
      'prune() ok',
    ]);
    expect(table.status('10.0.0.2')).toEqual({
      kind: 'error',
      error: 'update 10.0.0.2: injected failure',
      updatedAt: 0,
    });
    expect(r.health()).toEqual({
      level: 'degraded',
      errors: [
        { key: '10.0.0.2', op: 'update', error: 'update 10.0.0.2: injected failure', since: 0 },
      ],
      errorCount: 1,
    });
    // Retries at +100, then +200, then capped at +300, +300.
    const at: number[] = [];
    for (const step of [99, 1, 199, 1, 299, 1, 299, 1]) {
      await advance(r, step);
      if (ops.take().length > 0) at.push(Date.now());
    }
    expect(at).toEqual([100, 300, 600, 900]);
    expect(r.scheduledRetries).toBe(1);
    ops.failKeys.clear();
    await advance(r, 300);
    expect(ops.take()).toEqual(['update(10.0.0.2) ok']);
    expect(table.status('10.0.0.2')).toEqual({ kind: 'done', updatedAt: 1200 });
    expect(r.health().level).toBe('ok');
    expect(r.scheduledRetries).toBe(0);
    await advance(r, 10_000);
    expect(ops.take()).toEqual([]);
  });

  it('a new version of a failing row is tried at once; its success clears the error', async () => {
    const { table, ops, r } = setup();
    ops.failKeys.add('10.0.0.1');
    insert(table, '10.0.0.1');
    r.start();
    await r.waitFirstRound();
    ops.take();
    ops.failKeys.clear();
    table.upsert({ ip: '10.0.0.1', mac: 'new' });
    await r.waitIdle();
    expect(ops.take()).toEqual(['update(10.0.0.1) ok']);
    expect(r.health().level).toBe('ok');
    // The retry for the old version was cancelled.
    await advance(r, 1000);
    expect(ops.take()).toEqual([]);
  });

  it('retries a failed delete, and drops it when the key comes back', async () => {
    const { table, ops, r } = setup();
    insert(table, '10.0.0.1', '10.0.0.2');
    r.start();
    await r.waitFirstRound();
    ops.take();
    ops.faulty = true;
    table.delete('10.0.0.1');
    table.delete('10.0.0.2');
    await r.waitIdle();
    expect(ops.take()).toEqual(['delete(10.0.0.1) fail', 'delete(10.0.0.2) fail']);
    expect(r.health().errors.map((e) => `${e.key}:${e.op}`)).toEqual([
      '10.0.0.1:delete',
      '10.0.0.2:delete',
    ]);
    insert(table, '10.0.0.2');
    await r.waitIdle();
    expect(ops.take()).toEqual(['update(10.0.0.2) fail']);
    ops.faulty = false;
    await advance(r, 100);
    expect(ops.take()).toEqual(['delete(10.0.0.1) ok']);
    expect(r.health().errors.map((e) => e.key)).toEqual(['10.0.0.2']);
    await advance(r, 100);
    expect(ops.take()).toEqual(['update(10.0.0.2) ok']);
    expect(ops.target.has('10.0.0.1')).toBe(false);
    expect(r.health().level).toBe('ok');
  });

  it('caps the errors listed by health, and counts them all', async () => {
    const { table, ops, r } = setup({ maxHealthErrors: 2 });
    ops.faulty = true;
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5');
    r.start();
    await r.waitFirstRound();
    const h = r.health();
    expect(h.level).toBe('degraded');
    expect(h.errorCount).toBe(6); // five rows and the prune
    expect(h.errors.map((e) => e.key)).toEqual(['(prune)', '10.0.0.1']);
  });
});

describe('Reconciler: prune', () => {
  it('never prunes before the table and every input are initialized', async () => {
    const table = ipTable();
    const input = ipTable('routes');
    const tableDone = table.registerInitializer('dump');
    const inputDone = input.registerInitializer('dump');
    const { ops, r } = setup({}, { table, inputs: [input] });
    ops.target.set('10.0.0.1', { ip: '10.0.0.1' });
    ops.target.set('10.0.0.9', { ip: '10.0.0.9' });
    r.start();
    insert(table, '10.0.0.1');
    await r.waitIdle();
    r.triggerPrune();
    await advance(r, 600_000);
    expect(ops.take()).toEqual(['update(10.0.0.1) ok']);
    tableDone();
    await r.waitIdle();
    expect(ops.take()).toEqual([]);
    expect(r.firstRoundDone).toBe(false);
    inputDone();
    await r.waitFirstRound();
    expect(ops.take()).toEqual(['prune(10.0.0.9) ok']);
    expect([...ops.target.keys()]).toEqual(['10.0.0.1']);
  });

  it('prunes periodically and on demand, and retries a failed prune', async () => {
    const { table, ops, r } = setup({ pruneIntervalMs: 1000 });
    insert(table, '10.0.0.1');
    r.start();
    await r.waitFirstRound();
    expect(ops.take()).toEqual(['update(10.0.0.1) ok', 'prune() ok']);
    await advance(r, 999);
    expect(ops.take()).toEqual([]);
    await advance(r, 1);
    expect(ops.take()).toEqual(['prune() ok']);
    await advance(r, 500);
    ops.target.set('10.0.0.7', { ip: '10.0.0.7' });
    r.triggerPrune();
    await r.waitIdle();
    expect(ops.take()).toEqual(['prune(10.0.0.7) ok']);
    // The period restarts after the on-demand prune (t=1500).
    await advance(r, 999);
    expect(ops.take()).toEqual([]);
    ops.faulty = true;
    await advance(r, 1);
    expect(ops.take()).toEqual(['prune() fail']);
    expect(r.health().errors).toEqual([
      { key: '(prune)', op: 'prune', error: 'prune: injected failure', since: 2500 },
    ]);
    ops.faulty = false;
    await advance(r, 99);
    expect(ops.take()).toEqual([]);
    await advance(r, 1);
    expect(ops.take()).toEqual(['prune() ok']);
    expect(r.health().level).toBe('ok');
  });
});

describe('Reconciler: refresh, requeue, rate limit', () => {
  it('re-runs update for rows done longer ago than the refresh interval', async () => {
    const { table, ops, r } = setup({ refreshIntervalMs: 1000, pruneIntervalMs: 0 });
    insert(table, '10.0.0.1');
    r.start();
    await r.waitFirstRound();
    await advance(r, 400);
    insert(table, '10.0.0.2');
    await r.waitIdle();
    ops.take();
    await advance(r, 599);
    expect(ops.take()).toEqual([]);
    await advance(r, 1);
    expect(ops.take()).toEqual(['update(10.0.0.1) ok']);
    await advance(r, 400);
    expect(ops.take()).toEqual(['update(10.0.0.2) ok']);
    expect(table.status('10.0.0.2')).toEqual({ kind: 'done', updatedAt: 1400 });
    await advance(r, 600);
    expect(ops.take()).toEqual(['update(10.0.0.1) ok']);
  });

  it('spreads refreshes out through the rate limiter', async () => {
    const limiter = new RateLimiter({ rate: 2, burst: 1, now: () => Date.now() });
    const { table, ops, r } = setup({ refreshIntervalMs: 1000, pruneIntervalMs: 0 }, { limiter });
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3');
    r.start();
    await r.waitFirstRound();
    ops.take();
    const at: string[] = [];
    for (let t = 0; t < 20; t++) {
      await advance(r, 100);
      for (const h of ops.take()) at.push(`${Date.now()} ${h}`);
    }
    expect(at).toEqual([
      '1000 update(10.0.0.1) ok',
      '1500 update(10.0.0.2) ok',
      '2000 update(10.0.0.3) ok',
    ]);
  });

  it('bounds the total rate of retries with the rate limiter', async () => {
    const limiter = new RateLimiter({ rate: 10, burst: 2, now: () => Date.now() });
    const { table, ops, r } = setup({ retryBackoffMinMs: 100, pruneIntervalMs: 0 }, { limiter });
    ops.faulty = true;
    insert(table, '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5');
    r.start();
    await r.waitFirstRound();
    ops.take();
    ops.faulty = false;
    const at: string[] = [];
    for (let t = 0; t < 6; t++) {
      await advance(r, 100);
      for (const h of ops.take()) at.push(`${Date.now()} ${h}`);
    }
    // New changes are not limited (all five failed at once above); their retries are, in
    // the order they failed: a burst of two, then one per 100 ms. Prune is not limited.
    expect(at).toEqual([
      '100 update(10.0.0.1) ok',
      '100 update(10.0.0.2) ok',
      '100 prune() ok',
      '200 update(10.0.0.3) ok',
      '300 update(10.0.0.4) ok',
      '400 update(10.0.0.5) ok',
    ]);
    expect(r.health().level).toBe('ok');
  });

  it('requeue updates a done row again, no sooner than requeueMinIntervalMs', async () => {
    const { table, ops, r } = setup({ requeueMinIntervalMs: 1000, pruneIntervalMs: 0 });
    insert(table, '10.0.0.1', '10.0.0.2');
    r.start();
    await r.waitFirstRound();
    ops.take();
    expect(r.requeue('10.9.9.9')).toBe(false);
    await advance(r, 300);
    expect(r.requeue('10.0.0.1')).toBe(true);
    expect(table.status('10.0.0.1')?.kind).toBe('pending');
    expect(r.requeue('10.0.0.1')).toBe(true);
    await advance(r, 699);
    expect(ops.take()).toEqual([]);
    await advance(r, 1);
    expect(ops.take()).toEqual(['update(10.0.0.1) ok']);
    await advance(r, 5000);
    r.requeue('10.0.0.2');
    await r.waitIdle();
    expect(ops.take()).toEqual(['update(10.0.0.2) ok']);
    expect(statuses(table)).toEqual(['10.0.0.1:done', '10.0.0.2:done']);
  });
});
