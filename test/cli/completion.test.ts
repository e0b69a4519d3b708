// `fibkeeper completion bash` run by bash itself: `complete -p` names the function, and
// compgen offers exactly the commands, subcommands and options of the command table; the
// fish script run by fish (`complete -C`, what fish offers for a command line), the same.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';

const BIN = resolve('bin/fibkeeper.js');

/** fish runs in a directory with one file: offered only where a path is wanted. */
const FISH_DIR = mkdtempSync(join(tmpdir(), 'fkt-fish-'));
writeFileSync(join(FISH_DIR, 'c.yaml'), '');
const SCRIPT_DIR = mkdtempSync(join(tmpdir(), 'fkt-completion-'));

/**
 * `fibkeeper completion SHELL` as printed, run once per shell and kept in a file that each
 * completion below sources (the script is static: what `| source` would read every time).
 */
const scripts = new Map<string, string>();
function script(shell: 'bash' | 'fish'): string {
  let path = scripts.get(shell);
  if (path === undefined) {
    const r = spawnSync(process.execPath, [BIN, 'completion', shell], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    path = join(SCRIPT_DIR, shell);
    writeFileSync(path, r.stdout);
    scripts.set(shell, path);
  }
  return path;
}

/** What bash completes for the command line `words` (the last one being typed). */
function complete(...words: string[]): string[] {
  const line = ['fibkeeper', ...words].map((w) => `'${w}'`).join(' ');
  const sh = `source ${script('bash')}
complete -p fibkeeper
COMP_WORDS=(${line}); COMP_CWORD=${words.length}
_fibkeeper
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['-c', sh], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const [spec, ...out] = r.stdout.split('\n').filter(Boolean);
  expect(spec).toBe('complete -F _fibkeeper fibkeeper');
  return out.sort();
}

/** What fish offers for the command line `line` (candidates without their descriptions). */
function fishComplete(line: string): string[] {
  const r = spawnSync('fish', ['-c', `source ${script('fish')}; complete -C '${line}'`], {
    encoding: 'utf8',
    cwd: FISH_DIR,
  });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stderr).toBe('');
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t')[0]!)
    .sort();
}

describe('fibkeeper completion', () => {
  afterAll(() => {
    for (const d of [FISH_DIR, SCRIPT_DIR]) rmSync(d, { recursive: true, force: true });
  });

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
    expect(complete('completion', '')).toEqual(['--help', 'bash', 'fish', 'zsh']);
  });

  it('fish: the same commands, subcommands and options, by fish itself', () => {
    const top = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]!))];
    expect(fishComplete('fibkeeper ')).toEqual([...top].sort());
    expect(fishComplete('fibkeeper -')).toEqual(['--help', '--version']);
    expect(fishComplete('fibkeeper forw')).toEqual(['forwardable']);
    expect(fishComplete('fibkeeper forwardable ')).toEqual(['add', 'del', 'list', 'set']);
    expect(fishComplete('fibkeeper cluster extip ')).toEqual(['add', 'del', 'list']);
    expect(fishComplete('fibkeeper events --')).toEqual(
      ['--config', '--follow', '--help', '--output', '--since', '--socket', '--type'].sort(),
    );
    expect(fishComplete('fibkeeper extip add 192.0.2.1 --s')).toEqual(['--socket']);
    expect(fishComplete('fibkeeper status -o ')).toEqual(['json', 'text', 'yaml']);
    expect(fishComplete('fibkeeper completion ')).toEqual(['bash', 'fish', 'zsh']);
    // a path after --config: the directory's file (and nowhere else)
    expect(fishComplete('fibkeeper run --config ')).toEqual(['c.yaml']);
  });

  it('zsh: the same script behind bashcompinit; a shell it does not know is a usage error', () => {
    const zsh = spawnSync('node', [BIN, 'completion', 'zsh'], { encoding: 'utf8' });
    expect(zsh.status).toBe(0);
    expect(zsh.stdout).toMatch(
      /^# zsh completion .*\nautoload -U \+X bashcompinit && bashcompinit\n/,
    );
    const bad = spawnSync('node', [BIN, 'completion', 'tcsh'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/give the shell: bash, zsh or fish/);
  });
});
