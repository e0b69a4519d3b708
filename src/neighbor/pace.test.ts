import { describe, expect, it } from 'vitest';
import { PAUSE_MAX_MS, WritePacer } from './pace.js';

/**
 * A pacer over a fake event socket: `queued` events wait in it; a turn of the event loop
 * reads up to `perTurn` of them while reading is on.
 */
function setup(budget: number, perTurn = 3000) {
  const s = { read: 0, queued: 0, on: true, turns: 0, clock: 0 };
  const log: string[] = [];
  const later: (() => void)[] = [];
  const pacer = new WritePacer({
    budget,
    read: () => s.read,
    queued: () => s.queued,
    reading: (on) => {
      s.on = on;
      log.push(on ? 'resume' : 'pause');
    },
    later: (fn) => later.push(fn),
    turn: async () => {
      s.turns++;
      s.clock++;
      if (!s.on) return;
      const n = Math.min(perTurn, s.queued);
      s.queued -= n;
      s.read += n;
    },
    now: () => s.clock,
  });
  /** A batch of `n` new entries, one event each. */
  const batch = async (n: number) => {
    pacer.writing(n);
    s.queued += n;
    await pacer.written();
  };
  const turnOver = () => later.splice(0).forEach((fn) => fn());
  return { pacer, s, log, batch, turnOver };
}

describe('write pacing', () => {
  it('writes 100,000 entries without a wait when their events fit the socket', async () => {
    const t = setup(140_000);
    for (let b = 0; b < 13; b++) await t.batch(8192);
    expect(t.s.turns).toBe(0);
    expect(t.pacer.owed).toBe(13 * 8192);
  });

  it('pauses reading for a burst of large batches, and resumes once the burst is over', async () => {
    const t = setup(140_000);
    for (let b = 0; b < 3; b++) await t.batch(8192);
    expect(t.log).toEqual(['pause']);
    t.turnOver(); // the resumes scheduled before the last batch are void; the last one runs
    expect(t.log).toEqual(['pause', 'resume']);
    expect(t.pacer.readingPaused).toBe(false);
  });

  it('does not keep reading paused longer than PAUSE_MAX_MS through a long burst', async () => {
    const t = setup(140_000);
    await t.batch(8192);
    t.pacer.writing(8192); // soon after: the resume scheduled by the first batch is void
    t.turnOver();
    expect(t.log).toEqual(['pause']);
    await t.pacer.written();
    t.s.clock += PAUSE_MAX_MS; // the writes took long: events nobody counted pile up
    t.pacer.writing(8192); // the resume scheduled by the last batch stands
    t.turnOver();
    expect(t.log).toEqual(['pause', 'resume']);
    await t.pacer.written();
    await t.batch(8192); // a new burst pauses afresh
    expect(t.log).toEqual(['pause', 'resume', 'pause']);
  });

  it('a burst larger than the budget is read as it is written until it is over', async () => {
    const t = setup(20_000);
    for (let b = 0; b < 2; b++) await t.batch(8192);
    expect(t.log).toEqual(['pause']);
    expect(t.pacer.overBudget).toBe(false);
    await t.batch(8192); // 24,576 owed: over the budget, reading resumes before the writes
    expect(t.log).toEqual(['pause', 'resume']);
    expect(t.pacer.overBudget).toBe(true);
    expect(t.pacer.owed).toBeLessThanOrEqual(10_000); // and the batch waited down to half
    expect(t.s.queued).toBe(t.pacer.owed); // what is owed is what waits in the socket
    // Within the budget again, but the same burst: reading stays on.
    for (let b = 0; b < 3; b++) await t.batch(8192);
    expect(t.log).toEqual(['pause', 'resume']);
    // The burst is over (a turn without a batch); the next one pauses afresh.
    t.turnOver();
    expect(t.pacer.overBudget).toBe(false);
    t.s.read += t.s.queued;
    t.s.queued = 0;
    await t.batch(8192);
    expect(t.log).toEqual(['pause', 'resume', 'pause']);
  });

  it('events someone else left queued count too: a burst does not pause over a full socket', async () => {
    const t = setup(140_000);
    // A STALE wave (or a backlog left while the agent was stopped): 150,000 events nobody
    // wrote wait in the socket. Pausing for a burst would pile its events on top of them.
    t.s.queued = 150_000;
    await t.batch(8192);
    expect(t.log).toEqual([]);
    expect(t.pacer.readingPaused).toBe(false);
    expect(t.pacer.overBudget).toBe(true);
    expect(t.s.turns).toBe(0); // the writer does not wait for events it did not cause
    t.turnOver();
    // Read down, the next burst pauses again; the queue holding the burst's own events
    // is not counted twice.
    t.s.queued = 0;
    for (let b = 0; b < 13; b++) await t.batch(8192);
    expect(t.log).toEqual(['pause']);
    expect(t.pacer.overBudget).toBe(false);
  });

  it('events read while a batch is written count against it: nothing read is waited for', async () => {
    const t = setup(6000, 0); // the turns read nothing
    t.pacer.writing(8192);
    t.s.read += 8192; // all of its events, read while the send thread wrote it
    await t.pacer.written();
    expect(t.s.turns).toBe(0);
    expect(t.pacer.owed).toBe(0);
  });

  it('events read (of a clear, of anyone) settle what is owed: nothing stale is waited for', async () => {
    const t = setup(20_000);
    await t.batch(8192);
    await t.batch(8192);
    t.turnOver();
    // The burst's events are read after it; later bursts owe nothing for them.
    t.s.read += t.s.queued;
    t.s.queued = 0;
    expect(t.pacer.owed).toBe(0);
    await t.batch(8192);
    expect(t.s.turns).toBe(0);
  });

  it('a wait ends at its limit when the events are late; the next batch waits for them again', async () => {
    const t = setup(10_000, 0);
    await t.batch(8192);
    await t.batch(8192);
    expect(t.s.turns).toBe(200); // PACE_MAX_MS of the fake clock
    expect(t.pacer.owed).toBe(2 * 8192);
    await t.batch(8192);
    expect(t.s.turns).toBe(400);
  });

  it('an overflow of the event socket settles what is owed (a dump replaces the events)', async () => {
    let overflows = 0;
    const pacer = new WritePacer({ budget: 10_000, read: () => 0, overflows: () => overflows });
    pacer.writing(8000);
    await pacer.written();
    expect(pacer.owed).toBe(8000);
    overflows++;
    expect(pacer.owed).toBe(0);
  });

  it('small writes (a route change) leave the reading alone; budget 0 turns it all off', async () => {
    const t = setup(140_000);
    await t.batch(3);
    t.turnOver();
    expect(t.log).toEqual([]);
    const off = setup(0);
    for (let b = 0; b < 50; b++) await off.batch(8192);
    expect(off.log).toEqual([]);
    expect(off.s.turns).toBe(0);
  });
});
