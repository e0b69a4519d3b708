// The differential corpus: every crafted frame is sent through the router twice — once with
// only the kernel forwarding, once with fibkeeper's XdpForwarder attached to every router
// device — and what leaves the router at every egress is compared byte for byte. For the
// XDP run the counters of the ingress device must have moved exactly as the case says
// (forwarded in XDP, or passed with a named reason or lookup result), and the counter
// algebra must hold on every device after every frame. The kernel is the reference: zero
// differences, except the deviations the README lists (each checked to still differ).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fib from '../../src/fib/index.js';
import { XdpForwarder } from '../../src/fib/index.js';
import { silentLogger } from '../../src/log/index.js';
import { privateBpffs } from '../helpers/cleanup.js';
import { privileged, sysctl } from '../helpers/netns.js';
import type { Scenario } from './corpus/case.js';
import { ecmpCases4, ecmpCases6, rpCases } from './corpus/cases-ecmp.js';
import { l2Cases, optionCases, v4Cases } from './corpus/cases-v4.js';
import { v6Cases } from './corpus/cases-v6.js';
import { makeDiffLab, type DiffLab } from './corpus/lab.js';
import { judge, moved, table, type Ctrs, type Row } from './corpus/report.js';

const { skip } = privileged();

const BASELINE: [string, number][] = [
  ['net.ipv4.conf.all.rp_filter', 0],
  ['net.ipv4.conf.r1.rp_filter', 0],
  ['net.ipv4.fib_multipath_hash_policy', 0],
  ['net.ipv6.fib_multipath_hash_policy', 0],
  ['net.ipv4.fib_multipath_hash_fields', 0x0007],
  ['net.ipv6.fib_multipath_hash_fields', 0x0007],
];

function policy(n: number): Scenario {
  const fields: [string, number][] =
    n === 3
      ? [
          ['net.ipv4.fib_multipath_hash_fields', 0x0037],
          ['net.ipv6.fib_multipath_hash_fields', 0x003f],
        ]
      : [];
  return {
    name: `ecmp-p${n}`,
    sysctls: [
      ['net.ipv4.fib_multipath_hash_policy', n],
      ['net.ipv6.fib_multipath_hash_policy', n],
      ...fields,
    ],
    cases: [...ecmpCases4(n), ...ecmpCases6(n)],
  };
}

const SCENARIOS: Scenario[] = [
  {
    name: 'base',
    sysctls: [],
    cases: [...l2Cases(), ...v4Cases(), ...optionCases(false), ...v6Cases()],
  },
  { name: 'options', sysctls: [], config: { ipv4Options: true }, cases: optionCases(true) },
  {
    name: 'rp-strict',
    sysctls: [
      ['net.ipv4.conf.all.rp_filter', 1],
      ['net.ipv4.conf.r1.rp_filter', 1],
    ],
    cases: rpCases(1),
  },
  { name: 'rp-loose', sysctls: [['net.ipv4.conf.all.rp_filter', 2]], cases: rpCases(2) },
  policy(0),
  policy(1),
  policy(2),
  policy(3),
];

/** Reasons counted after a SUCCESS result (no_txport, hairpin, ...). */
function postLookup(): Set<string> {
  const names: readonly string[] = fib.REASON_NAMES;
  const first = (fib as { FK_REASON_POST_LOOKUP?: number }).FK_REASON_POST_LOOKUP;
  return new Set(names.slice(first ?? names.indexOf('no_txport')));
}

const sum = (r: Record<string, { packets: number }>, keep: (k: string) => boolean = () => true) =>
  Object.entries(r).reduce((s, [k, v]) => s + (keep(k) ? v.packets : 0), 0);

/** actions = results + reasons decided before a lookup; redirect = success - later reasons. */
function algebra(all: readonly (Ctrs & { device: string })[], post: ReadonlySet<string>): string[] {
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

describe.skipIf(skip)('differential corpus: kernel-only vs XDP, byte for byte', () => {
  let lab: DiffLab;
  let pinDir: string;
  const all: Row[] = [];
  const post = postLookup();

  beforeAll(() => {
    lab = makeDiffLab('dc');
    pinDir = privateBpffs();
  });

  afterAll(() => {
    const diffs = all.filter((r) => r.problems.length > 0).length;
    const dev = all.filter((r) => r.c.deviation !== undefined).length;
    const fwd = all.filter((r) => r.moves.includes('actions.redirect+1')).length;
    console.log(
      `differential corpus: ${all.length} frames in ${SCENARIOS.length} scenarios; ${fwd} forwarded in XDP, ${all.length - fwd} passed to the kernel; ${dev} documented deviations; ${diffs} with problems`,
    );
  });

  for (const s of SCENARIOS) {
    it(`${s.name}: ${s.cases.length} frames leave the router identically`, async () => {
      for (const [k, v] of [...BASELINE, ...s.sysctls]) sysctl(lab.router, k, v);
      const kernel = [];
      for (const cs of s.cases) kernel.push(await lab.send(cs.frame));

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
        expect(x.health()).toEqual({ ok: true, reasons: [] });
        const r1 = () => x.counters().find((d) => d.device === 'r1') as Ctrs;
        for (const [i, cs] of s.cases.entries()) {
          const before = r1();
          const out = await lab.send(cs.frame);
          const moves = moved(before, r1());
          rows.push(judge(s.name, cs, kernel[i] ?? [], out, moves, post));
          for (const b of algebra(x.counters(), post)) broken.push(`after "${cs.name}": ${b}`);
        }
      } finally {
        await x.stop();
      }
      all.push(...rows);
      console.log(table(rows));
      expect(broken.slice(0, 5)).toEqual([]);
      expect(
        rows
          .filter((r) => r.problems.length > 0)
          .map((r) => `${r.c.name}: ${r.problems.join('; ')}`),
      ).toEqual([]);
    });
  }
});
