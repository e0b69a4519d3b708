// Cleanup for test resources that are not namespaces (those are in netns.ts): run when the
// current test ends (pass or fail), or at the end of the file for things made outside a
// test. Callbacks run last-registered first (vitest runs onTestFinished as a stack; the
// file-end list is run reversed), so a process started in a lab is ended before the lab goes.
// test/native and test/deploy use these; nothing keeps its own list.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';
import { mountBpffs, unmount } from '../../src/native/index.js';

const pending: (() => unknown)[] = [];
afterAll(async () => {
  for (const fn of pending.splice(0).reverse()) await fn();
});

/** Runs `fn` when the current test ends, or at the end of the file outside a test. */
export function cleanupLater(fn: () => unknown): void {
  try {
    onTestFinished(async () => {
      await fn();
    });
  } catch {
    pending.push(fn);
  }
}

/** Closes `x` (a BPF object, map, program, link, socket…) when the test or file ends. */
export function track<T extends { close(): void }>(x: T): T {
  cleanupLater(() => x.close());
  return x;
}

/** SIGKILLs `child` (if it still runs) when the test or file ends, and waits for its exit. */
export function trackChild<T extends ChildProcess>(child: T): T {
  cleanupLater(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  });
  return child;
}

/** A fresh temp dir (`prefix` + random), removed when the test or file ends. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanupLater(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Mounts a bpffs on a fresh temp dir; unmounted and removed when the test (or file) ends. */
export function privateBpffs(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-bpffs-'));
  try {
    mountBpffs(dir);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  cleanupLater(() => {
    try {
      unmount(dir, { lazy: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  return dir;
}
