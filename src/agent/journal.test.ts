import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyChange, type JournalOp } from './journal.js';
import { StateStore, emptyState, type ControlState } from './state.js';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'fk-journal-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const plain = (s: ControlState) => ({
  forwardable: Object.fromEntries(
    [...s.forwardable].sort(([a], [b]) => (a < b ? -1 : 1)).map(([o, ips]) => [o, [...ips].sort()]),
  ),
  extip: [...s.extip].sort(),
});
const ipOf = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** A store in journal mode from the first save (journalFrom 0) with `ops` saved one by one. */
async function saved(path: string, ops: JournalOp[]): Promise<StateStore> {
  const s = new StateStore(path, { journalFrom: 0 });
  s.load();
  for (const op of ops) {
    s.record(op);
    await s.persist();
  }
  return s;
}

const OPS: JournalOp[] = [
  { op: 'forwardable.add', owner: 'a', ips: ['10.0.0.1', '10.0.0.2'] },
  { op: 'extip.add', ips: ['192.0.2.1'] },
  { op: 'forwardable.set', owner: 'b', ips: ['10.0.0.2', '10.0.0.3'] },
  { op: 'forwardable.del', owner: 'a', ips: ['10.0.0.2', '10.0.0.9'] },
  { op: 'forwardable.set', owner: 'b', ips: [] },
  { op: 'forwardable.add', owner: 'constructor', ips: ['10.0.0.4'] },
  { op: 'extip.del', ips: ['192.0.2.1'] },
];

describe('state file journal', () => {
  it('appends each save to the journal, leaving the state file as it was, and loads back', async () => {
    const path = join(tmp(), 'state.json');
    const first = await saved(path, OPS.slice(0, 1));
    const snapshot = readFileSync(path, 'utf8');
    expect(existsSync(first.journalPath)).toBe(false); // the first save wrote the whole state
    for (const op of OPS.slice(1)) {
      first.record(op);
      await first.persist();
    }
    expect(readFileSync(path, 'utf8')).toBe(snapshot);
    expect(readFileSync(first.journalPath, 'utf8').trim().split('\n')).toHaveLength(OPS.length - 1);
    const want = emptyState();
    for (const op of OPS) applyChange(op, want);
    const again = new StateStore(path, { journalFrom: 0 });
    expect(plain(again.load().usable)).toEqual(plain(want));
    expect(plain(first.state)).toEqual(plain(want));
  });

  it('after a crash at any byte of a journal write, loads every whole line and drops the cut one', async () => {
    const dir = tmp();
    const path = join(dir, 'state.json');
    const s = await saved(path, OPS);
    const journal = readFileSync(s.journalPath);
    const lineEnds = [...journal.entries()].filter(([, b]) => b === 10).map(([i]) => i + 1);
    for (let cut = 0; cut <= journal.length; cut++) {
      writeFileSync(s.journalPath, journal.subarray(0, cut));
      const whole = lineEnds.filter((e) => e <= cut).length;
      const want = emptyState();
      for (const op of OPS.slice(0, 1 + whole)) applyChange(op, want);
      // Read only (config check beside a running agent): the same state, the file untouched.
      const ro = new StateStore(path, { journalFrom: 0 });
      expect(plain(ro.load(undefined, { repair: false }).usable)).toEqual(plain(want));
      expect(statSync(s.journalPath).size).toBe(cut);
      const r = new StateStore(path, { journalFrom: 0 });
      expect(plain(r.load().usable), `cut at ${cut}`).toEqual(plain(want));
      expect(statSync(s.journalPath).size).toBe(lineEnds.filter((e) => e <= cut).at(-1) ?? 0);
      // The next save starts a line of its own.
      r.record({ op: 'extip.add', ips: ['192.0.2.7'] });
      await r.persist();
      applyChange({ op: 'extip.add', ips: ['192.0.2.7'] }, want);
      expect(plain(new StateStore(path, { journalFrom: 0 }).load().usable)).toEqual(plain(want));
    }
  });

  it('writes the whole state once the journal is a quarter of it; a journal left by a crash after that is skipped', async () => {
    const path = join(tmp(), 'state.json');
    const big = Array.from({ length: 20_000 }, (_, i) => ipOf(i + 1));
    const s = await saved(path, [{ op: 'forwardable.set', owner: 'lb', ips: big }]);
    for (let k = 0; s.compactionDue === false; k++) {
      s.record({ op: 'forwardable.add', owner: 'ops', ips: [ipOf(100_000 + k)] });
      s.record({ op: 'forwardable.del', owner: 'lb', ips: [ipOf(k + 1)] });
      await s.persist();
    }
    const journal = readFileSync(s.journalPath);
    expect(journal.length).toBeGreaterThan(statSync(path).size / 4);
    const want = plain(s.state);
    await s.compact();
    expect(existsSync(s.journalPath)).toBe(false);
    expect(JSON.parse(readFileSync(path, 'utf8')).seq).toBeGreaterThan(1000);
    expect(plain(new StateStore(path).load().usable)).toEqual(want);
    // Killed after the rename, before the journal was removed: its lines are in the snapshot.
    writeFileSync(s.journalPath, journal);
    expect(plain(new StateStore(path).load().usable)).toEqual(want);
  });

  it('refuses a journal with a corrupt whole line, naming it', async () => {
    const path = join(tmp(), 'state.json');
    const s = await saved(path, OPS.slice(0, 3));
    copyFileSync(s.journalPath, `${s.journalPath}.bak`);
    writeFileSync(s.journalPath, `${readFileSync(s.journalPath, 'utf8')}{"seq": 9, "op": "x"}\n`);
    expect(() => new StateStore(path).load()).toThrow(
      /journal is corrupt \(line 3 is not a change\)/,
    );
  });

  it('leaves state file and journal as they were when an append fails, then writes the whole state', async () => {
    const dir = tmp();
    const path = join(dir, 'state.json');
    const s = await saved(path, OPS.slice(0, 1));
    mkdirSync(s.journalPath); // the journal cannot be opened for writing
    const before = readFileSync(path, 'utf8');
    s.record({ op: 'extip.add', ips: ['192.0.2.9'] });
    await expect(s.persist()).rejects.toMatchObject({
      code: 'FIBKEEPER_ERR_STORAGE',
      message: expect.stringMatching(/journal .* could not be saved .*nothing was changed/),
    });
    expect(readFileSync(path, 'utf8')).toBe(before);
    rmSync(s.journalPath, { recursive: true });
    s.discard();
    s.record({ op: 'extip.add', ips: ['192.0.2.10'] });
    await s.persist();
    expect(existsSync(s.journalPath)).toBe(false);
    expect(JSON.parse(readFileSync(path, 'utf8')).extip).toContain('192.0.2.10');
  });
});
