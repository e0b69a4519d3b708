import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AGENT_NODE_FLAGS, NON_HEAP_MIB, heapLimitMiB, reexecArgs } from './node-flags.js';

describe('the agent’s V8 flags', () => {
  it('adds what is missing, keeps what the operator gave, and can be turned off', () => {
    const argv = ['/usr/bin/node', '/opt/fibkeeper/bin/fibkeeper.js', 'run', '--config', 'c.yaml'];
    expect(reexecArgs([], argv, {})).toEqual([
      ...AGENT_NODE_FLAGS,
      '/opt/fibkeeper/bin/fibkeeper.js',
      'run',
      '--config',
      'c.yaml',
    ]);
    const all = ['--max-semi-space-size=4', '--optimize_for_size', '--max-opt=3'];
    expect(reexecArgs(all, argv, {})).toBeUndefined();
    expect(
      reexecArgs(['--max_semi_space_size=4', '--optimize-for-size', '--max_opt=2'], argv, {}),
    ).toBeUndefined();
    expect(reexecArgs(['--max-semi-space-size=4'], argv, {})).toEqual([
      '--optimize-for-size',
      '--max-opt=2',
      '--max-semi-space-size=4',
      ...argv.slice(1),
    ]);
    expect(reexecArgs(['--inspect'], argv, {})).toEqual([
      ...AGENT_NODE_FLAGS,
      '--inspect',
      ...argv.slice(1),
    ]);
    expect(reexecArgs([], argv, { FIBKEEPER_NODE_FLAGS: '0' })).toBeUndefined();
  });

  it('in a memory cgroup, lets the old generation use the limit but what the rest needs', () => {
    const argv = ['/usr/bin/node', '/opt/fibkeeper/bin/fibkeeper.js', 'run'];
    const GiB = 2 ** 30;
    const memory = { limitBytes: 640 * 2 ** 20, machineBytes: 24 * GiB };
    expect(reexecArgs([], argv, {}, memory)).toEqual([
      ...AGENT_NODE_FLAGS,
      `--max-old-space-size=${640 - NON_HEAP_MIB}`,
      ...argv.slice(1),
    ]);
    // The operator's own limit wins; no cgroup limit (or one above the machine) sets none.
    const own = reexecArgs(['--max-old-space-size=300'], argv, {}, memory);
    expect(own?.filter((a) => a.startsWith('--max-old-space-size'))).toEqual([
      '--max-old-space-size=300',
    ]);
    expect(heapLimitMiB(undefined, 24 * GiB)).toBeUndefined();
    expect(heapLimitMiB(2 ** 64, 24 * GiB)).toBeUndefined();
    expect(heapLimitMiB(0, 24 * GiB)).toBeUndefined();
    expect(heapLimitMiB(100 * 2 ** 20, 24 * GiB)).toBe(128);
  });

  it('fibkeeper run gets them, in the same process (same PID)', () => {
    const script = [
      "import { reexecForAgent } from './dist/cli/node-flags.js';",
      'const before = process.env.PID_BEFORE ?? String(process.pid);',
      'process.env.PID_BEFORE = before;',
      'reexecForAgent();',
      'console.log(JSON.stringify({ before, pid: process.pid, execArgv: process.execArgv }));',
    ].join('\n');
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { before: string; pid: number; execArgv: string[] };
    expect(String(out.pid)).toBe(out.before);
    for (const f of AGENT_NODE_FLAGS) expect(out.execArgv).toContain(f);
  });

  it('the shebang gives every flag: `run` starts without a re-exec', () => {
    // A re-exec starts a new Node with SIGHUP's default action: a reload signal in that
    // window would end the agent (test/agent/signals.netns.test.ts). The command that
    // `make install` installs (and the systemd unit runs) is checked in
    // test/deploy/install.test.ts.
    const argv = ['node', 'bin/fibkeeper.js', 'run'];
    const shebang = readFileSync('bin/fibkeeper.js', 'utf8').split('\n')[0]!;
    expect(shebang).toMatch(/^#!\/usr\/bin\/env -S node /);
    expect(reexecArgs(shebang.split(' ').slice(3), argv, {})).toBeUndefined();
  });
});
