// A vitest reporter that keeps each test file's wall time: from the moment a worker starts
// the file (onTestModuleStart) to its end (onTestModuleEnd), measured in the main process,
// so it includes the file's imports, hooks and waits, and whatever a busy machine adds.
// With FIBKEEPER_TEST_TIMINGS=PATH (make test sets it) it writes every file's figures to
// PATH as JSON and prints the slowest 20 at the end of the run, so CI logs show where the
// suite's time goes; without it, it does nothing.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export interface FileTiming {
  file: string;
  project: string;
  /** When the file started, from the first file's start (ms): the groups show as spans. */
  startMs: number;
  /** Start to end of the file, as the main process saw it (ms). */
  wallMs: number;
  /** Tests and hooks (vitest's own sum, ms). */
  testsMs: number;
  /** Importing the file and collecting its tests (ms). */
  collectMs: number;
  tests: number;
  state: string;
}

export interface TimingsDocument {
  /** Node.js that ran the suite (CI runs it on two LTS lines). */
  node: string;
  /** First file start to last file end (ms). */
  wallMs: number;
  files: FileTiming[];
}

const SHOWN = 20;

export function formatSlowest(doc: TimingsDocument, n = SHOWN): string {
  const rows = [...doc.files].sort((a, b) => b.wallMs - a.wallMs).slice(0, n);
  const width = Math.max(...rows.map((r) => r.file.length), 4);
  const lines = rows.map(
    (r) =>
      `  ${(r.wallMs / 1000).toFixed(1).padStart(6)} s  ${r.file.padEnd(width)}  ${r.project} (${r.tests} tests)`,
  );
  return [
    `slowest ${rows.length} of ${doc.files.length} test files (wall time; node ${doc.node}; suite ${(doc.wallMs / 1000).toFixed(0)} s):`,
    ...lines,
  ].join('\n');
}

export default class TimingsReporter implements Reporter {
  private readonly out = process.env.FIBKEEPER_TEST_TIMINGS;
  private readonly started = new Map<string, number>();
  private readonly ended = new Map<string, number>();

  onTestModuleStart(m: TestModule): void {
    this.started.set(m.moduleId, Date.now());
  }

  onTestModuleEnd(m: TestModule): void {
    this.ended.set(m.moduleId, Date.now());
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    if (!this.out) return;
    const first = Math.min(...this.started.values());
    const files: FileTiming[] = modules.map((m) => {
      const d = m.diagnostic();
      const start = this.started.get(m.moduleId);
      const end = this.ended.get(m.moduleId);
      return {
        file: relative(process.cwd(), m.moduleId),
        project: m.project.name,
        startMs: start !== undefined ? start - first : 0,
        wallMs: start !== undefined && end !== undefined ? end - start : d.duration,
        testsMs: Math.round(d.duration),
        collectMs: Math.round(d.collectDuration),
        tests: [...m.children.allTests()].length,
        state: m.state(),
      };
    });
    const starts = [...this.started.values()];
    const ends = [...this.ended.values()];
    const doc: TimingsDocument = {
      node: process.versions.node,
      wallMs: starts.length && ends.length ? Math.max(...ends) - Math.min(...starts) : 0,
      files: files.sort((a, b) => b.wallMs - a.wallMs),
    };
    mkdirSync(dirname(this.out), { recursive: true });
    writeFileSync(this.out, JSON.stringify(doc, null, 2) + '\n');
    process.stdout.write(`\n${formatSlowest(doc)}\n(every file: ${this.out})\n`);
  }
}
