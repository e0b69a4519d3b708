// Test fixtures for the addon's BPF tests: BPF programs compiled from fixtures/*.c into a
// temp dir, and a private bpffs mounted in a temp dir. Both are removed when the test that
// made them ends (or the file, when made outside a test).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupLater, privateBpffs } from '../helpers/cleanup.js';

export { privateBpffs };

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const ARCH_INCLUDE = `/usr/include/${execFileSync('uname', ['-m']).toString().trim()}-linux-gnu`;

/** Compiles fixtures/<name>.c (clang -target bpf, the Makefile's flags) and returns the .o path. */
export function compileBpf(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-bpf-'));
  cleanupLater(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, `${name}.o`);
  execFileSync('clang', [
    '-O2',
    '-g',
    '-Wall',
    '-Werror',
    '-target',
    'bpf',
    '-D__TARGET_ARCH_x86',
    `-I${ARCH_INCLUDE}`,
    '-c',
    join(FIXTURES, `${name}.c`),
    '-o',
    out,
  ]);
  return out;
}
