import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatV4, formatV4Number } from './format.js';
import { parseDottedQuad } from './v4.js';

describe('IPv4 addresses as numbers', () => {
  it('format as the bytes do and parse back (signed or unsigned)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (v) => {
        const b = Buffer.alloc(4);
        b.writeUInt32BE(v);
        const text = formatV4(b, 0);
        expect(formatV4Number(v)).toBe(text);
        expect(formatV4Number(v | 0)).toBe(text);
        expect(parseDottedQuad(text)).toBe(v);
      }),
      { numRuns: 1000 },
    );
  });

  it('takes only canonical dotted decimal', () => {
    for (const s of [
      '010.0.0.1',
      '1.2.3',
      '1.2.3.4.5',
      '256.0.0.1',
      '1..2.3',
      '::1',
      '',
      '1.2.3.4 ',
    ])
      expect(parseDottedQuad(s), s).toBe(-1);
  });
});
