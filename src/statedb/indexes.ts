// Secondary indexes of a table: index value → primary key(s). A value held by one row (the
// common case: ifindex+IP, say) costs a string slot; only values shared by several rows get
// a Set. Index functions must be pure: the old object's values are recomputed on removal.

/** Index values of an object: one value or several (a row may appear under many). */
export type IndexFn<Obj> = (obj: Obj) => string | readonly string[];

type Slot = string | Set<string>;

interface Index<Obj> {
  readonly fn: IndexFn<Obj>;
  readonly entries: Map<string, Slot>;
}

function addValue(entries: Map<string, Slot>, value: string, key: string): void {
  const slot = entries.get(value);
  if (slot === undefined) entries.set(value, key);
  else if (typeof slot === 'string') {
    if (slot !== key) entries.set(value, new Set([slot, key]));
  } else slot.add(key);
}

function removeValue(entries: Map<string, Slot>, value: string, key: string): void {
  const slot = entries.get(value);
  if (slot === undefined) return;
  if (typeof slot === 'string') {
    if (slot === key) entries.delete(value);
    return;
  }
  slot.delete(key);
  if (slot.size === 1) entries.set(value, slot.values().next().value as string);
  else if (slot.size === 0) entries.delete(value);
}

function forEachValue(values: string | readonly string[], f: (v: string) => void): void {
  if (typeof values === 'string') f(values);
  else for (const v of values) f(v);
}

export class SecondaryIndexes<Obj> {
  private readonly indexes = new Map<string, Index<Obj>>();

  constructor(defs: Readonly<Record<string, IndexFn<Obj>>>) {
    for (const [name, fn] of Object.entries(defs))
      this.indexes.set(name, { fn, entries: new Map() });
  }

  has(name: string): boolean {
    return this.indexes.has(name);
  }

  add(key: string, obj: Obj): void {
    for (const { fn, entries } of this.indexes.values()) {
      forEachValue(fn(obj), (v) => addValue(entries, v, key));
    }
  }

  remove(key: string, obj: Obj): void {
    for (const { fn, entries } of this.indexes.values()) {
      forEachValue(fn(obj), (v) => removeValue(entries, v, key));
    }
  }

  replace(key: string, oldObj: Obj, newObj: Obj): void {
    for (const { fn, entries } of this.indexes.values()) {
      const before = fn(oldObj);
      const after = fn(newObj);
      if (typeof before === 'string' && before === after) continue;
      forEachValue(before, (v) => removeValue(entries, v, key));
      forEachValue(after, (v) => addValue(entries, v, key));
    }
  }

  /** Primary keys of the rows indexed under `value`; the index must exist. */
  lookup(name: string, value: string): readonly string[] {
    const slot = this.indexes.get(name)?.entries.get(value);
    if (slot === undefined) return [];
    if (typeof slot === 'string') return [slot];
    return [...slot];
  }
}
