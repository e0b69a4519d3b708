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

function addValues(
  entries: Map<string, Slot>,
  values: string | readonly string[],
  key: string,
): void {
  if (typeof values === 'string') addValue(entries, values, key);
  else for (const v of values) addValue(entries, v, key);
}

function removeValues(
  entries: Map<string, Slot>,
  values: string | readonly string[],
  key: string,
): void {
  if (typeof values === 'string') removeValue(entries, values, key);
  else for (const v of values) removeValue(entries, v, key);
}

const NONE: readonly string[] = [];

export class SecondaryIndexes<Obj> {
  readonly #byName = new Map<string, Index<Obj>>();
  readonly #all: Index<Obj>[] = [];

  constructor(defs: Readonly<Record<string, IndexFn<Obj>>>) {
    for (const [name, fn] of Object.entries(defs)) {
      const index = { fn, entries: new Map<string, Slot>() };
      this.#byName.set(name, index);
      this.#all.push(index);
    }
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  add(key: string, obj: Obj): void {
    for (const { fn, entries } of this.#all) addValues(entries, fn(obj), key);
  }

  remove(key: string, obj: Obj): void {
    for (const { fn, entries } of this.#all) removeValues(entries, fn(obj), key);
  }

  replace(key: string, oldObj: Obj, newObj: Obj): void {
    for (const { fn, entries } of this.#all) {
      const before = fn(oldObj);
      const after = fn(newObj);
      if (typeof before === 'string' && before === after) continue;
      removeValues(entries, before, key);
      addValues(entries, after, key);
    }
  }

  /**
   * Primary keys of the rows indexed under `value`; the index must exist. The result is live:
   * consume it before the next write.
   */
  lookup(name: string, value: string): Iterable<string> {
    const slot = this.#byName.get(name)?.entries.get(value);
    if (slot === undefined) return NONE;
    return typeof slot === 'string' ? [slot] : slot;
  }
}
