// Reconciler options: every default in defaultOptions() with the reason for it, validated at
// construction with errors that name the option.
import { ConfigError } from '../errors/index.js';
import { backoff } from '../sched/index.js';

export interface ReconcilerConfig {
  /** Delay before the first retry of a failed object, ms. */
  retryBackoffMinMs: number;
  /** The backoff doubles per consecutive failure of an object up to this, ms. */
  retryBackoffMaxMs: number;
  /** Re-run update for rows done longer ago than this, ms; 0 = never. */
  refreshIntervalMs: number;
  /** Prune again this long after the last successful prune, ms; 0 = only on demand. */
  pruneIntervalMs: number;
  /** Objects per updateBatch/deleteBatch call; stop() is honoured between batches. */
  batchSize: number;
  /**
   * Batch calls of a round that may run at once (updateBatch): with 2, the next batch is
   * prepared and handed over while the one before is still in the kernel (its writes go
   * out on a send thread, NetlinkSocket.submit).
   */
  pipeline: number;
  /** Failing objects listed by health() (errorCount has them all). */
  maxHealthErrors: number;
  /** A requeued row that was done less than this long ago waits out the rest, ms. */
  requeueMinIntervalMs: number;
}

export function defaultOptions(): ReconcilerConfig {
  return {
    // Transient failures (a device still coming up, EBUSY) mostly clear within a moment:
    // retry soon enough that they cost no visible downtime.
    retryBackoffMinMs: 100,
    // A permanently failing object costs one operation a minute, and recovers within a
    // minute of its cause going away.
    retryBackoffMaxMs: 60_000,
    // Off: a done row is left alone until it changes. Subsystems whose target decays (neighbor
    // entries on kernels without managed neighbors) turn it on.
    refreshIntervalMs: 0,
    // Every five minutes after the initial prune: catches what others added to or removed
    // from the target behind our back without a full dump every round.
    pruneIntervalMs: 300_000,
    // Large enough that 100k rows take 100 calls, small enough to bound one netlink burst
    // and how long stop() waits for a round.
    batchSize: 1000,
    pipeline: 1,
    // Enough to see the pattern in the status view and logs without unbounded output.
    maxHealthErrors: 10,
    // A target that keeps losing an entry (a flapping device) causes at most one re-insert
    // of it per second; the total is bounded by the optional rate limiter.
    requeueMinIntervalMs: 1000,
  };
}

type Rule = (v: number) => string | undefined;

const nonNegative: Rule = (v) => (v >= 0 ? undefined : 'must be >= 0');
const positive: Rule = (v) => (v > 0 ? undefined : 'must be > 0');
const integerAtLeastOne: Rule = (v) =>
  Number.isInteger(v) && v >= 1 ? undefined : 'must be an integer >= 1';
const integer: Rule = (v) =>
  Number.isInteger(v) && v >= 0 ? undefined : 'must be an integer >= 0';

const RULES: Readonly<Record<keyof ReconcilerConfig, Rule>> = {
  retryBackoffMinMs: positive,
  retryBackoffMaxMs: positive,
  refreshIntervalMs: nonNegative,
  pruneIntervalMs: nonNegative,
  batchSize: integerAtLeastOne,
  pipeline: integerAtLeastOne,
  maxHealthErrors: integer,
  requeueMinIntervalMs: nonNegative,
};

function isOption(name: string): name is keyof ReconcilerConfig {
  return Object.prototype.hasOwnProperty.call(RULES, name);
}

/**
 * Defaults overlaid with `given`; throws ConfigError naming `${path}.${option}` for an
 * unknown option, a value that is not a finite number, or a value out of range.
 */
export function resolveConfig(
  given: Partial<ReconcilerConfig> | undefined,
  path: string,
): ReconcilerConfig {
  const cfg = defaultOptions();
  for (const [name, value] of Object.entries(given ?? {})) {
    if (!isOption(name)) throw new ConfigError(`${path}.${name}`, 'unknown option');
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new ConfigError(`${path}.${name}`, `must be a finite number, got ${String(value)}`);
    }
    const problem = RULES[name](value);
    if (problem !== undefined) throw new ConfigError(`${path}.${name}`, `${problem}, got ${value}`);
    cfg[name] = value;
  }
  if (cfg.retryBackoffMaxMs < cfg.retryBackoffMinMs) {
    throw new ConfigError(
      `${path}.retryBackoffMaxMs`,
      `must be >= retryBackoffMinMs (${cfg.retryBackoffMinMs}), got ${cfg.retryBackoffMaxMs}`,
    );
  }
  return cfg;
}

/** Delay before retry number `failures` (1 = after the first failure): the one backoff. */
export function backoffMs(cfg: ReconcilerConfig, failures: number): number {
  return backoff(cfg.retryBackoffMinMs, cfg.retryBackoffMaxMs, failures);
}
