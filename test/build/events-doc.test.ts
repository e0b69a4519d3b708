// docs/events.md lists every event type the agent emits, and no other.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/events/index.js';
import { ROOT } from '../helpers/imports.js';

it('docs/events.md documents every event type, and only those', () => {
  const md = readFileSync(join(ROOT, 'docs/events.md'), 'utf8');
  const documented = [...md.matchAll(/^\| `([a-z]+\.[a-z]+)` \|/gm)].map((m) => m[1]);
  expect(documented.sort()).toEqual([...EVENT_TYPES].sort());
});
