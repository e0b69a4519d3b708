// Applying the config's lists and the state file's entries to the subsystems, at start and
// at reload: every entry on its own, so that one that the node refuses now (one of its own
// addresses, IPv6 that the external interface cannot announce) is reported and skipped and
// never takes the others with it.
import { CONFIG_OWNER, checkIps, type FibkeeperConfig } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import type { ControlState, SkippedEntry, StaticSets } from './state.js';

/** The config's own lists, canonical (the config loader has checked them). */
export function staticSets(cfg: FibkeeperConfig): StaticSets {
  return {
    forwardable: new Set(checkIps(cfg.forwardable.static, 'forwardable.static')),
    extip: new Set(checkIps(cfg.extip.static, 'extip.static')),
  };
}

interface Checker {
  check(ips: readonly string[]): string[];
}

/** The IPs of `ips` that `target` accepts; the others go to `skipped` as `${entry} IP`. */
function accepted(
  target: Checker,
  ips: Iterable<string>,
  entry: string,
  skipped: SkippedEntry[],
): string[] {
  const list = [...ips];
  try {
    return target.check(list); // the common case: all of them, one call
  } catch {
    const out: string[] = [];
    for (const ip of list) {
      try {
        out.push(...target.check([ip]));
      } catch (err) {
        skipped.push({ entry: `${entry} ${ip}`, reason: (err as Error).message });
      }
    }
    return out;
  }
}

/** Calls `fn`; an error becomes a ConfigError of `option` (the config's own list). */
function asConfigError<T>(option: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new ConfigError(option, (err as Error).message, { cause: err });
  }
}

/**
 * Owner → IPs to set: "config" → forwardable.static (a ConfigError if the node refuses one
 * of them: the config is wrong), each owner of the state file → its accepted IPs.
 */
export function planForwardable(
  n: Checker,
  cfg: FibkeeperConfig,
  usable: ControlState,
): { owners: Map<string, string[]>; skipped: SkippedEntry[] } {
  const owners = new Map<string, string[]>();
  owners.set(
    CONFIG_OWNER,
    asConfigError('forwardable.static', () => n.check(cfg.forwardable.static)),
  );
  const skipped: SkippedEntry[] = [];
  for (const [owner, ips] of usable.forwardable) {
    owners.set(owner, accepted(n, ips, `forwardable ${owner}`, skipped));
  }
  return { owners, skipped };
}

/** The external IPs to set as desired: extip.static (all of it) and the accepted state ones. */
export function planExtip(
  x: Checker,
  cfg: FibkeeperConfig,
  usable: ControlState,
): { desired: string[]; skipped: SkippedEntry[] } {
  const statics = asConfigError('extip.static', () => x.check(cfg.extip.static));
  const skipped: SkippedEntry[] = [];
  const fromState = accepted(x, usable.extip, 'extip', skipped);
  return { desired: [...new Set([...statics, ...fromState])], skipped };
}
