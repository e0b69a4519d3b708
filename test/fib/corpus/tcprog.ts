// The tc programs of the policy corpus, built once per test file (first called in beforeAll,
// so that they last as long as the file): a program that drops every packet
// (test/fib/fixtures/tc_drop.c) and the tool that attaches it to a tcx hook (fixtures/tcx.c;
// no tool of this system can).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupLater } from '../../helpers/cleanup.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
let dir: string | undefined;

function workDir(): string {
  if (dir === undefined) {
    const d = mkdtempSync(join(tmpdir(), 'fkt-tc-'));
    cleanupLater(() => rmSync(d, { recursive: true, force: true }));
    dir = d;
  }
  return dir;
}

let drop: string | undefined;
/** The object of the dropping program (clang -target bpf). */
export function tcDropObject(): string {
  if (drop === undefined) {
    const out = join(workDir(), 'tc_drop.o');
    const arch = execFileSync('uname', ['-m'], { encoding: 'utf8' }).trim();
    execFileSync('clang', [
      ...['-O2', '-g', '-target', 'bpf', `-I/usr/include/${arch}-linux-gnu`],
      ...['-c', join(FIXTURES, 'tc_drop.c'), '-o', out],
    ]);
    drop = out;
  }
  return drop;
}

let tcx: string | undefined;
/** The tcx tool (cc ... -lbpf). */
export function tcxTool(): string {
  if (tcx === undefined) {
    const out = join(workDir(), 'tcx');
    execFileSync('cc', ['-O2', '-Wall', '-o', out, join(FIXTURES, 'tcx.c'), '-lbpf']);
    tcx = out;
  }
  return tcx;
}
