import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Deadlines, type Deadline } from './index.js';

interface Tagged extends Deadline {
  readonly tag: number;
}

type Op =
  | { kind: 'schedule'; key: string; due: number }
  | { kind: 'cancel'; key: string }
  | { kind: 'take' }
  | { kind: 'takeDue'; now: number };

const key = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
const due = fc.integer({ min: 0, max: 20 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('schedule' as const), key, due }),
  fc.record({ kind: fc.constant('cancel' as const), key }),
  fc.record({ kind: fc.constant('take' as const) }),
  fc.record({ kind: fc.constant('takeDue' as const), now: due }),
);

/** The reference: a list of the current entries, sorted on every read by (due, seq). */
class Model {
  entries: { e: Tagged; seq: number }[] = [];
  seq = 0;
  schedule(e: Tagged): void {
    this.cancel(e.key);
    this.entries.push({ e, seq: this.seq++ });
  }
  cancel(k: string): void {
    this.entries = this.entries.filter((x) => x.e.key !== k);
  }
  sorted(): Tagged[] {
    return [...this.entries].sort((x, y) => x.e.due - y.e.due || x.seq - y.seq).map((x) => x.e);
  }
  take(): Tagged | undefined {
    const top = this.sorted()[0];
    if (top !== undefined) this.cancel(top.key);
    return top;
  }
}

describe('Deadlines', () => {
  it('agrees with a sorted list for any sequence of schedule, cancel and take', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const d = new Deadlines<Tagged>();
        const m = new Model();
        let tag = 0;
        for (const o of ops) {
          switch (o.kind) {
            case 'schedule': {
              const e = { key: o.key, due: o.due, tag: tag++ };
              d.schedule(e);
              m.schedule(e);
              break;
            }
            case 'cancel':
              d.cancel(o.key);
              m.cancel(o.key);
              break;
            case 'take':
              expect(d.take()).toBe(m.take());
              break;
            case 'takeDue': {
              const want: Tagged[] = [];
              while ((m.sorted()[0]?.due ?? Infinity) <= o.now) want.push(m.take()!);
              expect(d.takeDue(o.now)).toEqual(want);
              break;
            }
          }
          const sorted = m.sorted();
          expect(d.size).toBe(sorted.length);
          expect(d.peek()).toBe(sorted[0]);
          expect(d.next()).toBe(sorted[0]?.due ?? Infinity);
          for (const k of ['a', 'b', 'c', 'd', 'e', 'f']) {
            expect(d.get(k)).toBe(m.entries.find((x) => x.e.key === k)?.e);
          }
        }
      }),
    );
  });

  it('takes equal due times in the order they were scheduled', () => {
    const d = new Deadlines();
    for (const [k, due] of [
      ['a', 5],
      ['b', 1],
      ['c', 5],
      ['d', 1],
      ['e', 5],
      ['f', 1],
    ] as const) {
      d.schedule({ key: k, due });
    }
    expect(d.takeDue(10).map((e) => e.key)).toEqual(['b', 'd', 'f', 'a', 'c', 'e']);
  });

  it('cancelWhere drops the matching entries, clear() all of them', () => {
    const d = new Deadlines<Deadline & { op: string }>();
    d.schedule({ key: 'u1', due: 3, op: 'update' });
    d.schedule({ key: 'd1', due: 2, op: 'delete' });
    d.schedule({ key: 'u2', due: 1, op: 'update' });
    d.cancelWhere((e) => e.op === 'update');
    expect(d.size).toBe(1);
    expect(d.take()?.key).toBe('d1');
    expect(d.take()).toBeUndefined();
    d.schedule({ key: 'x', due: 1, op: 'update' });
    d.clear();
    expect([d.size, d.next(), d.peek()]).toEqual([0, Infinity, undefined]);
  });

  it('stays correct when one key is rescheduled far more often than the heap is rebuilt', () => {
    const d = new Deadlines();
    for (let i = 0; i < 50_000; i++) d.schedule({ key: `k${i % 3}`, due: 100_000 - i });
    expect(d.size).toBe(3);
    expect(d.takeDue(Infinity).map((e) => [e.key, e.due])).toEqual([
      ['k1', 50_001],
      ['k0', 50_002],
      ['k2', 50_003],
    ]);
  });
});
