import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  i32be,
  i32le,
  u16be,
  u16le,
  u32be,
  u32le,
  w16be,
  w16le,
  w32be,
  w32le,
  wi32le,
} from './bytes.js';

describe('byte reads and writes', () => {
  it('read and write what Buffer’s own methods do, at every offset', () => {
    let seed = 12345;
    const rnd = (): number => (seed = (seed * 1103515245 + 12345) >>> 0);
    const buf = Buffer.alloc(11);
    for (let i = 0; i < buf.length; i++) buf[i] = rnd() & 255;
    for (let o = 0; o + 2 <= buf.length; o++) {
      expect(u16le(buf, o)).toBe(buf.readUInt16LE(o));
      expect(u16be(buf, o)).toBe(buf.readUInt16BE(o));
    }
    for (let o = 0; o + 4 <= buf.length; o++) {
      expect(u32le(buf, o)).toBe(buf.readUInt32LE(o));
      expect(i32le(buf, o)).toBe(buf.readInt32LE(o));
      expect(u32be(buf, o)).toBe(buf.readUInt32BE(o));
      expect(i32be(buf, o)).toBe(buf.readInt32BE(o));
    }
    for (let i = 0; i < 200; i++) {
      const v32 = rnd();
      const s32 = v32 | 0;
      const v16 = v32 & 0xffff;
      const o = i % 7;
      const [a, b] = [Buffer.alloc(13), Buffer.alloc(13)];
      expect(w32le(a, v32, o)).toBe(b.writeUInt32LE(v32, o));
      expect(w32be(a, v32, o + 1)).toBe(b.writeUInt32BE(v32, o + 1));
      expect(wi32le(a, s32, o + 2)).toBe(b.writeInt32LE(s32, o + 2));
      expect(w16le(a, v16, o + 3)).toBe(b.writeUInt16LE(v16, o + 3));
      expect(w16be(a, v16, o)).toBe(b.writeUInt16BE(v16, o));
      expect(a).toEqual(b);
    }
  });

  it('throw a RangeError outside the buffer or the type, and change nothing', () => {
    const buf = Buffer.alloc(6, 0xaa);
    expect(() => u32le(buf, 3)).toThrow(RangeError);
    expect(() => u16be(buf, -1)).toThrow(/offset -1 \(2 bytes\) is outside a buffer of 6 bytes/);
    expect(() => i32le(buf, 1.5)).toThrow(RangeError);
    expect(() => u16le(buf, Number.NaN)).toThrow(RangeError);
    expect(() => w32le(buf, 2 ** 32, 0)).toThrow(/value 4294967296 is outside \[0, 4294967295\]/);
    expect(() => w16le(buf, -1, 0)).toThrow(RangeError);
    expect(() => wi32le(buf, 2 ** 31, 0)).toThrow(RangeError);
    expect(() => w32be(buf, 1, 3)).toThrow(RangeError);
    expect(buf).toEqual(Buffer.alloc(6, 0xaa));
  });

  it('allocate nothing where Buffer’s methods do: under the agent’s --max-opt=2', () => {
    // The loop of a netlink header read, 2,000,000 times, in a Node with the agent's flags;
    // --trace-gc prints a line per collection.
    const scavenges = (read: string): number => {
      const script = [
        "import { i32le, u16le } from './dist/util/bytes.js';",
        'const b = Buffer.alloc(64); let s = 0;',
        `for (let i = 0; i < 2e6; i++) { const p = i & 15; s += ${read}; }`,
        'if (s === 0.5) console.log(s);',
      ].join('\n');
      const r = spawnSync(
        process.execPath,
        ['--max-opt=2', '--trace-gc', '--input-type=module', '-e', script],
        { encoding: 'utf8', cwd: process.cwd() },
      );
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.split('\n').filter((l) => l.includes('Scavenge')).length;
    };
    const node = scavenges('b.readInt32LE(p + 4) + b.readUInt16LE(p + 8)');
    const ours = scavenges('i32le(b, p + 4) + u16le(b, p + 8)');
    expect(node).toBeGreaterThan(50);
    expect(ours).toBeLessThanOrEqual(2);
  });
});
