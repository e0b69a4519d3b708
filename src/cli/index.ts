// The `fibkeeper` command line. `main(argv)` returns the exit code: 0 success, 1 the
// operation failed, 2 usage error.
import { describeError } from '../errors/index.js';
import {
  EXIT_FAILED,
  EXIT_OK,
  EXIT_USAGE,
  UsageError,
  parseCommandArgs,
  processIo,
  type Command,
  type Io,
} from './command.js';
import { COMMANDS } from './commands.js';

export { type Command, type Io } from './command.js';

function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  const lines = COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    'fibkeeper — keeps the kernel FIB and neighbor table ready for XDP forwarding',
    '',
    'Usage: fibkeeper <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Run `fibkeeper <command> --help` for the options of a command.',
    'Exit codes: 0 success, 1 the operation failed, 2 usage error.',
    '',
  ].join('\n');
}

function commandHelp(cmd: Command): string {
  return `Usage: fibkeeper ${cmd.name} ${cmd.usage}\n\n${cmd.summary}\n${cmd.help ? `\n${cmd.help}\n` : ''}`;
}

/** Finds the longest command name that prefixes argv ("forwardable add"). */
function findCommand(argv: string[]): { cmd: Command; rest: string[] } | undefined {
  let best: { cmd: Command; rest: string[] } | undefined;
  for (const cmd of COMMANDS) {
    const words = cmd.name.split(' ');
    if (words.every((w, i) => argv[i] === w)) {
      if (!best || words.length > best.cmd.name.split(' ').length) {
        best = { cmd, rest: argv.slice(words.length) };
      }
    }
  }
  return best;
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.out(topHelp());
    return argv.length === 0 ? EXIT_USAGE : EXIT_OK;
  }
  if (argv[0] === '--version') argv = ['version'];
  const found = findCommand(argv);
  if (!found) {
    const group = COMMANDS.filter((c) => c.name.startsWith(`${argv[0]} `));
    if (group.length > 0) {
      const wantsHelp = argv.includes('--help') || argv.includes('-h');
      io[wantsHelp ? 'out' : 'err'](
        `Usage: fibkeeper ${argv[0]} <${[...new Set(group.map((c) => c.name.split(' ')[1]))].join('|')}> ...\n\n` +
          group.map((c) => `  fibkeeper ${c.name} ${c.usage}\n      ${c.summary}\n`).join(''),
      );
      return wantsHelp ? EXIT_OK : EXIT_USAGE;
    }
    io.err(`fibkeeper: unknown command "${argv[0]}"\n\n${topHelp()}`);
    return EXIT_USAGE;
  }
  const { cmd, rest } = found;
  try {
    const args = parseCommandArgs(cmd, rest);
    if (args.values.help === true) {
      io.out(commandHelp(cmd));
      return EXIT_OK;
    }
    return await cmd.run(args, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`fibkeeper ${cmd.name}: ${err.message}\n\n${commandHelp(cmd)}`);
      return EXIT_USAGE;
    }
    io.err(`fibkeeper ${cmd.name}: ${describeError(err)}\n`);
    return EXIT_FAILED;
  }
}
