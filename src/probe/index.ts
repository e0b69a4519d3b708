// `fibkeeper probe`: which kernel features this node has, which of them the configuration
// needs, and what to do about the missing ones.
import type { FibkeeperConfig } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { FEATURES, type ProbeContext } from './features.js';
import { withScratchNetns } from './scratch.js';
import { compareKernel, runFeatureTable, type FeatureResult } from './table.js';

export {
  ProbeCache,
  compareKernel,
  formatFeatureTable,
  parseKernelVersion,
  runFeatureTable,
  type FeatureResult,
  type FeatureSpec,
  type Outcome,
  type ProbeOutcome,
} from './table.js';
export { FEATURES, CAPS, effectiveCaps, type ProbeContext } from './features.js';

export interface ProbeReport {
  kernel: string;
  features: FeatureResult[];
  /** Names of the features the configuration needs. */
  needed: string[];
  /** Needed features that are not supported (or undecided on a kernel older than their minimum). */
  missing: FeatureResult[];
  /** Needed features whose probe was inconclusive, assumed present from the kernel version. */
  assumed: FeatureResult[];
}

/** Runs every probe; the scratch namespace is made once and always removed. */
export async function probeKernel(opts: {
  netns?: string;
  pinDir: string;
}): Promise<FeatureResult[]> {
  const base = { netns: opts.netns, pinDir: opts.pinDir };
  try {
    return await withScratchNetns((scratch) =>
      runFeatureTable<ProbeContext>(FEATURES, { ...base, scratch, scratchError: undefined }),
    );
  } catch (err) {
    return runFeatureTable<ProbeContext>(FEATURES, {
      ...base,
      scratch: undefined,
      scratchError: describeError(err),
    });
  }
}

/** The features a configuration cannot run without. */
export function neededFeatures(cfg: FibkeeperConfig): string[] {
  const need = new Set<string>(['cap_net_admin']);
  if (cfg.neighbor.enabled) {
    need.add('extern_learn');
    need.add('neigh_protocol');
    if (cfg.neighbor.refresh === 'managed') need.add('managed_neighbors');
  }
  if (cfg.xdp.enabled) {
    for (const f of ['fib_lookup', 'devmap_hash', 'bpffs', 'ip_forward']) need.add(f);
    if (cfg.xdp.ipv6) need.add('ipv6_forwarding');
  }
  if (cfg.extip.enabled) {
    need.add('cap_net_raw');
    if (cfg.extip.holderKind === 'dummy') need.add('dummy_link');
  }
  return [...need];
}

/**
 * Which needed features are missing. A probe that could not decide (no privilege for a
 * scratch namespace, say) counts as present when the running kernel is at least the
 * feature's minimum, and is listed in `assumed`. CAP_BPF may be replaced by CAP_SYS_ADMIN
 * (kernels before 5.8 know only the latter), so it is checked as "either".
 */
export function buildReport(features: FeatureResult[], cfg: FibkeeperConfig): ProbeReport {
  const needed = neededFeatures(cfg);
  const byName = new Map(features.map((f) => [f.name, f]));
  const kernel = String(byName.get('kernel')?.value ?? 'unknown');
  const assumed: FeatureResult[] = [];
  const missing: FeatureResult[] = [];
  for (const name of needed) {
    const f = byName.get(name);
    if (!f || f.outcome === 'supported') continue;
    if (
      f.outcome === 'inconclusive' &&
      f.minKernel !== null &&
      compareKernel(kernel, f.minKernel) >= 0
    ) {
      assumed.push(f);
    } else {
      missing.push(f);
    }
  }
  if (cfg.xdp.enabled) {
    const bpf = byName.get('cap_bpf');
    const admin = byName.get('cap_sys_admin');
    if (bpf && admin && bpf.outcome !== 'supported' && admin.outcome !== 'supported') {
      missing.push(bpf);
      needed.push('cap_bpf');
    }
  }
  return { kernel, features, needed, missing, assumed };
}

/** Whether a feature can be relied on: supported, or undecided on a kernel new enough. */
export function featureAvailable(report: ProbeReport, name: string): boolean {
  const f = report.features.find((x) => x.name === name);
  if (!f) return false;
  if (f.outcome === 'supported') return true;
  return (
    f.outcome === 'inconclusive' &&
    f.minKernel !== null &&
    compareKernel(report.kernel, f.minKernel) >= 0
  );
}

/** One line per missing feature: what it is and how to fix it. */
export function formatMissing(report: ProbeReport): string {
  return report.missing.map((f) => `missing: ${f.title}: ${f.detail}\n  fix: ${f.fix}\n`).join('');
}
