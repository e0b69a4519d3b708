import { mkdtempSync, readFileSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateStore } from './state.js';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'fk-state-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('state store', () => {
  it('round-trips owners and external IPs through an atomic file', () => {
    const path = join(tmp(), 'sub', 'state.json');
    const a = new StateStore(path);
    expect(a.load()).toEqual({ version: 1, forwardable: {}, extip: [] });
    a.setOwner('lb', ['10.0.0.2', '10.0.0.1', '10.0.0.1']);
    a.setOwner('ops', ['10.0.0.9']);
    a.setExtip(['192.0.2.1']);
    a.setOwner('ops', []);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const b = new StateStore(path);
    expect(b.load()).toEqual({
      version: 1,
      forwardable: { lb: ['10.0.0.1', '10.0.0.2'] },
      extip: ['192.0.2.1'],
    });
    expect(JSON.parse(readFileSync(path, 'utf8')).forwardable.lb).toEqual(['10.0.0.1', '10.0.0.2']);
  });

  it('refuses a corrupt file with an error naming it, and keeps nothing in memory', () => {
    const path = join(tmp(), 'state.json');
    writeFileSync(path, '{"version": 1, "forwardable": {"x": [1]}, "extip": []}');
    expect(() => new StateStore(path).load()).toThrow(/unknown layout; move it away/);
    writeFileSync(path, '{nope');
    expect(() => new StateStore(path).load()).toThrow(new RegExp(`${path} is not valid JSON`));
  });

  it('keeps state only in memory when the path is empty', () => {
    const s = new StateStore('');
    s.load();
    s.setExtip(['192.0.2.1']);
    expect(s.extip).toEqual(['192.0.2.1']);
  });
});
