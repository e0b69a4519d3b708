import { describe, expect, it } from 'vitest';
import { stripUndefined } from './index.js';

describe('stripUndefined', () => {
  it('drops keys whose value is undefined, keeps every other value, copies', () => {
    const o = { a: 1, b: undefined, c: null, d: 0, e: '', f: false };
    const out = stripUndefined(o);
    expect(Object.keys(out)).toEqual(['a', 'c', 'd', 'e', 'f']);
    expect(out).toEqual({ a: 1, c: null, d: 0, e: '', f: false });
    expect(Object.keys(o)).toContain('b'); // the argument is left as it was
  });

  it('lets defaults show through where an option is undefined', () => {
    const defaults = { window: 64, rcvbuf: 1 << 20 };
    const opts: { window?: number; rcvbuf?: number } = { window: undefined, rcvbuf: 4096 };
    expect({ ...defaults, ...stripUndefined(opts) }).toEqual({ window: 64, rcvbuf: 4096 });
  });
});
