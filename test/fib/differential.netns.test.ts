// The differential corpus: every crafted frame is sent through the router twice — once with
// only the kernel forwarding, once with fibkeeper's XdpForwarder attached to every router
// device — and what leaves the router at every egress is compared byte for byte. For the
// XDP run the counters of the ingress device must have moved exactly as the case says
// (forwarded in XDP, or passed with a named reason or lookup result), and the counter
// algebra must hold on every device after every frame. The kernel is the reference: zero
// differences, except the deviations the README lists (each checked to still differ).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateBpffs } from '../helpers/cleanup.js';
import { privileged } from '../helpers/netns.js';
import type { Scenario } from './corpus/case.js';
import { ecmpCases4, ecmpCases6, rpCases } from './corpus/cases-ecmp.js';
import { l2Cases, optionCases, v4Cases } from './corpus/cases-v4.js';
import { v6Cases } from './corpus/cases-v6.js';
import { makeDiffLab, type DiffLab } from './corpus/lab.js';
import { table, type Row } from './corpus/report.js';
import { problems, runScenario } from './corpus/runner.js';

const { skip } = privileged();

const BASELINE: [string, number][] = [
  ['net.ipv4.conf.all.rp_filter', 0],
  ['net.ipv4.conf.r1.rp_filter', 0],
  ['net.ipv4.conf.r2.forwarding', 1],
  ['net.ipv4.conf.r3.forwarding', 1],
  ['net.ipv4.conf.r4.forwarding', 1],
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
  {
    // the kernel's reverse-path check does not look at forwarding on the egress device
    name: 'rp-strict-egress-forwarding-0',
    sysctls: [
      ['net.ipv4.conf.all.rp_filter', 1],
      ['net.ipv4.conf.r1.rp_filter', 1],
      ['net.ipv4.conf.r2.forwarding', 0],
      ['net.ipv4.conf.r3.forwarding', 0],
      ['net.ipv4.conf.r4.forwarding', 0],
    ],
    cases: rpCases(1),
  },
  policy(0),
  policy(1),
  policy(2),
  policy(3),
];

describe.skipIf(skip)('differential corpus: kernel-only vs XDP, byte for byte', () => {
  let lab: DiffLab;
  let pinDir: string;
  const all: Row[] = [];

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
      const { rows, broken } = await runScenario(lab, s, pinDir, BASELINE);
      all.push(...rows);
      console.log(table(rows));
      expect(broken.slice(0, 5)).toEqual([]);
      expect(problems(rows)).toEqual([]);
    });
  }
});
