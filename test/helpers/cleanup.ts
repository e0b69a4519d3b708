// Cleanup for test resources that are not namespaces (those are in netns.ts): run when the
// current test ends, or at the end of the file for things made outside a test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';
import { mountBpffs, unmount } from '../../src/native/index.js';

const pending: (() => void)[] = [];
afterAll(() => {
  for (const fn of pending.splice(0).reverse()) fn();
});

/** Runs `fn` when the current test ends, or at the end of the file outside a test. */
export function cleanupLater(fn: () => void): void {
  try {
    onTestFinished(fn);
  } catch {
    pending.push(fn);
  }
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
