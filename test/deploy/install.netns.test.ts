// `make install DESTDIR=…` staged, then run where it will live: the staged /usr/local
// mounted on /usr/local in a private mount namespace (root), with the PATH of a fresh root
// shell, whose `node` is the machine's own (Node 20 here, which bin/fibkeeper.js refuses).
// The installed command must run on the Node.js `make install` chose, by its own paths.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { privileged } from '../helpers/netns.js';
import { makeInstall } from './install.js';

const { skip } = privileged();
const dir = mkdtempSync(join(tmpdir(), 'fkt-destdir-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `cmd` by sh with the staged /usr/local mounted on /usr/local (only for this process). */
function onStaged(cmd: string) {
  const usrLocal = join(dir, 'usr', 'local');
  return spawnSync(
    'unshare',
    [
      ...['--mount', '--propagation', 'private', 'sh', '-c'],
      `mount --bind ${usrLocal} /usr/local && ${cmd}`,
    ],
    { encoding: 'utf8', env: { PATH: '/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: dir } },
  );
}

describe.skipIf(skip)('make install DESTDIR=…, mounted where it belongs', () => {
  it('runs fibkeeper version and config example although the PATH’s node is too old', () => {
    makeInstall({ DESTDIR: dir });
    const node = onStaged('node --version; command -v fibkeeper');
    console.log(`node and fibkeeper on the PATH: ${node.stdout.trim().replace(/\n/g, ', ')}`);
    expect(node.stdout).toContain('/usr/local/bin/fibkeeper');
    const version = onStaged('fibkeeper version');
    expect(version.stderr).toBe('');
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^fibkeeper \d+\.\d+\.\d+ \(node v(2[4-9]|22)\./);
    const example = onStaged('fibkeeper config example');
    expect(example.status, example.stderr).toBe(0);
    const source = spawnSync(process.execPath, ['bin/fibkeeper.js', 'config', 'example'], {
      encoding: 'utf8',
    });
    expect(parseYaml(example.stdout)).toEqual(parseYaml(source.stdout));
    // And man finds the pages there by name, as `man fibkeeper` would.
    const man = onStaged('man -w fibkeeper; man -w fibkeeper.yaml');
    expect(man.stdout.split('\n').filter(Boolean)).toEqual([
      '/usr/local/share/man/man1/fibkeeper.1',
      '/usr/local/share/man/man5/fibkeeper.yaml.5',
    ]);
  }, 60_000);
});
