// `-o FORMAT` (`--output`), as kubectl and cilium take it: the formats a command prints, the
// first the default (`table` is another name for `text`). `--json`, where a command had it
// before, stays the same as `-o json`. JSON is the stable, versioned document; YAML the same
// data.
import { stringify as stringifyYaml } from 'yaml';
import { UsageError, flag, str, type Io, type OptionsSpec, type ParsedArgs } from './command.js';

export type OutputFormat = 'text' | 'wide' | 'json' | 'yaml';

/** The options of a command that prints data: -o/--output and the older --json. */
export const OUTPUT_OPTIONS: OptionsSpec = {
  output: { type: 'string', short: 'o' },
  json: { type: 'boolean' },
};

/** Help lines for OUTPUT_OPTIONS. */
export const OUTPUT_HELP = [
  '  -o, --output F  text (the default; also: table), json (machine-readable) or yaml',
  '  --json          the same as -o json',
];

/** The format asked for (`-o`, else `--json`, else the first of `allowed`). */
export function outputOf<F extends OutputFormat>(args: ParsedArgs, allowed: readonly F[]): F {
  const o = str(args, 'output');
  const json = flag(args, 'json') && allowed.includes('json' as F);
  if (o === undefined) return (json ? 'json' : allowed[0]) as F;
  const f = (o === 'table' ? 'text' : o) as F;
  if (!allowed.includes(f)) throw new UsageError(`-o ${o}: give one of ${allowed.join(', ')}`);
  if (json && f !== 'json') throw new UsageError(`--json and -o ${o} disagree`);
  return f;
}

/** Prints `data` as JSON or YAML; false for the text formats (the command prints those). */
export function printData(io: Io, format: OutputFormat, data: unknown): boolean {
  if (format === 'json') io.out(JSON.stringify(data, null, 2) + '\n');
  else if (format === 'yaml') io.out(stringifyYaml(data));
  else return false;
  return true;
}
