// The results file of bench/neighbor/whole.mjs: its runs as figures in the shape
// bench/run.mjs reports (BENCHMARKS.md), each with its target from issue 25.
import { execFileSync } from 'node:child_process';
import { r2 } from './lab.mjs';

/** A figure in the shape bench/run.mjs reports. */
function figure(f) {
  const judged = f.targetOf === 'ratio' ? f.ratio : f.value;
  const pass =
    f.target === null ? null : f.targetKind === '>=' ? judged >= f.target : judged <= f.target;
  return { ...f, targetMeaning: f.target === null ? null : `${f.targetOf} ${f.targetKind}`, pass };
}

/** The figures of one run (`tag` tells runs of the same size and mode apart). */
function figuresOf(r, tag) {
  const k = `${r.n}_${r.mode}${tag}`;
  const out = [
    figure({
      name: `converge_${k}`,
      value: r.convergeMs,
      unit: 'ms',
      reference: r2((r.ipBatchMs + r.ipBatchAfterMs) / 2),
      referenceName: `ip -batch writing the same ${r.n} entries (${r.path} flags), mean of before (${r.ipBatchMs}) and after (${r.ipBatchAfterMs}) the agent, same run`,
      ratio: r.ratio,
      // The targets are at 100,000 and 1,000,000.
      target: r.n >= 100_000 ? 1.5 : null,
      targetKind: '<=',
      targetOf: 'ratio',
    }),
    figure({
      name: `rss_peak_${k}`,
      value: r.rssPeakMiB,
      unit: 'MiB',
      reference: r.rssIdleMiB,
      referenceName: 'the idle agent (started, nothing loaded)',
      ratio: r2(r.rssPeakMiB / r.rssIdleMiB),
      target: r.n >= 1_000_000 ? 512 : r.n >= 100_000 ? 128 : null,
      targetKind: '<=',
      targetOf: 'value',
    }),
    figure({
      name: `route_change_p99_${k}`,
      value: r.routeP99Ms,
      unit: 'ms',
      reference: r.floorP99Ms,
      referenceName: "the driver's own neighSet to its event (p99), same run",
      ratio: r2(r.routeP99Ms / r.floorP99Ms),
      target: r.n >= 1_000_000 ? 5 : null,
      targetKind: '<=',
      targetOf: 'value',
    }),
  ];
  if (r.usableMinPct !== null) {
    out.push(
      figure({
        name: `usable_min_pct_${k}`,
        value: r.usableMinPct,
        unit: '%',
        reference: null,
        referenceName:
          'lowest usable share (REACHABLE/STALE/DELAY/PROBE with an address), reachable time 30 s',
        ratio: null,
        target: 100,
        targetKind: '>=',
        targetOf: 'value',
      }),
    );
  }
  return out;
}

/** The results file of `runs` (each with its round: `r.round`). */
export function report(runs, command) {
  const figures = runs.flatMap((r) => figuresOf(r, r.round ? `_r${r.round}` : ''));
  return {
    benchmark: 'neighbor-whole',
    kernel: execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString(),
    command,
    figures,
    runs,
  };
}
