// The import graph of src/: every relative import, export-from and dynamic import of every
// TypeScript file (type-only ones too: a type import is a dependency of the design even
// when the compiler erases it), resolved to the file it names.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export const ROOT = resolve(import.meta.dirname, '../..');

/** Every .ts file under dir (relative to the repository), tests included unless told. */
export function sourceFiles(dir: string, opts: { tests?: boolean } = {}): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(join(ROOT, d), { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && (opts.tests !== false || !e.name.endsWith('.test.ts')))
        out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

/** The relative module specifiers a file imports, resolved to repository paths (.ts). */
export function importsOf(file: string, text = readFileSync(join(ROOT, file), 'utf8')): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false);
  const specs: string[] = [];
  const visit = (n: ts.Node): void => {
    if (
      (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) &&
      n.moduleSpecifier &&
      ts.isStringLiteral(n.moduleSpecifier)
    ) {
      specs.push(n.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments[0] &&
      ts.isStringLiteral(n.arguments[0])
    ) {
      specs.push(n.arguments[0].text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return specs
    .filter((s) => s.startsWith('.'))
    .map((s) => relative(ROOT, join(ROOT, dirname(file), s)).replace(/\.js$/, '.ts'));
}

/** The graph file → files it imports, over the given files only. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(files.map((f) => [f, importsOf(f).filter((t) => known.has(t))]));
}

/**
 * Every import cycle, as the files of each group that import one another in a circle
 * (`files`, sorted) and one shortest circle through them (`cycle`, the first file repeated
 * at the end).
 */
export function importCycles(
  graph: ReadonlyMap<string, readonly string[]>,
): { files: string[]; cycle: string[] }[] {
  // Tarjan's strongly connected components; a component of two or more files (or a file
  // importing itself) holds a cycle, reported as one shortest path around it.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const comps: string[][] = [];
  const strong = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) comps.push(comp);
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return comps.map((comp) => ({ files: [...comp].sort(), cycle: shortestCycle(graph, comp) }));
}

function shortestCycle(graph: ReadonlyMap<string, readonly string[]>, comp: string[]): string[] {
  const inComp = new Set(comp);
  const start = [...comp].sort()[0]!;
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!inComp.has(w)) continue;
      if (w === start) {
        const path = [v];
        for (let p = v; p !== start;) path.unshift((p = prev.get(p)!));
        return [...path, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}
