// The native addon's build asks pkg-config for libbpf first (make libbpf-version, before
// node-gyp): an older libbpf, or none, stops the build with the version found and the fix.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'fkt-pc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function make(env: Record<string, string>) {
  return spawnSync('make', ['--no-print-directory', '-C', ROOT, 'libbpf-version'], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
}

describe('make libbpf-version', () => {
  it('passes with the system libbpf (libbpf-dev from make apt)', () => {
    const r = make({});
    expect(r.status, r.stderr).toBe(0);
  });

  it('stops on a libbpf older than 1.1 and names the version found and the fix', () => {
    // pkg-config reads PKG_CONFIG_PATH before the system's directories.
    writeFileSync(
      join(dir, 'libbpf.pc'),
      'Name: libbpf\nDescription: an old one\nVersion: 0.8.0\nLibs: -lbpf\n',
    );
    const r = make({ PKG_CONFIG_PATH: dir });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(
      'the native addon needs libbpf 1.1 or later; pkg-config finds 0.8.0: install libbpf-dev 1.1+',
    );
  });

  it('stops when pkg-config finds no libbpf at all', () => {
    const r = make({ PKG_CONFIG_LIBDIR: join(dir, 'none'), PKG_CONFIG_PATH: '' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('pkg-config finds none');
  });
});
