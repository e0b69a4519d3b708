// `fibkeeper completion bash|zsh`: a shell completion script made from the command table, so
// it can never name a command or option that does not exist: commands and subcommands,
// each command's options, the formats after -o, files after the options that take a path.
// zsh runs the bash script through its bashcompinit.
import type { Command } from './command.js';
import { EXIT_OK, UsageError } from './command.js';

/** Options whose value is a path: the shell completes file names after them. */
const PATH_OPTIONS = ['--config', '--file', '--socket', '--pin-dir'];

const quote = (words: readonly string[]) => words.join(' ');

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
    const positional = c.name === 'completion' ? ['bash', 'zsh'] : [];
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

export function completionCommand(commands: () => readonly Command[]): Command {
  return {
    name: 'completion',
    summary: 'Print a shell completion script (bash or zsh) made from the command table',
    usage: 'bash|zsh',
    help: [
      'bash: source <(fibkeeper completion bash), or save it in',
      '      /etc/bash_completion.d/fibkeeper',
      'zsh:  source <(fibkeeper completion zsh) (uses bashcompinit)',
    ].join('\n'),
    options: {},
    positionals: true,
    async run(args, io) {
      const [shell, ...rest] = args.positionals;
      if (rest.length > 0 || (shell !== 'bash' && shell !== 'zsh')) {
        throw new UsageError('give the shell: bash or zsh');
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
