// fibkeeper's configuration: a YAML or JSON file, every option also a flag (flags win),
// validated at load with errors that name the option and the allowed values.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../errors/index.js';
import { OPTIONS, flagName, type FibkeeperConfig, type OptionSpec } from './schema.js';
import { crossValidate } from './validate.js';

export { OPTIONS, flagName, type FibkeeperConfig, type OptionSpec } from './schema.js';
export {
  checkRunnable,
  crossValidate,
  isLoopbackHostPort,
  readTokenFile,
  MAX_SOCKET_PATH,
  MIN_TOKEN_LENGTH,
} from './validate.js';
export {
  checkBgpOptions,
  parseBgpIpAttributes,
  parseBgpPeer,
  parseCommunity,
  readPasswordFile,
  type BgpIpAttributes,
  type BgpPeer,
} from './bgp.js';
export {
  isNodeName,
  normalizePrefix,
  parseLabelList,
  validateLabels,
  validateNodeName,
} from './names.js';
export {
  CLUSTER_OWNER,
  CONFIG_OWNER,
  MAX_IPS_PER_BULK,
  MAX_IPS_PER_REQUEST,
  MISS_OWNER,
  OWNER_RE,
  RESERVED_OWNERS,
  checkIp,
  checkIps,
  parseIpLines,
  parseIpList,
  checkOwner,
  conflictError,
} from './rules.js';

type Json = unknown;

/** The configuration with every option at its default. */
export function defaultConfig(): FibkeeperConfig {
  const cfg: Record<string, Json> = {};
  for (const spec of OPTIONS) setPath(cfg, spec.path, coerce(spec, spec.default, 'default'));
  return cfg as unknown as FibkeeperConfig;
}

/**
 * Builds the configuration from a file's contents (YAML or JSON; may be undefined) and
 * flags given as `{ "xdp-mode": "native" }` (flags win). Unknown keys and bad values throw
 * ConfigError naming the option.
 */
export function buildConfig(
  fileText: string | undefined,
  flags: Readonly<Record<string, string | boolean>> = {},
  source = 'config file',
): FibkeeperConfig {
  const cfg = defaultConfig() as unknown as Record<string, Json>;
  const errors: ConfigError[] = [];
  if (fileText !== undefined && fileText.trim() !== '') {
    let doc: Json;
    try {
      doc = parseYaml(fileText);
    } catch (err) {
      throw new ConfigError(source, `not valid YAML or JSON: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (doc !== null && doc !== undefined) {
      if (typeof doc !== 'object' || Array.isArray(doc)) {
        throw new ConfigError(source, 'the top level must be a mapping of options');
      }
      applyFile(cfg, doc as Record<string, Json>, '', errors);
    }
  }
  for (const [name, value] of Object.entries(flags)) {
    collect(errors, () => {
      const spec = OPTIONS.find((o) => flagName(o.path) === name);
      if (!spec) throw new ConfigError(`--${name}`, 'unknown option (see `fibkeeper run --help`)');
      setPath(cfg, spec.path, coerce(spec, value, `--${name}`));
    });
  }
  // Every option's own error at once; the rules between options only once each is valid.
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) {
    throw new ConfigError(
      source,
      `${errors.length} errors:\n${errors.map((e) => `  ${e.message}`).join('\n')}`,
    );
  }
  const out = cfg as unknown as FibkeeperConfig;
  crossValidate(out);
  return out;
}

/** Reads and builds the configuration from a file path (or only defaults and flags). */
export function loadConfig(
  path: string | undefined,
  flags: Readonly<Record<string, string | boolean>> = {},
): FibkeeperConfig {
  let text: string | undefined;
  if (path !== undefined) {
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigError('--config', `cannot read ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  return buildConfig(text, flags, path ?? 'config file');
}

/** Runs `fn`; a ConfigError it throws is added to `errors` (others go on up). */
function collect(errors: ConfigError[], fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    errors.push(err);
  }
}

function applyFile(
  cfg: Record<string, Json>,
  obj: Record<string, Json>,
  prefix: string,
  errors: ConfigError[],
): void {
  for (const [key, value] of Object.entries(obj)) {
    collect(errors, () => applyKey(cfg, key, value, prefix, errors));
  }
}

function applyKey(
  cfg: Record<string, Json>,
  key: string,
  value: Json,
  prefix: string,
  errors: ConfigError[],
): void {
  const path = prefix ? `${prefix}.${key}` : key;
  const spec = OPTIONS.find((o) => o.path === path);
  if (spec) {
    setPath(cfg, path, coerce(spec, value, path));
  } else if (OPTIONS.some((o) => o.path.startsWith(`${path}.`))) {
    if (value === null) return;
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw new ConfigError(path, 'must be a mapping of options');
    }
    applyFile(cfg, value as Record<string, Json>, path, errors);
  } else {
    const near = OPTIONS.filter((o) => o.path.split('.').pop() === key).map((o) => o.path);
    throw new ConfigError(
      path,
      `unknown option${near.length ? ` (did you mean ${near.join(' or ')}?)` : ''}`,
    );
  }
}

function setPath(obj: Record<string, Json>, path: string, value: Json): void {
  const parts = path.split('.');
  let cur = obj;
  for (const p of parts.slice(0, -1)) {
    if (typeof cur[p] !== 'object' || cur[p] === null) cur[p] = {};
    cur = cur[p] as Record<string, Json>;
  }
  cur[parts[parts.length - 1] as string] = value;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "1m30s" / "100ms" / "5m" / a number of milliseconds -> milliseconds. */
export function parseDuration(v: Json): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) && v >= 0 ? v : undefined;
  if (typeof v !== 'string') return undefined;
  const s = v.trim();
  if (/^\d+$/.test(s)) return Number(s);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * (DURATION_UNITS[m[2] as string] as number);
    matched = re.lastIndex;
  }
  return matched === s.length && s.length > 0 ? Math.round(total) : undefined;
}

export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

function coerce(spec: OptionSpec, v: Json, where: string): Json {
  const fail = (expect: string): never => {
    throw new ConfigError(where, `${expect}, got ${JSON.stringify(v)}`);
  };
  switch (spec.type) {
    case 'string':
      if (typeof v !== 'string') fail('must be a string');
      return v;
    case 'bool':
      if (typeof v === 'boolean') return v;
      if (v === 'true' || v === '1' || v === 'yes') return true;
      if (v === 'false' || v === '0' || v === 'no') return false;
      return fail('must be true or false');
    case 'int': {
      const n = typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isInteger(n)) return fail('must be an integer');
      checkRange(spec, n, where, String(n));
      return n;
    }
    case 'duration': {
      const ms = parseDuration(v);
      if (ms === undefined) return fail('must be a duration like 500ms, 10s, 5m or 1h');
      checkRange(spec, ms, where, formatDuration(ms));
      return ms;
    }
    case 'list': {
      if (typeof v === 'string') return v.trim() === '' ? [] : v.split(',').map((s) => s.trim());
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
        return fail('must be a list of strings');
      }
      return [...(v as string[])];
    }
    case 'enum':
      if (typeof v !== 'string' || !spec.values?.includes(v)) {
        return fail(`must be one of ${spec.values?.join(', ')}`);
      }
      return v;
    case 'filemode': {
      const s = typeof v === 'number' ? v.toString(8) : v;
      if (typeof s !== 'string' || !/^0?[0-7]{3}$/.test(s)) {
        return fail('must be an octal file mode like 0660');
      }
      const mode = parseInt(s, 8);
      if (mode & 0o007) fail('must not give any access to others (use 0600 or 0660)');
      return mode;
    }
  }
}

function checkRange(spec: OptionSpec, n: number, where: string, shown: string): void {
  const fmt = (x: number) => (spec.type === 'duration' ? formatDuration(x) : String(x));
  if (spec.min !== undefined && n < spec.min) {
    throw new ConfigError(where, `${shown} is below the minimum ${fmt(spec.min)}`);
  }
  if (spec.max !== undefined && n > spec.max) {
    throw new ConfigError(where, `${shown} is above the maximum ${fmt(spec.max)}`);
  }
}

/** The documented example config: every option, its meaning and its default, as YAML. */
export function exampleConfigYaml(): string {
  const lines = [
    '# fibkeeper configuration: every option with its default.',
    '# Every option is also a flag of `fibkeeper run`: --<path in kebab-case>, e.g. --xdp-mode.',
    '# Durations: 500ms, 10s, 5m, 1h. Lists: YAML lists (flags: comma-separated).',
  ];
  let section = '';
  for (const spec of OPTIONS) {
    const parts = spec.path.split('.');
    const top = parts.length > 1 ? (parts[0] as string) : '';
    if (top !== section) {
      section = top;
      if (top) lines.push('', `${top}:`);
      else lines.push('');
    }
    const indent = '  '.repeat(parts.length - 1);
    if (parts.length === 3 && !lines.includes(`  ${parts[1]}:`)) lines.push(`  ${parts[1]}:`);
    const flag = `--${flagName(spec.path)}`;
    const allowed = spec.values ? ` One of: ${spec.values.join(', ')}.` : '';
    lines.push(`${indent}# ${spec.doc}${allowed}${rangeDoc(spec)} Flag: ${flag}`);
    lines.push(`${indent}${parts[parts.length - 1]}: ${yamlValue(spec)}`);
  }
  return lines.join('\n') + '\n';
}

/** " Range: 1s to 24h." for an option with bounds. */
export function rangeDoc(spec: OptionSpec): string {
  if (spec.min === undefined && spec.max === undefined) return '';
  const fmt = (x: number) => (spec.type === 'duration' ? formatDuration(x) : String(x));
  const lo = spec.min === undefined ? '' : fmt(spec.min);
  const hi = spec.max === undefined ? '' : fmt(spec.max);
  return ` Range: ${lo}${hi ? ` to ${hi}` : ' or more'}.`;
}

/** An option's default as the config file writes it (`10m`, `"auto"`, `[]`). */
export function yamlValue(spec: OptionSpec): string {
  const v = spec.default;
  if (spec.type === 'duration') return formatDuration(v as number);
  if (spec.type === 'filemode') return `"${v}"`;
  if (Array.isArray(v)) return v.length ? `[${v.map((s) => `"${s}"`).join(', ')}]` : '[]';
  if (typeof v === 'string') return v === '' ? '""' : `"${v}"`;
  return String(v);
}

/** The README's option table rows (between `<!-- options:begin -->` and `<!-- options:end -->`). */
export function optionsMarkdown(): string {
  return OPTIONS.map((spec) => {
    const allowed = spec.values ? ` One of: ${spec.values.join(', ')}.` : '';
    const dflt = yamlValue(spec).replace(/\|/g, '\\|');
    const reload = spec.reload === 'live' ? 'live' : 'restart';
    return `| \`${spec.path}\` | \`${dflt}\` | ${reload} | ${spec.doc.replace(/\|/g, '\\|')}${allowed}${rangeDoc(spec)} |`;
  }).join('\n');
}
