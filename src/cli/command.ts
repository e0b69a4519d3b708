// The shape of a CLI subcommand and the argument parsing they share.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** A usage error: wrong flags or arguments. Exit code 2, with the command's usage shown. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
};

export type OptionsSpec = NonNullable<ParseArgsConfig['options']>;

export interface Command {
  /** "probe", or "forwardable add" for a nested command. */
  readonly name: string;
  readonly summary: string;
  /** Usage text after "fibkeeper <name> ". */
  readonly usage: string;
  /** Longer help: one line per option. */
  readonly help: string;
  readonly options: OptionsSpec;
  /** Allows positional arguments. */
  readonly positionals?: boolean;
  run(args: ParsedArgs, io: Io): Promise<number>;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export function parseCommandArgs(cmd: Command, argv: string[]): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...cmd.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: cmd.positionals ?? false,
      strict: true,
    });
    return { values: values as ParsedArgs['values'], positionals };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function str(args: ParsedArgs, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function flag(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}
