// Running one corpus scenario: every frame through the router kernel-only, then with
// fibkeeper's XdpForwarder attached to every router device; the egress of every frame
// compared byte for byte, the ingress device's counters checked per frame, the counter
// algebra on every device after every frame, and the node's own counters (nft) moved alike.
import * as fib from '../../../src/fib/index.js';
import { XdpForwarder } from '../../../src/fib/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { sysctl } from '../../helpers/netns.js';
import type { Case, Scenario } from './case.js';
import type { Captured, DiffLab, Sink } from './lab.js';
import { judge, moved, type Ctrs, type Row } from './report.js';

/** The router device each sink is attached to. */
export const INGRESS: Record<Sink, 'r1' | 'r2' | 'r3' | 'r4'> = {
  c0: 'r1',
  s0: 'r2',
  a0: 'r3',
  b0: 'r4',
};

/** Reasons counted after a SUCCESS result (no_txport, hairpin, ...). */
export function postLookup(): Set<string> {
  return new Set(fib.POST_LOOKUP_REASONS);
}

const sum = (r: Record<string, { packets: number }>, keep: (k: string) => boolean = () => true) =>
  Object.entries(r).reduce((s, [k, v]) => s + (keep(k) ? v.packets : 0), 0);

/** actions = results + reasons decided before a lookup; redirect = success - later reasons. */
export function algebra(
  all: readonly (Ctrs & { device: string })[],
  post: ReadonlySet<string>,
): string[] {
  const bad: string[] = [];
  for (const d of all) {
    const pre = sum(d.reasons, (k) => !post.has(k));
    const later = sum(d.reasons, (k) => post.has(k));
    if (sum(d.actions) !== sum(d.results) + pre)
      bad.push(`${d.device}: actions != results + reasons`);
    if ((d.actions.redirect?.packets ?? 0) !== (d.results.success?.packets ?? 0) - later) {
      bad.push(`${d.device}: redirect != success - post-lookup reasons`);
    }
  }
  return bad;
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function delta(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]));
}

export interface ScenarioResult {
  rows: Row[];
  /** Counter algebra broken after a frame. */
  broken: string[];
  /** The node's counters per run, when the scenario reads any. */
  counters?: { kernel: Record<string, number>; xdp: Record<string, number> };
}

/** Kernel-only, then with XDP; returns a row per frame. The forwarder is stopped at the end. */
export async function runScenario(
  lab: DiffLab,
  s: Scenario,
  pinDir: string,
  base: readonly [string, number][] = [],
): Promise<ScenarioResult> {
  const post = postLookup();
  for (const [k, v] of [...base, ...s.sysctls]) sysctl(lab.router, k, v);
  s.setup?.(lab);
  try {
    const c0 = s.counters?.(lab);
    const kernel: Captured[][] = [];
    for (const cs of s.cases) {
      cs.before?.(lab);
      kernel.push(await lab.send(cs.frame, cs.from));
    }
    const c1 = s.counters?.(lab);
    s.between?.(lab);
    // the changes the cases made are undone, then made again in the XDP run
    s.teardown?.(lab);
    s.setup?.(lab);
    const c2 = s.counters?.(lab);
    const x = new XdpForwarder({
      netns: lab.router,
      config: {
        devices: ['r1', 'r2', 'r3', 'r4'],
        holderName: 'fk-holder',
        mode: 'auto',
        pinDir,
        keepOnStop: false,
        force: false,
        ipv6: true,
        ...s.config,
      },
      log: silentLogger(),
      resyncIntervalMs: 0,
    });
    const rows: Row[] = [];
    const broken: string[] = [];
    await x.start();
    try {
      const health = x.health();
      if (!health.ok) throw new Error(`forwarder not healthy: ${health.reasons.join('; ')}`);
      const ctrs = (dev: string) => x.counters().find((d) => d.device === dev) as Ctrs;
      for (const [i, cs] of s.cases.entries()) {
        if (cs.before !== undefined) {
          // a full pass (sysctls, links, policy) or a route-only write (route events)
          const writes = () => x.passes + x.routeWrites;
          const w0 = writes();
          cs.before(lab);
          await until(`the forwarder to apply the change before "${cs.name}"`, () => writes() > w0);
        }
        const dev = INGRESS[cs.from ?? 'c0'];
        const before = ctrs(dev);
        const out = await lab.send(cs.frame, cs.from);
        rows.push(judge(s.name, cs, kernel[i] ?? [], out, moved(before, ctrs(dev)), post));
        for (const b of algebra(x.counters(), post)) broken.push(`after "${cs.name}": ${b}`);
      }
    } finally {
      await x.stop();
    }
    const c3 = s.counters?.(lab);
    const counters =
      c0 && c1 && c2 && c3 ? { kernel: delta(c0, c1), xdp: delta(c2, c3) } : undefined;
    return { rows, broken, ...(counters ? { counters } : {}) };
  } finally {
    s.teardown?.(lab);
  }
}

/** The frames of `rows` that went wrong, one line each. */
export function problems(rows: readonly Row[]): string[] {
  return rows
    .filter((r) => r.problems.length > 0)
    .map((r) => `${r.c.name}: ${r.problems.join('; ')}`);
}

export type { Case };
