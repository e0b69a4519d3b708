import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  StateStore,
  emptyState,
  formatState,
  formatStatePieces,
  parseState,
  writeDurably,
  type ControlState,
} from './state.js';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'fk-state-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const state = (f: Record<string, string[]>, x: string[] = []): ControlState => ({
  forwardable: new Map(Object.entries(f).map(([o, ips]) => [o, new Set(ips)])),
  extip: new Set(x),
});
const plain = (s: ControlState) => ({
  forwardable: Object.fromEntries([...s.forwardable].map(([o, ips]) => [o, [...ips].sort()])),
  extip: [...s.extip].sort(),
});

describe('state store', () => {
  it('saves durably and loads back; owners named like JavaScript properties are plain owners', async () => {
    const path = join(tmp(), 'sub', 'state.json');
    const a = new StateStore(path);
    expect(plain(a.load().usable)).toEqual({ forwardable: {}, extip: [] });
    const s = state(
      { lb: ['10.0.0.2', '10.0.0.1'], constructor: ['10.0.0.3'], toString: ['10.0.0.4'] },
      ['192.0.2.1'],
    );
    await a.save(s);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(path, '..'))).toEqual(['state.json']);
    writeFileSync(`${path}.tmp`, '{"version": 1, "forw'); // a write killed halfway
    const b = new StateStore(path);
    const { usable, skipped } = b.load();
    expect(readdirSync(join(path, '..'))).toEqual(['state.json']);
    expect(skipped).toEqual([]);
    expect(plain(usable)).toEqual(plain(s));
    expect(JSON.parse(readFileSync(path, 'utf8')).forwardable.lb).toEqual(['10.0.0.1', '10.0.0.2']);
  });

  it('skips each bad entry on its own, keeps it in the file, and names why', () => {
    const path = join(tmp(), 'state.json');
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        forwardable: {
          ops: ['10.0.0.1', '300.1.1.1', '10.0.0.2', 7],
          config: ['10.0.0.5'],
          'bad owner': ['10.0.0.6'],
          lb: ['192.0.2.9'],
        },
        extip: ['192.0.2.9', '127.0.0.1', '10.0.0.7'],
      }),
    );
    const s = new StateStore(path);
    const { usable, skipped } = s.load({ forwardable: new Set(), extip: new Set(['10.0.0.2']) });
    expect(plain(usable)).toEqual({
      forwardable: { ops: ['10.0.0.1'] },
      extip: ['10.0.0.7', '192.0.2.9'],
    });
    expect(skipped.map((e) => e.entry).sort()).toEqual([
      'extip 127.0.0.1',
      'forwardable bad owner',
      'forwardable config',
      'forwardable lb 192.0.2.9',
      'forwardable ops 10.0.0.2',
      'forwardable ops 300.1.1.1',
      'forwardable ops 7',
    ]);
    const why = new Map(skipped.map((e) => [e.entry, e.reason]));
    expect(why.get('extip 127.0.0.1')).toMatch(/loopback/);
    expect(why.get('forwardable ops 10.0.0.2')).toMatch(/extip\.static/);
    expect(why.get('forwardable lb 192.0.2.9')).toMatch(/in the state file/);
    expect(why.get('forwardable config')).toMatch(/managed by the agent itself/);
    // The file keeps what it held (but for the entry that is not a string at all).
    expect(plain(s.state).forwardable.ops).toEqual(['10.0.0.1', '10.0.0.2', '300.1.1.1']);
    expect(plain(s.state).extip).toContain('127.0.0.1');
  });

  it('refuses a corrupt file, naming it and what moving it away would do', () => {
    const path = join(tmp(), 'state.json');
    writeFileSync(path, '{"version": 1, "forwardable": [], "extip": []}');
    expect(() => new StateStore(path).load()).toThrow(
      /unknown layout.*removes from the kernel what only that file held/,
    );
    writeFileSync(path, '{"version": 1, "forwa');
    expect(() => new StateStore(path).load()).toThrow(new RegExp(`${path} is not valid JSON`));
    expect(() => parseState('[]', 'x')).toThrow(/unknown layout/);
  });

  it('leaves the previous file in place when a save fails, and says why', async () => {
    const dir = tmp();
    const path = join(dir, 'state.json');
    await writeDurably(path, formatState(state({ a: ['10.0.0.1'] })));
    const before = readFileSync(path, 'utf8');
    mkdirSync(`${path}.tmp`); // the temp file cannot be created
    const s = new StateStore(path);
    s.load();
    await expect(s.save(state({ a: ['10.0.0.1', '10.0.0.2'] }))).rejects.toMatchObject({
      code: 'FIBKEEPER_ERR_STORAGE',
      message: expect.stringMatching(/could not be saved \(create .*EISDIR.*nothing was changed/),
    });
    expect(readFileSync(path, 'utf8')).toBe(before);
    expect(plain(s.state)).toEqual({ forwardable: { a: ['10.0.0.1'] }, extip: [] });
  });

  it('writes the text JSON.stringify writes (indent 1, sorted), in pieces; a large set in the order it was added', () => {
    const old = (s: ControlState) =>
      JSON.stringify(
        {
          version: 1,
          forwardable: Object.fromEntries(
            [...s.forwardable.keys()].sort().map((o) => [o, [...s.forwardable.get(o)!].sort()]),
          ),
          extip: [...s.extip].sort(),
        },
        null,
        1,
      ) + '\n';
    const ipOf = (i: number) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;
    for (const [owners, per, ext] of [
      [0, 0, 0],
      [1, 1, 0],
      [3, 20, 2],
      [2, 4000, 1],
    ] as const) {
      const s = state(
        Object.fromEntries(
          Array.from({ length: owners }, (_, o) => [
            o === 1 ? 'a"b' : `o${o}`,
            Array.from({ length: per }, (_, i) => ipOf((i * 7919) % 65536)),
          ]),
        ),
        Array.from({ length: ext }, (_, i) => `192.0.2.${9 - i}`),
      );
      expect(formatState(s)).toBe(old(s));
    }
    const big = state({ lb: Array.from({ length: 20_000 }, (_, i) => ipOf(20_000 - i)) });
    const pieces = [...formatStatePieces(big)];
    expect(pieces.length).toBeGreaterThan(3);
    expect(JSON.parse(pieces.join('')).forwardable.lb).toEqual([...big.forwardable.get('lb')!]);
  });

  it('keeps state only in memory when the path is empty', async () => {
    const s = new StateStore('');
    expect(plain(s.load().usable)).toEqual(plain(emptyState()));
    await s.save(state({}, ['192.0.2.1']));
    expect([...s.state.extip]).toEqual(['192.0.2.1']);
  });
});
