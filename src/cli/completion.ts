// `fibkeeper completion bash|zsh|fish`: a shell completion script made from the command
// table, so it can never name a command or option that does not exist: commands and
// subcommands, each command's options, the formats after -o, files after the options that
// take a path. zsh runs the bash script through its bashcompinit; fish gets its own
// `complete` lines, each command's keyed on the words typed before the first option.
import type { Command } from './command.js';
import { EXIT_OK, UsageError } from './command.js';

/** Options whose value is a path: the shell completes file names after them. */
const PATH_OPTIONS = ['--config', '--file', '--socket', '--pin-dir'];

const quote = (words: readonly string[]) => words.join(' ');

const SHELLS = ['bash', 'zsh', 'fish'];

/** The bash script for `commands`. */
export function bashCompletion(commands: readonly Command[]): string {
  const cases: string[] = [];
  // Longer names first: "forwardable add ..." before a group or a one-word command.
  const byLength = [...commands].sort(
    (a, b) => b.name.split(' ').length - a.name.split(' ').length,
  );
  for (const c of byLength) {
    const opts = Object.entries(c.options).flatMap(([name, o]) => [
      `--${name}`,
      ...(o.short ? [`-${o.short}`] : []),
    ]);
    const positional = c.name === 'completion' ? SHELLS : [];
    cases.push(
      `    "${c.name}"|"${c.name} "*) words="${quote([...positional, ...opts, '--help'])}" ;;`,
    );
  }
  const groups = new Map<string, Set<string>>();
  for (const c of commands) {
    const w = c.name.split(' ');
    for (let i = 1; i < w.length; i++) {
      const g = w.slice(0, i).join(' ');
      (groups.get(g) ?? groups.set(g, new Set()).get(g)!).add(w[i]!);
    }
  }
  for (const [g, subs] of groups) cases.push(`    "${g}") words="${quote([...subs])}" ;;`);
  const top = [...new Set(commands.map((c) => c.name.split(' ')[0]!))];
  cases.push(`    "") words="${quote([...top, '--help', '--version'])}" ;;`);
  return `# bash completion for fibkeeper (fibkeeper completion bash)
_fibkeeper() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
    ${PATH_OPTIONS.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -o|--output) COMPREPLY=($(compgen -W "text json yaml" -- "$cur")); return ;;
  esac
  local i typed=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ "\${COMP_WORDS[i]}" == -* ]] && break
    typed="\${typed:+$typed }\${COMP_WORDS[i]}"
  done
  local words=""
  case "$typed" in
${cases.join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _fibkeeper fibkeeper
`;
}

/** The fish script for `commands`. */
export function fishCompletion(commands: readonly Command[]): string {
  // Names and words of the command table: plain words, no quote or backslash in them.
  const q = (t: string) => `'${t}'`;
  const lines: string[] = [];
  const groups = new Map<string, Set<string>>();
  for (const c of commands) {
    const w = c.name.split(' ');
    for (let i = 0; i < w.length; i++) {
      const g = w.slice(0, i).join(' ');
      (groups.get(g) ?? groups.set(g, new Set()).get(g)!).add(w[i]!);
    }
  }
  for (const [g, subs] of groups) {
    lines.push(`complete -c fibkeeper -n "__fibkeeper_is '${g}'" -a ${q([...subs].join(' '))}`);
  }
  for (const c of commands) {
    const at = `-n "__fibkeeper_at '${c.name}'"`;
    if (c.name === 'completion')
      lines.push(`complete -c fibkeeper ${at} -a ${q(SHELLS.join(' '))}`);
    for (const [name, o] of Object.entries({
      ...c.options,
      help: { type: 'boolean', short: 'h' },
    })) {
      const short = o.short ? ` -s ${o.short}` : '';
      const value =
        o.type === 'boolean'
          ? ''
          : name === 'output'
            ? ` -r -f -a ${q('text json yaml')}`
            : PATH_OPTIONS.includes(`--${name}`)
              ? ' -r -F'
              : ' -r';
      lines.push(`complete -c fibkeeper ${at} -l ${name}${short}${value}`);
    }
  }
  return `# fish completion for fibkeeper (fibkeeper completion fish)
# The words typed before the first option (the command, then its arguments).
function __fibkeeper_typed
    set -l out
    for w in (commandline -opc)[2..-1]
        string match -q -- '-*' $w; and break
        set -a out $w
    end
    string join ' ' -- $out
end
# Exactly these words typed: a group's subcommands come next.
function __fibkeeper_is
    set -l t (__fibkeeper_typed)
    test "$t" = "$argv[1]"
end
# This command typed, maybe with arguments after it: its options come next.
function __fibkeeper_at
    set -l t (__fibkeeper_typed)
    test "$t" = "$argv[1]"; or string match -q -- "$argv[1] *" "$t"
end
complete -c fibkeeper -f
complete -c fibkeeper -n "__fibkeeper_is ''" -l help -l version
${lines.join('\n')}
`;
}

export function completionCommand(commands: () => readonly Command[]): Command {
  return {
    name: 'completion',
    summary: 'Print a shell completion script (bash, zsh or fish) made from the command table',
    usage: 'bash|zsh|fish',
    help: [
      'bash: source <(fibkeeper completion bash), or save it in',
      '      /etc/bash_completion.d/fibkeeper',
      'zsh:  source <(fibkeeper completion zsh) (uses bashcompinit)',
      'fish: fibkeeper completion fish | source, or save it in',
      '      ~/.config/fish/completions/fibkeeper.fish',
    ].join('\n'),
    options: {},
    positionals: true,
    async run(args, io) {
      const [shell, ...rest] = args.positionals;
      if (rest.length > 0 || shell === undefined || !SHELLS.includes(shell)) {
        throw new UsageError('give the shell: bash, zsh or fish');
      }
      if (shell === 'fish') {
        io.out(fishCompletion(commands()));
        return EXIT_OK;
      }
      const script = bashCompletion(commands());
      io.out(
        shell === 'bash'
          ? script
          : `# zsh completion for fibkeeper (fibkeeper completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${script}`,
      );
      return EXIT_OK;
    },
  };
}
