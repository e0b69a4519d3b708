// `-o FORMAT` (`--output`), as kubectl and cilium take it: the formats a command prints, the
// first the default. `--json`, where a command had it before, stays the same as `-o json`.
import { UsageError, flag, str, type ParsedArgs } from './command.js';

export type OutputFormat = 'text' | 'wide' | 'json' | 'yaml';

/** The format asked for (`-o`, else `--json`, else the first of `allowed`). */
export function outputOf<F extends OutputFormat>(args: ParsedArgs, allowed: readonly F[]): F {
  const o = str(args, 'output');
  if (o === undefined)
    return (flag(args, 'json') && allowed.includes('json' as F) ? 'json' : allowed[0]) as F;
  const f = (o === 'table' ? 'text' : o) as F;
  if (!allowed.includes(f)) {
    throw new UsageError(`-o ${o}: give one of ${allowed.join(', ')}`);
  }
  if (flag(args, 'json') && f !== 'json') throw new UsageError(`--json and -o ${o} disagree`);
  return f;
}
