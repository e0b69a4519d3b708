// The feature-probe framework: a table of {name, minKernel, probe} with three outcomes,
// run once and cached. The probes themselves live in features.ts.
import { describeError } from '../errors/index.js';

export type Outcome = 'supported' | 'not supported' | 'inconclusive';

/** What a single probe returns. `value` carries a reading (a sysctl, the kernel version). */
export interface ProbeOutcome {
  outcome: Outcome;
  detail: string;
  value?: string | number;
}

export interface FeatureSpec<Ctx> {
  /** Stable machine name ("managed_neighbors"). */
  readonly name: string;
  /** Human title ("Managed neighbor entries (NTF_MANAGED)"). */
  readonly title: string;
  /** First kernel that has it; undefined when it depends on configuration, not version. */
  readonly minKernel?: string;
  /** What to do when it is missing. */
  readonly fix: string;
  probe(ctx: Ctx): Promise<ProbeOutcome>;
}

export interface FeatureResult {
  name: string;
  title: string;
  minKernel: string | null;
  outcome: Outcome;
  detail: string;
  value?: string | number;
  fix: string;
}

/** Runs every probe (sequentially: several build scratch namespaces). A throw is inconclusive. */
export async function runFeatureTable<Ctx>(
  specs: readonly FeatureSpec<Ctx>[],
  ctx: Ctx,
): Promise<FeatureResult[]> {
  const results: FeatureResult[] = [];
  for (const spec of specs) {
    let r: ProbeOutcome;
    try {
      r = await spec.probe(ctx);
    } catch (err) {
      r = { outcome: 'inconclusive', detail: `probe failed: ${describeError(err)}` };
    }
    results.push({
      name: spec.name,
      title: spec.title,
      minKernel: spec.minKernel ?? null,
      outcome: r.outcome,
      detail: r.detail,
      ...(r.value === undefined ? {} : { value: r.value }),
      fix: spec.fix,
    });
  }
  return results;
}

/** Parses "6.18.44-fc-v857" into [6, 18, 44]. */
export function parseKernelVersion(release: string): [number, number, number] {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(release);
  if (!m) return [0, 0, 0];
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

/** Compares kernel versions: negative when a < b. */
export function compareKernel(a: string, b: string): number {
  const x = parseKernelVersion(a);
  const y = parseKernelVersion(b);
  for (let i = 0; i < 3; i++) {
    const d = (x[i] as number) - (y[i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

/** A cache so the agent and the API share one probe run per process. */
export class ProbeCache<T> {
  #pending: Promise<T> | undefined;
  readonly #run: () => Promise<T>;
  constructor(run: () => Promise<T>) {
    this.#run = run;
  }
  get(): Promise<T> {
    this.#pending ??= this.#run().catch((err: unknown) => {
      this.#pending = undefined;
      throw err;
    });
    return this.#pending;
  }
}

/** The human table: one row per feature, columns aligned. */
export function formatFeatureTable(
  results: readonly FeatureResult[],
  needed: ReadonlySet<string>,
): string {
  const rows = results.map((r) => [
    r.title,
    r.minKernel ?? 'n/a',
    r.outcome + (needed.has(r.name) && r.outcome !== 'supported' ? ' (NEEDED)' : ''),
    r.detail,
  ]);
  const head = ['FEATURE', 'MIN KERNEL', 'RESULT', 'DETAIL'];
  const widths = head.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (r[i] as string).length)),
  );
  const fmt = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [fmt(head), ...rows.map(fmt)].join('\n') + '\n';
}
