// bin/fibkeeper.js runs only on the supported Node.js lines (engines: ^22.12 || >=24) and
// says so, with the fix, before it loads anything else.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const BIN = 'bin/fibkeeper.js';

/** Runs `fibkeeper version` on this Node, which reports `version` as its own. */
function runAs(version: string): { code: number | null; out: string; err: string } {
  const fake = `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });`;
  const r = spawnSync(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(fake)}`, BIN, 'version'],
    { encoding: 'utf8' },
  );
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('bin/fibkeeper.js on an unsupported Node.js', () => {
  it('follows engines in package.json', () => {
    const engines = (
      JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }
    ).engines.node;
    expect(engines).toBe('^22.12 || >=24');
  });

  for (const v of ['18.19.1', '20.20.2', '22.11.0', '23.11.1']) {
    it(`refuses ${v} with the reason and the fix, and loads nothing`, () => {
      const r = runAs(v);
      expect(r.code).toBe(1);
      expect(r.out).toBe('');
      expect(r.err).toContain(`Node.js v${v} (${process.execPath}) is not supported`);
      expect(r.err).toMatch(/needs Node\.js 22 \(22\.12 or later\) or 24 or later/);
      expect(r.err).toMatch(/make deps/);
    });
  }

  for (const v of ['22.12.0', '22.23.5', '24.0.0', '26.1.0']) {
    it(`runs on ${v}`, () => {
      const r = runAs(v);
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/^fibkeeper \d+\.\d+\.\d+/);
    });
  }

  it.runIf(existsSync('/usr/bin/node'))(
    "refuses the machine's own Node.js when it is too old",
    () => {
      const own = spawnSync('/usr/bin/node', ['-p', 'process.versions.node'], { encoding: 'utf8' });
      const [major, minor] = own.stdout.trim().split('.').map(Number) as [number, number];
      const supported = (major === 22 && minor >= 12) || major >= 24;
      const r = spawnSync('/usr/bin/node', [BIN, 'version'], { encoding: 'utf8' });
      expect(r.status).toBe(supported ? 0 : 1);
      if (!supported) expect(r.stderr).toContain('is not supported');
    },
  );
});
