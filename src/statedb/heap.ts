// A binary min-heap ordered by a comparator.

export class MinHeap<T> {
  private readonly items: T[] = [];

  /** `less(a, b)`: a comes out before b. */
  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const a = this.items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const up = a[parent] as T;
      if (!this.less(item, up)) break;
      a[i] = up;
      i = parent;
    }
    a[i] = item;
  }

  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      let c = l;
      if (r < a.length && this.less(a[r] as T, a[l] as T)) c = r;
      const child = a[c] as T;
      if (!this.less(child, last)) break;
      a[i] = child;
      i = c;
    }
    a[i] = last;
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }
}
