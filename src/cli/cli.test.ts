import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from './index.js';

async function run(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('cli', () => {
  it('prints help with exit 0, and usage errors with exit 2', async () => {
    expect((await run('--help')).code).toBe(0);
    expect((await run()).code).toBe(2);
    const unknown = await run('frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown command "frobnicate"/);
    const group = await run('forwardable');
    expect(group.code).toBe(2);
    expect(group.err).toMatch(/fibkeeper forwardable add IP\.\.\. --owner NAME/);
    expect((await run('forwardable', '--help')).code).toBe(0);
    const bad = await run('probe', '--bogus');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/Unknown option '--bogus'/);
    expect(bad.err).toMatch(/Usage: fibkeeper probe/);
    const noOwner = await run('forwardable', 'add', '10.0.0.1', '--socket', '/nonexistent.sock');
    expect(noOwner.code).toBe(2);
    expect(noOwner.err).toMatch(/--owner NAME is required/);
    for (const cmd of ['run', 'status', 'extip', 'xdp', 'lab', 'demo', 'config', 'version']) {
      const h = await run(...cmd.split(' '), '--help');
      expect(h.code, cmd).toBe(0);
      expect(h.out, cmd).toMatch(/Usage: fibkeeper/);
    }
  });

  it('reports the version', async () => {
    const v = await run('version');
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(v.code).toBe(0);
    expect(v.out).toBe(`fibkeeper ${version} (node ${process.version})\n`);
  });

  it('checks config files: exit 1 with the option named, 0 with the result', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fk-cli-'));
    try {
      writeFileSync(join(dir, 'bad.yaml'), 'xdp:\n  mode: warp\n');
      const bad = await run('config', 'check', join(dir, 'bad.yaml'));
      expect(bad.code).toBe(1);
      expect(bad.err).toMatch(/xdp\.mode: must be one of auto, native, generic/);
      writeFileSync(join(dir, 'ok.yaml'), 'api:\n  socketMode: "0600"\n');
      const ok = await run('config', 'check', join(dir, 'ok.yaml'));
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.out).api.socketMode).toBe('0600');
      expect((await run('config', 'check')).code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('tells the user when no agent answers', async () => {
    const r = await run('status', '--socket', '/nonexistent/fibkeeper.sock');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/cannot reach the agent at \/nonexistent\/fibkeeper\.sock/);
  });
});
