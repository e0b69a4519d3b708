// The first day's mistakes, through the CLI's main(): each message says it once and names
// the fix, usage errors exit 2, and the socket can come from FIBKEEPER_SOCKET.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors/index.js';
import { main } from '../../src/cli/index.js';

async function run(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

const dir = mkdtempSync(join(tmpdir(), 'fk-firstday-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('first-day CLI habits', () => {
  it('says what ENOENT means once, not once per cause', async () => {
    const r = await run('config', 'check', join(dir, 'absent.yaml'));
    expect(r.code).toBe(1);
    expect(r.err.match(/ENOENT/g)).toHaveLength(1);
    const noAgent = await run('extip', 'list', '--socket', join(dir, 'none.sock'));
    expect(noAgent.code).toBe(1);
    expect(noAgent.err).toBe(
      `fibkeeper extip list: cannot reach the agent at ${join(dir, 'none.sock')} (ENOENT): is \`fibkeeper run\` running? (--socket, --config or FIBKEEPER_SOCKET name its socket)\n`,
    );
    const inner = new Error('ENOENT: no such file');
    expect(describeError(new Error(`cannot read x: ${inner.message}`, { cause: inner }))).toBe(
      'cannot read x: ENOENT: no such file',
    );
  });

  it('a malformed IP is a usage error (exit 2) before any agent is asked', async () => {
    const sock = ['--socket', join(dir, 'none.sock')];
    for (const [bad, ...argv] of [
      ['203.0.113.300', 'extip', 'add', '203.0.113.300'],
      ['nope', 'extip', 'del', 'nope'],
      ['10.0.0.x', 'forwardable', 'add', '10.0.0.1', '10.0.0.x', '--owner', 'o'],
      ['::g', 'forwardable', 'set', '--owner', 'o', '::g'],
      ['10.1.2', 'cluster', 'extip', 'add', '10.1.2'],
      ['10.0.0.256', 'status', '10.0.0.256'],
    ]) {
      const r = await run(...argv, ...sock);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err, argv.join(' ')).toMatch(
        new RegExp(`^fibkeeper ${argv[0]}[a-z ]*: "${bad}" .*\\n\\nUsage: fibkeeper ${argv[0]}`),
      );
    }
  });

  it('takes the socket from FIBKEEPER_SOCKET; --socket wins over it', async () => {
    const envSock = join(dir, 'from-env.sock');
    process.env.FIBKEEPER_SOCKET = envSock;
    try {
      const r = await run('extip', 'list');
      expect(r.code).toBe(1);
      expect(r.err).toContain(`cannot reach the agent at ${envSock}`);
      const flagged = await run('extip', 'list', '--socket', join(dir, 'flag.sock'));
      expect(flagged.err).toContain(`cannot reach the agent at ${join(dir, 'flag.sock')}`);
    } finally {
      delete process.env.FIBKEEPER_SOCKET;
    }
  });

  it('config check reports every error at once, and reads - from standard input', () => {
    const bad = ['xdp:', '  mode: bogus', 'neighbor:', '  retryMin: -5', 'colour: blue', ''].join(
      '\n',
    );
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, bad);
    const bin = resolve('bin/fibkeeper.js');
    for (const [args, input] of [
      [[file], undefined],
      [['-'], bad],
    ] as const) {
      const r = spawnSync('node', [bin, 'config', 'check', ...args], {
        encoding: 'utf8',
        ...(input !== undefined ? { input } : {}),
      });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/xdp\.mode: must be one of auto, native, generic/);
      expect(r.stderr).toMatch(/neighbor\.retryMin: /);
      expect(r.stderr).toMatch(/colour: unknown option/);
      expect(r.stderr).toMatch(/3 errors/);
    }
    const good = spawnSync('node', [bin, 'config', 'check', '-'], {
      encoding: 'utf8',
      input: 'devices: ["eth0"]\n',
    });
    expect(good.status, good.stderr).toBe(0);
    expect(JSON.parse(good.stdout)).toMatchObject({ devices: ['eth0'] });
  });
});
