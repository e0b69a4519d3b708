// Privileged tests of runInNetns and the bpffs helpers.
import { mkdtempSync, readlinkSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isBpffs, mountBpffs, runInNetns, unmount } from '../../src/native/index.js';
import { makeNetns, privileged } from '../helpers/netns.js';

const { skip } = privileged();

/** The inode of the calling thread's network namespace. */
function currentNetnsInode(): number {
  const link = readlinkSync('/proc/thread-self/ns/net'); // "net:[4026531840]"
  return Number(/\[(\d+)\]/.exec(link)?.[1]);
}

describe.skipIf(skip)('runInNetns', () => {
  it('runs fn inside the namespace and comes back, also when fn throws', () => {
    const ns = makeNetns('run');
    const home = currentNetnsInode();
    const target = statSync(`/run/netns/${ns}`).ino;
    expect(target).not.toBe(home);
    expect(runInNetns(ns, () => currentNetnsInode())).toBe(target);
    expect(currentNetnsInode()).toBe(home);
    // by absolute path
    expect(runInNetns(`/run/netns/${ns}`, () => currentNetnsInode())).toBe(target);
    expect(() =>
      runInNetns(ns, () => {
        throw new Error('inside');
      }),
    ).toThrow('inside');
    expect(currentNetnsInode()).toBe(home);
  });

  it('rejects a missing namespace, a bad name and an async fn', () => {
    expect(() => runInNetns('fkt-missing-ns', () => 1)).toThrow(
      expect.objectContaining({ code: 'ENOENT', syscall: 'open' }),
    );
    expect(() => runInNetns('a/b', () => 1)).toThrow(/netns/);
    const ns = makeNetns('runasync');
    expect(() => runInNetns(ns, async () => 1)).toThrow(/synchronous/);
    // a file that is not a namespace
    expect(() => runInNetns('/proc/self/status', () => 1)).toThrow(
      expect.objectContaining({ code: 'EINVAL', syscall: 'setns' }),
    );
  });
});

describe.skipIf(skip)('bpffs', () => {
  it('mounts, recognises and unmounts a bpffs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fkt-bpffs-'));
    try {
      expect(isBpffs(dir)).toBe(false);
      mountBpffs(dir, 0o700);
      try {
        expect(isBpffs(dir)).toBe(true);
        expect(statSync(dir).mode & 0o777).toBe(0o700); // the kernel adds the sticky bit
      } finally {
        unmount(dir);
      }
      expect(isBpffs(dir)).toBe(false);
      expect(() => unmount(dir)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    } finally {
      rmdirSync(dir);
    }
  });
});
