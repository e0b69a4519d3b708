// The status document's contract three ways: the fields docs/status.md documents, the
// fields the TypeScript types of src/agent/status.ts declare, and the fields a real
// document carries. Each is a map from a field path to its JSON types:
//   path:  `xdp.devices[].name` (`[]`: every element of an array, `*`: every key of a map)
//   types: string, number, boolean, null, object, array, map (an object whose keys are
//          data, not field names), absent (the field may be left out).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from './imports.js';

export type Fields = Map<string, Set<string>>;

const JSON_TYPES = new Set(['string', 'number', 'boolean', 'null', 'object', 'array', 'map']);

/** The field tables of docs/status.md: rows `| \`path\` | type | type … | meaning |`. */
export function documentedFields(md = readFileSync(join(ROOT, 'docs/status.md'), 'utf8')): Fields {
  const out: Fields = new Map();
  for (const line of md.split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|/.exec(line);
    if (!m) continue;
    const types = m[2]!.split(',').map((t) => t.trim());
    for (const t of types) {
      if (!JSON_TYPES.has(t) && t !== 'absent')
        throw new Error(`docs/status.md: ${m[1]}: type "${t}"`);
    }
    if (out.has(m[1]!)) throw new Error(`docs/status.md: ${m[1]} documented twice`);
    out.set(m[1]!, new Set(types));
  }
  return out;
}

/** The fields of the named type (and everything under it) as the compiler sees them. */
export function typeFields(file: string, typeName: string): Fields {
  const program = ts.createProgram([join(ROOT, file)], {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const sf = program.getSourceFile(join(ROOT, file))!;
  const decl = sf.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === typeName,
  );
  if (!decl) throw new Error(`${file}: no interface ${typeName}`);
  const out: Fields = new Map();
  const add = (path: string, t: string) => {
    if (!out.has(path)) out.set(path, new Set());
    out.get(path)!.add(t);
  };
  const walk = (type: ts.Type, path: string, depth: number): void => {
    if (depth > 12) throw new Error(`${path}: too deep`);
    const parts = type.isUnion() ? type.types : [type];
    for (const t of parts) {
      const f = t.flags;
      if (f & ts.TypeFlags.Undefined) add(path, 'absent');
      else if (f & ts.TypeFlags.Null) add(path, 'null');
      else if (f & ts.TypeFlags.StringLike) add(path, 'string');
      else if (f & ts.TypeFlags.NumberLike) add(path, 'number');
      else if (f & ts.TypeFlags.BooleanLike) add(path, 'boolean');
      else if (checker.isArrayType(t)) {
        add(path, 'array');
        walk(checker.getTypeArguments(t as ts.TypeReference)[0]!, `${path}[]`, depth + 1);
      } else if (t.aliasSymbol?.name === 'Record' || checker.getIndexInfosOfType(t).length > 0) {
        add(path, 'map');
        const value =
          t.aliasSymbol?.name === 'Record'
            ? t.aliasTypeArguments![1]!
            : checker.getIndexInfosOfType(t)[0]!.type;
        walk(value, `${path}.*`, depth + 1);
      } else if (f & ts.TypeFlags.Object) {
        add(path, 'object');
        for (const p of checker.getPropertiesOfType(t)) {
          const pt = checker.getTypeOfSymbol(p);
          const sub = path === '' ? p.name : `${path}.${p.name}`;
          if (p.flags & ts.SymbolFlags.Optional) add(sub, 'absent');
          walk(pt, sub, depth + 1);
        }
      } else throw new Error(`${path}: a type with flags ${f} has no JSON form`);
    }
  };
  walk(checker.getTypeAtLocation(decl), '', 0);
  out.delete('');
  return out;
}

/** The fields a real document carries, keys of documented maps read as `*`. */
export function documentFields(doc: unknown, documented: Fields): Fields {
  const out: Fields = new Map();
  const add = (path: string, t: string) => {
    if (!out.has(path)) out.set(path, new Set());
    out.get(path)!.add(t);
  };
  const walk = (v: unknown, path: string): void => {
    if (v === null) return add(path, 'null');
    if (Array.isArray(v)) {
      add(path, 'array');
      for (const e of v) walk(e, `${path}[]`);
      return;
    }
    if (typeof v === 'object') {
      const isMap = documented.get(path)?.has('map') === true;
      add(path, isMap ? 'map' : 'object');
      for (const [k, e] of Object.entries(v as object)) {
        walk(e, isMap ? `${path}.*` : path === '' ? k : `${path}.${k}`);
      }
      // A documented field that is never left out is here.
      if (!isMap) {
        const prefix = path === '' ? '' : `${path}.`;
        for (const [p, types] of documented) {
          if (!p.startsWith(prefix) || types.has('absent')) continue;
          const rest = p.slice(prefix.length);
          if (/[.[]/.test(rest) || rest in (v as object)) continue;
          add(p, 'absent');
        }
      }
      return;
    }
    add(path, typeof v);
  };
  walk(doc, '');
  out.delete('');
  return out;
}

/** Fields of `actual` that `documented` does not allow: "path: type", sorted. */
export function undocumented(actual: Fields, documented: Fields): string[] {
  const out: string[] = [];
  for (const [p, types] of actual) {
    const doc = documented.get(p);
    for (const t of types) if (!doc?.has(t)) out.push(`${p}: ${t}`);
  }
  return out.sort();
}
