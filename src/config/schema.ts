// Every configuration option: its path, type, default and meaning. The config file, the
// command-line flags, the validation errors, the documented example config and the
// FibkeeperConfig type itself are all derived from this one table, so an option cannot exist
// in one place and not another: adding a row (in ./options/, one file per section) is the one
// edit that adds an option.

import type { OptionSpec } from './spec.js';
import { NODE_OPTIONS } from './options/node.js';
import { XDP_OPTIONS } from './options/xdp.js';
import { NEIGHBOR_OPTIONS } from './options/neighbor.js';
import { EXTIP_OPTIONS } from './options/extip.js';
import { CLUSTER_OPTIONS } from './options/cluster.js';
import { SERVICE_OPTIONS } from './options/service.js';
import { BGP_OPTIONS } from './options/bgp.js';

export type { OptionSpec, OptionType } from './spec.js';

// The rows live beside their subsystem's name in ./options/, in the order the docs list them.
const TABLE = [
  ...NODE_OPTIONS,
  ...XDP_OPTIONS,
  ...NEIGHBOR_OPTIONS,
  ...EXTIP_OPTIONS,
  ...CLUSTER_OPTIONS,
  ...BGP_OPTIONS,
  ...SERVICE_OPTIONS,
] as const;

/** The table, as the code that walks it sees it. */
export const OPTIONS: readonly OptionSpec[] = TABLE;

/** What an option of each type holds once read (durations in ms, file modes as numbers). */
interface ValueOfType {
  string: string;
  bool: boolean;
  int: number;
  duration: number;
  list: string[];
  enum: string;
  filemode: number;
}

/** An option's value type: its enum's values, or what its type holds. */
type ValueOf<S extends OptionSpec> = S extends { type: 'enum'; values: readonly (infer V)[] }
  ? V
  : ValueOfType[S['type']];

/** "xdp.missTracker.ttl" -> "xdp"; "netns" -> "netns". */
type Head<P extends string> = P extends `${infer H}.${string}` ? H : P;

/** The options under section K, with K. taken off their paths. */
type Below<S extends OptionSpec, K extends string> = S extends { path: `${K}.${infer Rest}` }
  ? Omit<S, 'path'> & { path: Rest }
  : never;

/** The nested configuration object that the options S describe. */
type ConfigOf<S extends OptionSpec> = {
  [K in Head<S['path']>]: [Extract<S, { path: K }>] extends [never]
    ? ConfigOf<Below<S, K>>
    : ValueOf<Extract<S, { path: K }>>;
};

/** The whole configuration, as every command reads it: one field per row of the table. */
export type FibkeeperConfig = ConfigOf<(typeof TABLE)[number]>;

/** "xdp.missTracker.ttl" -> "xdp-miss-tracker-ttl" */
export function flagName(path: string): string {
  return path
    .replace(/\./g, '-')
    .replace(/([a-z0-9])([A-Z]+)/g, (_m, a: string, caps: string) => `${a}-${caps.toLowerCase()}`);
}
