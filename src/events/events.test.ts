import { describe, expect, it } from 'vitest';
import { FakeClock } from '../sched/testing.js';
import { Burst, EventLog, formatEventLine, type AgentEvent } from './index.js';

describe('EventLog', () => {
  it('keeps the last `capacity` events in order, numbered from 1', () => {
    let now = Date.parse('2025-01-01T00:00:00Z');
    const log = new EventLog({ capacity: 3, now: () => (now += 1000) });
    for (let i = 1; i <= 5; i++) log.emit('config.reloaded', `reload ${i}`, { n: i });
    const kept = log.read();
    expect(kept.map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(kept.map((e) => e.n)).toEqual([3, 4, 5]);
    expect(kept[0]!.time).toBe('2025-01-01T00:00:03.000Z');
    expect(log.lastSeq).toBe(5);
  });

  it('reads after a seq, since a time, and by type or type prefix', () => {
    let now = 0;
    const log = new EventLog({ capacity: 10, now: () => (now += 10) });
    log.emit('extip.assigned', 'a');
    log.emit('neighbor.repaired', 'b');
    log.emit('extip.conflict', 'c');
    expect(log.read({ afterSeq: 1 }).map((e) => e.summary)).toEqual(['b', 'c']);
    expect(log.read({ sinceMs: 20 }).map((e) => e.summary)).toEqual(['b', 'c']);
    expect(log.read({ types: ['extip'] }).map((e) => e.summary)).toEqual(['a', 'c']);
    expect(log.read({ types: ['extip.conflict', 'neighbor'] }).map((e) => e.summary)).toEqual([
      'b',
      'c',
    ]);
    // "ext" is not a subsystem: prefixes end at a dot
    expect(log.read({ types: ['ext'] })).toEqual([]);
  });

  it('calls followers with each new event until they stop; a throwing one is dropped', () => {
    const log = new EventLog({ capacity: 2 });
    const seen: AgentEvent[] = [];
    const stop = log.follow((e) => seen.push(e));
    log.follow(() => {
      throw new Error('gone');
    });
    log.emit('socket.reopened', 'x', { socket: 'neigh' });
    expect(log.followers).toBe(1);
    stop();
    log.emit('socket.reopened', 'y');
    expect(seen.map((e) => [e.type, e.summary, e.socket])).toEqual([
      ['socket.reopened', 'x', 'neigh'],
    ]);
    expect(log.followers).toBe(0);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new EventLog({ capacity: 0 })).toThrow(/positive integer/);
  });
});

describe('Burst', () => {
  const setup = () => {
    const clock = new FakeClock();
    const log = new EventLog({ capacity: 100 });
    let made = 0;
    const b = new Burst({
      sink: log,
      clock,
      type: 'neighbor.written',
      windowMs: 1000,
      describe: (n, sample) => `${n} written: ${sample.join(', ')}`,
    });
    const add = (n: number, base: number) =>
      b.add(n, (max) => {
        made++;
        return Array.from({ length: Math.min(max, n) }, (_, i) => `10.0.0.${base + i}`);
      });
    return { clock, log, b, add, made: () => made };
  };

  it('reports the first occurrence at once and the rest of the window in one summary', () => {
    const { clock, log, add } = setup();
    add(1, 1);
    expect(log.read().map((e) => e.summary)).toEqual(['1 written: 10.0.0.1']);
    add(1000, 10);
    add(999_000, 50);
    expect(log.read()).toHaveLength(1);
    clock.advance(1000);
    const [, second] = log.read();
    expect(second).toMatchObject({ count: 1_000_000, type: 'neighbor.written' });
    expect(second!.sample).toHaveLength(5);
    // a quiet window closes the burst: the next occurrence is reported at once again
    clock.advance(1000);
    add(2, 100);
    expect(log.read().map((e) => e.count)).toEqual([1, 1_000_000, 2]);
  });

  it('asks for examples only while the summary has room for them', () => {
    const { clock, add, made } = setup();
    for (let i = 0; i < 10_000; i++) add(1, i);
    // the first (reported at once) and five for the summary
    expect(made()).toBe(6);
    clock.advance(1000);
  });

  it('stop() reports what is pending and leaves no timer', () => {
    const { clock, log, b, add } = setup();
    add(1, 1);
    add(3, 2);
    b.stop();
    expect(log.read().map((e) => e.count)).toEqual([1, 3]);
    expect(clock.pending).toBe(0);
  });
});

describe('formatEventLine', () => {
  it('is one line: time, type, summary', () => {
    const line = formatEventLine({
      time: '2025-01-01T00:00:00.000Z',
      type: 'extip.conflict',
      summary: 'claimed by\n  aa:bb',
    });
    expect(line).toBe('2025-01-01T00:00:00.000Z extip.conflict       claimed by aa:bb');
  });
});
