import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ClosedError, ConflictError, InvalidArgumentError } from '../errors/index.js';
import { RowNode, Table } from './index.js';
import type { Change } from './index.js';

interface Neigh {
  ip: string;
  ifindex: number;
  mac?: string;
  tags?: string[];
}

const keyOf = (n: Neigh): string => `${n.ifindex}/${n.ip}`;

function neighTable(): Table<Neigh> {
  return new Table<Neigh>({
    name: 'neighbors',
    primaryKey: keyOf,
    indexes: { ifindex: (n) => String(n.ifindex), tag: (n) => n.tags ?? [] },
  });
}

/** Changes as short strings: "+1/10.0.0.1@3" for an upsert, "-…" for a delete. */
function fmt(changes: readonly Change<Neigh>[]): string[] {
  return changes.map((c) => `${c.deleted ? '-' : '+'}${c.key}@${c.revision}`);
}

describe('Table writes and revisions', () => {
  it('stamps each write with the next table revision', () => {
    const t = neighTable();
    expect(t.revision).toBe(0);
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    t.upsert({ ip: '10.0.0.2', ifindex: 1 });
    expect(t.revision).toBe(2);
    expect(t.row('1/10.0.0.1')?.revision).toBe(1);
    expect(t.row('1/10.0.0.2')?.revision).toBe(2);
    t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'aa' });
    expect(t.row('1/10.0.0.1')?.revision).toBe(3);
    expect(t.get('1/10.0.0.1')?.mac).toBe('aa');
    expect(t.delete('1/10.0.0.2')).toEqual({ ip: '10.0.0.2', ifindex: 1 });
    expect(t.revision).toBe(4);
    expect(t.delete('1/10.0.0.2')).toBeUndefined();
    expect(t.revision).toBe(4);
    expect(t.size).toBe(1);
    expect(t.has('1/10.0.0.2')).toBe(false);
  });

  it('insert refuses an existing key', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    expect(() => t.insert({ ip: '10.0.0.1', ifindex: 1 })).toThrow(ConflictError);
    expect(t.revision).toBe(1);
  });

  it('upsert of an equal object is no write when equals is given', () => {
    const t = new Table<Neigh>({
      name: 't',
      primaryKey: keyOf,
      equals: (a, b) => a.mac === b.mac,
    });
    expect(t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'aa' })).toBe(true);
    expect(t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'aa' })).toBe(false);
    expect(t.revision).toBe(1);
    expect(t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'bb' })).toBe(true);
    expect(t.revision).toBe(2);
  });

  it('modify reads, replaces, deletes, or leaves the row alone', () => {
    const t = neighTable();
    const a = { ip: '10.0.0.1', ifindex: 1 };
    expect(t.modify('1/10.0.0.1', (cur) => cur ?? a)).toBe(a);
    expect(t.revision).toBe(1);
    expect(t.modify('1/10.0.0.1', (cur) => cur)).toBe(a);
    expect(t.revision).toBe(1);
    t.modify('1/10.0.0.1', (cur) => ({ ...(cur as Neigh), mac: 'cc' }));
    expect(t.get('1/10.0.0.1')?.mac).toBe('cc');
    expect(t.revision).toBe(2);
    expect(() => t.modify('1/10.0.0.1', () => ({ ip: '10.9.9.9', ifindex: 1 }))).toThrow(
      InvalidArgumentError,
    );
    expect(t.modify('1/10.0.0.1', () => undefined)).toBeUndefined();
    expect(t.size).toBe(0);
    expect(t.revision).toBe(3);
  });

  it('write() is one commit: waiters wake once, after all writes', async () => {
    const t = neighTable();
    let wakeups = 0;
    let sizeAtWake = -1;
    const waiting = t.waitForChange(0).then(() => {
      wakeups++;
      sizeAtWake = t.size;
    });
    const rev = t.write((w) => {
      for (let i = 0; i < 100; i++) w.insert({ ip: `10.0.0.${i}`, ifindex: 1 });
    });
    await waiting;
    expect(rev).toBe(100);
    expect(wakeups).toBe(1);
    expect(sizeAtWake).toBe(100);
  });

  it('write() rejects an async function', () => {
    const t = neighTable();
    expect(() => t.write(async () => undefined)).toThrow(/synchronous/);
  });

  it('list, rows and getBy reflect the current rows', () => {
    const t = neighTable();
    t.write((w) => {
      w.insert({ ip: '10.0.0.1', ifindex: 1, tags: ['a', 'b'] });
      w.insert({ ip: '10.0.0.2', ifindex: 1, tags: ['b'] });
      w.insert({ ip: '10.0.0.1', ifindex: 2 });
    });
    expect(t.list().map(keyOf).sort()).toEqual(['1/10.0.0.1', '1/10.0.0.2', '2/10.0.0.1']);
    expect([...t.rows()].map((r) => r.revision).sort()).toEqual([1, 2, 3]);
    expect(t.getBy('ifindex', '1').map(keyOf).sort()).toEqual(['1/10.0.0.1', '1/10.0.0.2']);
    expect(t.getBy('tag', 'b').map(keyOf).sort()).toEqual(['1/10.0.0.1', '1/10.0.0.2']);
    expect(t.getBy('tag', 'a').map(keyOf)).toEqual(['1/10.0.0.1']);
    expect(t.getBy('ifindex', '3')).toEqual([]);
    expect(() => t.getBy('nope', 'x')).toThrow(InvalidArgumentError);
  });

  it('keeps secondary indexes right across replace and delete', () => {
    const t = neighTable();
    t.upsert({ ip: '10.0.0.1', ifindex: 1, tags: ['a'] });
    t.upsert({ ip: '10.0.0.2', ifindex: 1, tags: ['a'] });
    // Moving a row to other index values removes it from the old ones.
    t.upsert({ ip: '10.0.0.1', ifindex: 1, tags: ['c'] });
    expect(t.getBy('tag', 'a').map(keyOf)).toEqual(['1/10.0.0.2']);
    expect(t.getBy('tag', 'c').map(keyOf)).toEqual(['1/10.0.0.1']);
    t.delete('1/10.0.0.2');
    expect(t.getBy('tag', 'a')).toEqual([]);
    expect(t.getBy('ifindex', '1').map(keyOf)).toEqual(['1/10.0.0.1']);
    t.delete('1/10.0.0.1');
    expect(t.getBy('ifindex', '1')).toEqual([]);
  });
});

describe('Table changes', () => {
  it('first read returns the live rows, later reads only what changed', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    t.insert({ ip: '10.0.0.2', ifindex: 1 });
    t.delete('1/10.0.0.2');
    const w = t.changes();
    // The delete happened before the watcher existed: it never saw the row.
    expect(fmt(w.read())).toEqual(['+1/10.0.0.1@1']);
    expect(w.position).toBe(3);
    expect(w.read()).toEqual([]);
    t.insert({ ip: '10.0.0.3', ifindex: 1 });
    t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'aa' });
    t.delete('1/10.0.0.3');
    expect(fmt(w.read())).toEqual(['+1/10.0.0.1@5', '-1/10.0.0.3@6']);
    const del = t.changes();
    expect(fmt(del.read())).toEqual(['+1/10.0.0.1@5']);
  });

  it('returns only changes after the position, however many rows the table has', () => {
    const t = neighTable();
    t.write((w) => {
      for (let i = 0; i < 1000; i++) w.insert({ ip: `10.0.${i >> 8}.${i & 255}`, ifindex: 1 });
    });
    const w = t.changes();
    expect(w.read()).toHaveLength(1000);
    t.upsert({ ip: '10.0.0.7', ifindex: 1, mac: 'x' });
    t.upsert({ ip: '10.0.3.0', ifindex: 1, mac: 'y' });
    expect(fmt(w.read())).toEqual(['+1/10.0.0.7@1001', '+1/10.0.3.0@1002']);
  });

  it('keeps a deletion until every watcher has read it, then collects it', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    t.insert({ ip: '10.0.0.2', ifindex: 1 });
    const a = t.changes();
    const b = t.changes();
    a.read();
    b.read();
    t.delete('1/10.0.0.1');
    t.delete('1/10.0.0.2');
    expect(t.retainedDeletions).toBe(2);
    expect(fmt(a.read())).toEqual(['-1/10.0.0.1@3', '-1/10.0.0.2@4']);
    expect(t.retainedDeletions).toBe(2);
    expect(fmt(b.read())).toEqual(['-1/10.0.0.1@3', '-1/10.0.0.2@4']);
    expect(t.retainedDeletions).toBe(0);
  });

  it('a closed watcher no longer holds deletions and cannot read', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    const a = t.changes();
    const lazy = t.changes();
    a.read();
    t.delete('1/10.0.0.1');
    a.read();
    expect(t.retainedDeletions).toBe(1);
    lazy.close();
    lazy.close();
    expect(t.retainedDeletions).toBe(0);
    expect(() => lazy.read()).toThrow(ClosedError);
  });

  it('keeps no deletions when nobody watches', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    t.delete('1/10.0.0.1');
    expect(t.retainedDeletions).toBe(0);
    expect(t.revision).toBe(2);
  });

  it('a watcher registered after a deletion does not hold it', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    const old = t.changes();
    t.delete('1/10.0.0.1');
    const late = t.changes();
    expect(late.read()).toEqual([]);
    expect(t.retainedDeletions).toBe(1);
    expect(fmt(old.read())).toEqual(['-1/10.0.0.1@2']);
    expect(t.retainedDeletions).toBe(0);
  });

  it('shows delete then re-insert of a key as both, in order', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    const w = t.changes();
    w.read();
    t.delete('1/10.0.0.1');
    t.insert({ ip: '10.0.0.1', ifindex: 1, mac: 'b' });
    expect(fmt(w.read())).toEqual(['-1/10.0.0.1@2', '+1/10.0.0.1@3']);
  });

  it('a change read earlier keeps its object and revision after later writes', () => {
    const t = neighTable();
    t.insert({ ip: '10.0.0.1', ifindex: 1, mac: 'a' });
    const w = t.changes();
    const [first] = w.read();
    t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'b' });
    expect(first?.object.mac).toBe('a');
    expect(first?.revision).toBe(1);
    expect(first?.deleted).toBe(false);
  });

  it('wait() and waitForChange resolve on the next commit, and honour abort', async () => {
    const t = neighTable();
    const w = t.changes();
    let woke = false;
    const p = w.wait().then(() => (woke = true));
    await Promise.resolve();
    expect(woke).toBe(false);
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    await p;
    expect(woke).toBe(true);
    // Already past: resolves at once.
    await t.waitForChange(0);
    const ac = new AbortController();
    const aborted = t.waitForChange(t.revision, ac.signal);
    ac.abort(new Error('bye'));
    await expect(aborted).rejects.toThrow('bye');
  });

  it('leaves nothing behind for a wait that was aborted (a reconciler waits every round)', async () => {
    const t = neighTable();
    for (let i = 0; i < 1000; i++) {
      const ac = new AbortController();
      const p = t.waitForChange(t.revision, ac.signal);
      ac.abort(new Error('round done'));
      await expect(p).rejects.toThrow('round done');
    }
    expect(t.changeWaitersCount).toBe(0);
    const pending = t.waitForChange(t.revision);
    expect(t.changeWaitersCount).toBe(1);
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    await pending;
    expect(t.changeWaitersCount).toBe(0);
  });
});

describe('Table initializers', () => {
  it('is initialized only when every registered initializer is done', async () => {
    const t = neighTable();
    expect(t.initialized).toBe(true);
    const dump = t.registerInitializer('dump');
    const cfg = t.registerInitializer('config');
    expect(t.initialized).toBe(false);
    expect(t.pendingInitializers().sort()).toEqual(['config', 'dump']);
    let done = false;
    const p = t.waitInitialized().then(() => (done = true));
    dump();
    dump();
    await Promise.resolve();
    expect(t.initialized).toBe(false);
    expect(done).toBe(false);
    cfg();
    await p;
    expect(t.initialized).toBe(true);
    expect(() => t.registerInitializer('late')).toThrow(InvalidArgumentError);
  });

  it('waitInitialized rejects when aborted', async () => {
    const t = neighTable();
    t.registerInitializer('dump');
    const ac = new AbortController();
    const p = t.waitInitialized(ac.signal);
    ac.abort(new Error('gave up'));
    await expect(p).rejects.toThrow('gave up');
  });
});

describe('Table status', () => {
  it('starts pending, is set only for the current revision, and is not a write', () => {
    let now = 1000;
    const t = new Table<Neigh>({ name: 't', primaryKey: keyOf, now: () => now });
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    expect(t.status('1/10.0.0.1')).toEqual({ kind: 'pending', updatedAt: 1000 });
    const w = t.changes();
    w.read();
    now = 1500;
    expect(t.setStatus('1/10.0.0.1', 1, { kind: 'error', error: 'EPERM' })).toBe(true);
    expect(t.status('1/10.0.0.1')).toEqual({ kind: 'error', error: 'EPERM', updatedAt: 1500 });
    expect(t.revision).toBe(1);
    expect(w.read()).toEqual([]);
    expect(t.statusCounts()).toEqual({ pending: 0, done: 0, error: 1 });
    t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'x' });
    expect(t.status('1/10.0.0.1')?.kind).toBe('pending');
    // A result for revision 1 must not mark revision 2 done.
    expect(t.setStatus('1/10.0.0.1', 1, { kind: 'done' })).toBe(false);
    expect(t.status('1/10.0.0.1')?.kind).toBe('pending');
    expect(t.setStatus('1/10.0.0.1', 2, { kind: 'done', updatedAt: 7 })).toBe(true);
    expect(t.status('1/10.0.0.1')).toEqual({ kind: 'done', updatedAt: 7 });
    expect(t.statusCounts()).toEqual({ pending: 0, done: 1, error: 0 });
    t.delete('1/10.0.0.1');
    expect(t.status('1/10.0.0.1')).toBeUndefined();
    expect(t.setStatus('1/10.0.0.1', 2, { kind: 'done' })).toBe(false);
    expect(t.statusCounts()).toEqual({ pending: 0, done: 0, error: 0 });
  });

  it('isCurrent and setRowStatus act only on the current version of a row', () => {
    const t = new Table<Neigh>({ name: 't', primaryKey: keyOf, now: () => 5 });
    t.insert({ ip: '10.0.0.1', ifindex: 1 });
    t.insert({ ip: '10.0.0.2', ifindex: 1 });
    const w = t.changes();
    const [v1, other] = w.read();
    expect(t.isCurrent(v1!)).toBe(true);
    t.upsert({ ip: '10.0.0.1', ifindex: 1, mac: 'x' });
    const v2 = t.row('1/10.0.0.1')!;
    expect(t.isCurrent(v1!)).toBe(false);
    expect(t.isCurrent(v2)).toBe(true);
    // A copy (not a row the table handed out) is judged by a lookup.
    expect(t.isCurrent({ ...v2 })).toBe(false);
    expect(t.setRowStatus(v1!, { kind: 'done' })).toBe(false);
    expect(t.status('1/10.0.0.1')?.kind).toBe('pending');
    expect(t.setRowStatus(v2, { kind: 'error', error: 'EPERM', updatedAt: 9 })).toBe(true);
    expect(t.status('1/10.0.0.1')).toEqual({ kind: 'error', error: 'EPERM', updatedAt: 9 });
    expect(t.statusCounts()).toEqual({ pending: 1, done: 0, error: 1 });
    t.delete('1/10.0.0.2');
    const [tomb] = w.read().filter((c) => c.deleted);
    expect(t.isCurrent(other!)).toBe(false);
    expect(t.isCurrent(tomb!)).toBe(false);
    expect(t.setRowStatus(other!, { kind: 'done' })).toBe(false);
    expect(t.statusCounts()).toEqual({ pending: 0, done: 0, error: 1 });
  });

  it('lets one owner claim the status', () => {
    const t = neighTable();
    t.claimStatus('a');
    t.claimStatus('a');
    expect(() => t.claimStatus('b')).toThrow(ConflictError);
  });
});

describe('rows that are their own node (RowNode)', () => {
  class Own extends RowNode<Neigh> implements Neigh {
    constructor(
      readonly ip: string,
      readonly ifindex: number,
    ) {
      super(`${ifindex}/${ip}`);
    }
  }

  it('keeps an inserted RowNode as its node; a new version or a second write gets a node of its own', () => {
    const t = neighTable();
    const w = t.changes();
    const a = new Own('10.0.0.1', 1);
    t.insert(a);
    expect(t.row('1/10.0.0.1')).toBe(a);
    expect(t.get('1/10.0.0.1')).toBe(a);
    expect(t.status('1/10.0.0.1')?.kind).toBe('pending');
    const first = w.read();
    expect(fmt(first)).toEqual(['+1/10.0.0.1@1']);
    expect(first[0]).toBe(a);
    t.upsert(a); // the same object again: a node of its own; the row stays current
    expect(t.row('1/10.0.0.1')).not.toBe(a);
    expect(t.get('1/10.0.0.1')).toBe(a);
    expect(t.isCurrent(t.row('1/10.0.0.1')!)).toBe(true);
    const b = new Own('10.0.0.1', 1);
    t.upsert(b);
    expect(t.row('1/10.0.0.1')).toBe(b);
    expect(fmt(w.read())).toEqual(['+1/10.0.0.1@3']);
    t.delete('1/10.0.0.1');
    expect(t.isCurrent(b)).toBe(false);
    const gone = w.read();
    expect(fmt(gone)).toEqual(['-1/10.0.0.1@4']);
    expect(gone[0]!.object).toBe(b);
    expect(t.size).toBe(0);
  });

  it('keeps a row’s status time as a small integer: no heap number per row (a million desired rows)', () => {
    // Heap numbers in a heap snapshot of a fresh Node, with 20,000 rows marked done by the
    // reconciler's clock (Date.now(), above 2^31) and with none.
    const numbers = (n: number): number => {
      const script = [
        "import { writeHeapSnapshot } from 'node:v8';",
        "import { readFileSync, rmSync } from 'node:fs';",
        "const { RowNode, Table } = await import('./dist/statedb/index.js');",
        'class Own extends RowNode { constructor(ip) { super(ip); this.ip = ip; } }',
        "const t = new Table({ name: 't', primaryKey: (x) => x.ip });",
        `const rows = Array.from({ length: ${n} }, (_, i) => new Own('10.0.' + (i >> 8) + '.' + (i & 255)));`,
        'for (const r of rows) t.insert(r);',
        'const now = Date.now();',
        "for (const r of rows) t.setRowStatus(r, { kind: 'done', updatedAt: now });",
        "if (rows.length > 0 && t.status(rows[0].key).updatedAt !== now) throw new Error('time');",
        "const file = writeHeapSnapshot('/tmp/fk-statusat-' + process.pid + '.heapsnapshot');",
        "const s = JSON.parse(readFileSync(file, 'utf8'));",
        'rmSync(file);',
        'const nf = s.snapshot.meta.node_fields.length;',
        'const types = s.snapshot.meta.node_types[0];',
        'let k = 0;',
        "for (let i = 0; i < s.nodes.length; i += nf) if (types[s.nodes[i]] === 'number') k++;",
        'console.log(k, rows.length);',
      ].join('\n');
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
        cwd: process.cwd(),
      });
      expect(r.status, r.stderr).toBe(0);
      return Number(r.stdout.split(' ')[0]);
    };
    expect(numbers(20_000) - numbers(0)).toBeLessThan(200);
    // a time that is not a whole number of ms from now is kept as it is
    const t = neighTable();
    const odd = new Own('10.9.9.9', 1);
    t.insert(odd);
    t.setRowStatus(odd, { kind: 'error', error: 'x', updatedAt: 1.5 });
    expect(t.status(odd.key)).toEqual({ kind: 'error', error: 'x', updatedAt: 1.5 });
    // and every time comes back exactly: near now, fractional, 30 days on (past 2^31 ms)
    for (const at of [Date.now(), Date.now() + 0.25, Date.now() + 30 * 86_400_000, 0]) {
      t.setRowStatus(odd, { kind: 'done', updatedAt: at });
      expect(t.status(odd.key)?.updatedAt).toBe(at);
    }
  });
});
