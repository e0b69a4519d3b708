// `fibkeeper completion bash` run by bash itself: `complete -p` names the function, and
// compgen offers exactly the commands, subcommands and options of the command table.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';

const BIN = resolve('bin/fibkeeper.js');

/** What bash completes for the command line `words` (the last one being typed). */
function complete(...words: string[]): string[] {
  const line = ['fibkeeper', ...words].map((w) => `'${w}'`).join(' ');
  const script = `source <(node ${BIN} completion bash)
complete -p fibkeeper
COMP_WORDS=(${line}); COMP_CWORD=${words.length}
_fibkeeper
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['-c', script], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const [spec, ...out] = r.stdout.split('\n').filter(Boolean);
  expect(spec).toBe('complete -F _fibkeeper fibkeeper');
  return out.sort();
}

describe('fibkeeper completion', () => {
  it('bash: the top-level commands, the subcommands of a group, the options of a command', () => {
    const top = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]!))];
    expect(complete('')).toEqual([...top, '--help', '--version'].sort());
    expect(complete('forw')).toEqual(['forwardable']);
    expect(complete('forwardable', '')).toEqual(['add', 'del', 'list', 'set']);
    expect(complete('cluster', 'extip', '')).toEqual(['add', 'del', 'list']);
    expect(complete('events', '--')).toEqual(
      ['--config', '--follow', '--help', '--output', '--since', '--socket', '--type'].sort(),
    );
    // after IPs, still the command's options
    expect(complete('extip', 'add', '192.0.2.1', '--s')).toEqual(['--socket']);
    expect(complete('status', '-o', '')).toEqual(['json', 'text', 'yaml']);
    expect(complete('completion', '')).toEqual(['--help', 'bash', 'zsh']);
  });

  it('zsh: the same script behind bashcompinit; a shell it does not know is a usage error', () => {
    const zsh = spawnSync('node', [BIN, 'completion', 'zsh'], { encoding: 'utf8' });
    expect(zsh.status).toBe(0);
    expect(zsh.stdout).toMatch(
      /^# zsh completion .*\nautoload -U \+X bashcompinit && bashcompinit\n/,
    );
    const bad = spawnSync('node', [BIN, 'completion', 'tcsh'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/give the shell: bash or zsh/);
  });
});
