// docs/status.md documents the status document (`fibkeeper status --json`, GET /v1/status)
// field by field; this checks it against the TypeScript types both ways, so neither can
// drift from the other (test/agent/e2e.netns.test.ts checks a running agent's document).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/imports.js';
import {
  documentFields,
  documentedFields,
  typeFields,
  undocumented,
} from '../helpers/status-doc.js';

describe('docs/status.md', () => {
  const documented = documentedFields();
  const typed = typeFields('src/agent/status.ts', 'StatusDocument');

  it('documents every field of the types, with their JSON types', () => {
    expect(undocumented(typed, documented)).toEqual([]);
  });

  it('documents no field or type the types do not have', () => {
    expect(undocumented(documented, typed)).toEqual([]);
  });

  it('names the schema version the agent writes', () => {
    const src = readFileSync(join(ROOT, 'src/agent/status.ts'), 'utf8');
    const version = /export const STATUS_SCHEMA_VERSION = (\d+);/.exec(src)?.[1];
    const md = readFileSync(join(ROOT, 'docs/status.md'), 'utf8');
    expect(md).toContain(`\`schemaVersion\` (now **${version}**)`);
  });

  it('the checker sees a missing, an extra and a retyped field', () => {
    const doc = new Map([
      ['a', new Set(['object'])],
      ['a.b', new Set(['string', 'absent'])],
      ['a.m', new Set(['map'])],
      ['a.m.*', new Set(['number'])],
      ['c', new Set(['number'])],
    ]);
    const real = documentFields({ a: { b: 1, m: { x: 1, y: 2 }, z: true } }, doc);
    expect(undocumented(real, doc)).toEqual(['a.b: number', 'a.z: boolean', 'c: absent']);
    expect(undocumented(documentFields({ a: { m: {} }, c: 1 }, doc), doc)).toEqual([]);
  });
});
