// The history checker must catch what it is there to catch: a lost acknowledged write, a
// resurrected deleted one, an order that contradicts real time — and accept what
// concurrency and unknown outcomes allow.
import { describe, expect, it } from 'vitest';
import { allKeys, checkHistory, prng, randomRequest, type Op, type Outcome } from './history.js';

let id = 0;
function op(key: string, value: boolean, invoke: number, complete: number, outcome: Outcome): Op {
  return {
    id: ++id,
    method: 'POST',
    path: '/',
    body: {},
    writes: new Map([[key, value]]),
    label: `${value ? 'add' : 'del'} ${key}`,
    invoke,
    complete,
    outcome,
    detail: '',
  };
}
const finalOf = (m: Record<string, boolean>) => (k: string) => m[k] ?? false;

describe('history checker', () => {
  it('flags a lost acknowledged write and a resurrected deleted one', () => {
    expect(checkHistory([op('k', true, 0, 1, 'ok')], finalOf({}), ['k'])).toMatchObject([
      { key: 'k', final: false },
    ]);
    const h = [op('k', true, 0, 1, 'ok'), op('k', false, 2, 3, 'ok')];
    expect(checkHistory(h, finalOf({ k: true }), ['k'])).toHaveLength(1);
    expect(checkHistory(h, finalOf({ k: false }), ['k'])).toEqual([]);
  });

  it('accepts either outcome of overlapping writes, and of unknown ones', () => {
    const overlap = [op('k', true, 0, 5, 'ok'), op('k', false, 1, 3, 'ok')];
    expect(checkHistory(overlap, finalOf({ k: true }), ['k'])).toEqual([]);
    expect(checkHistory(overlap, finalOf({ k: false }), ['k'])).toEqual([]);
    const unknown = [op('k', true, 0, 1, 'ok'), op('k', false, 2, 9, 'unknown')];
    expect(checkHistory(unknown, finalOf({ k: true }), ['k'])).toEqual([]);
    expect(checkHistory(unknown, finalOf({ k: false }), ['k'])).toEqual([]);
    // An unknown write that completed (its agent died) before an acknowledged one began
    // cannot be the last.
    const dead = [op('k', false, 0, 1, 'unknown'), op('k', true, 2, 3, 'ok')];
    expect(checkHistory(dead, finalOf({ k: false }), ['k'])).toHaveLength(1);
  });

  it('ignores writes that definitely failed', () => {
    const h = [op('k', true, 0, 1, 'fail')];
    expect(checkHistory(h, finalOf({ k: true }), ['k'])).toHaveLength(1);
    expect(checkHistory(h, finalOf({}), ['k'])).toEqual([]);
  });

  it('generates the same requests from the same seed, over the whole pool', () => {
    const pools = {
      owners: ['a', 'b'],
      forwardable: ['10.0.0.1', '10.0.0.2'],
      extip: ['192.0.2.1'],
    };
    const a = Array.from(
      { length: 50 },
      (
        (r) => () =>
          randomRequest(r, pools).label
      )(prng(7)),
    );
    const b = Array.from(
      { length: 50 },
      (
        (r) => () =>
          randomRequest(r, pools).label
      )(prng(7)),
    );
    expect(a).toEqual(b);
    const touched = new Set(
      Array.from(
        { length: 400 },
        ((r) => () => [...randomRequest(r, pools).writes.keys()])(prng(1)),
      ).flat(),
    );
    expect([...touched].sort()).toEqual(allKeys(pools).sort());
  });
});
