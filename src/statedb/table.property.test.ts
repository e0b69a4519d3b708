// Property test: for random writes and random reads by several watchers, a replica built by
// applying each watcher's changes equals the table, revisions in a read only grow, indexes
// agree with a scan, and no deletion is kept once every watcher has read it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Table, type ChangeIterator } from './index.js';

interface Obj {
  id: number;
  group: number;
  tags: number[];
}

type Step =
  | { t: 'upsert'; id: number; group: number; tags: number[] }
  | { t: 'delete'; id: number }
  | { t: 'batch'; ids: number[]; group: number }
  | { t: 'read'; watcher: number }
  | { t: 'open' }
  | { t: 'close'; watcher: number };

const id = fc.integer({ min: 0, max: 15 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    t: fc.constant('upsert' as const),
    id,
    group: fc.integer({ min: 0, max: 3 }),
    tags: fc.uniqueArray(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
  }),
  fc.record({ t: fc.constant('delete' as const), id }),
  fc.record({
    t: fc.constant('batch' as const),
    ids: fc.array(id, { maxLength: 8 }),
    group: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({ t: fc.constant('read' as const), watcher: fc.nat(3) }),
  fc.constant({ t: 'open' as const }),
  fc.record({ t: fc.constant('close' as const), watcher: fc.nat(3) }),
);

interface Replica {
  it: ChangeIterator<Obj>;
  rows: Map<string, Obj>;
  open: boolean;
}

function read(r: Replica): void {
  let last = 0;
  for (const c of r.it.read()) {
    expect(c.revision).toBeGreaterThan(last);
    last = c.revision;
    if (c.deleted) r.rows.delete(c.key);
    else r.rows.set(c.key, c.object);
  }
}

function snapshot(rows: Iterable<[string, Obj]>): [string, Obj][] {
  return [...rows].sort(([a], [b]) => a.localeCompare(b));
}

describe('Table properties', () => {
  it('watchers replicate the table; indexes match a scan; deletions are collected', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        const table = new Table<Obj>({
          name: 'prop',
          primaryKey: (o) => String(o.id),
          indexes: { group: (o) => String(o.group), tag: (o) => o.tags.map(String) },
        });
        const replicas: Replica[] = [{ it: table.changes(), rows: new Map(), open: true }];
        for (const s of steps) {
          switch (s.t) {
            case 'upsert':
              table.upsert({ id: s.id, group: s.group, tags: s.tags });
              break;
            case 'delete':
              table.delete(String(s.id));
              break;
            case 'batch':
              table.write((w) => {
                for (const i of s.ids) {
                  if (i % 3 === 0) w.delete(String(i));
                  else w.upsert({ id: i, group: s.group, tags: [] });
                }
              });
              break;
            case 'read': {
              const r = replicas[s.watcher % replicas.length];
              if (r?.open) read(r);
              break;
            }
            case 'open':
              replicas.push({ it: table.changes(), rows: new Map(), open: true });
              break;
            case 'close': {
              const r = replicas[s.watcher % replicas.length];
              if (r !== undefined) {
                r.it.close();
                r.open = false;
              }
              break;
            }
          }
        }
        const want = snapshot([...table.rows()].map((r) => [r.key, r.object] as [string, Obj]));
        for (const r of replicas.filter((x) => x.open)) {
          read(r);
          expect(snapshot(r.rows)).toEqual(want);
        }
        expect(table.retainedDeletions).toBe(0);
        for (let g = 0; g <= 3; g++) {
          const scan = table.list().filter((o) => o.group === g);
          expect(table.getBy('group', String(g)).sort((a, b) => a.id - b.id)).toEqual(
            scan.sort((a, b) => a.id - b.id),
          );
        }
        for (let tag = 0; tag <= 4; tag++) {
          const scan = table.list().filter((o) => o.tags.includes(tag));
          expect(table.getBy('tag', String(tag)).sort((a, b) => a.id - b.id)).toEqual(
            scan.sort((a, b) => a.id - b.id),
          );
        }
      }),
      { numRuns: 500 },
    );
  });
});
