// What a row of the option table (src/config/schema.ts) says, and the units its durations use.

export type OptionType = 'string' | 'bool' | 'int' | 'duration' | 'list' | 'enum' | 'filemode';

export interface OptionSpec {
  /** Dotted path in the config file ("xdp.mode"); the flag is its kebab-case ("--xdp-mode"). */
  readonly path: string;
  readonly type: OptionType;
  readonly default: string | number | boolean | readonly string[];
  readonly doc: string;
  /** Allowed values of an enum. */
  readonly values?: readonly string[];
  /** Inclusive bounds of an int, or of a duration in milliseconds. */
  readonly min?: number;
  readonly max?: number;
  /**
   * How a change of the option takes effect on SIGHUP: `live` at once (src/agent/reload.ts
   * applies it), else after a restart (the reload logs it as needing one).
   */
  readonly reload?: 'live';
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
