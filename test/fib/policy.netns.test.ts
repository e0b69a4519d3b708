// The node's own policy in the differential corpus: nftables, iptables (nft and legacy), tc,
// xfrm and marks on the router, each frame kernel-only and with XDP, byte for byte, the
// reason counted, and the node's own counters moved alike. Under xdp.nodePolicy: bypass the
// same frames differ (the deviation the README lists for that choice).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateBpffs } from '../helpers/cleanup.js';
import { privileged } from '../helpers/netns.js';
import { policyScenarios, rpCacheScenario } from './corpus/cases-policy.js';
import { makeDiffLab, type DiffLab } from './corpus/lab.js';
import { table, type Row } from './corpus/report.js';
import { problems, runScenario } from './corpus/runner.js';
import { tcDropObject, tcxTool } from './corpus/tcprog.js';

const { skip } = privileged();

const BASELINE: [string, number][] = [
  ['net.ipv4.conf.all.rp_filter', 0],
  ['net.ipv4.conf.r1.rp_filter', 0],
];

describe.skipIf(skip)("the node's policy: kernel-only vs XDP, byte for byte", () => {
  let lab: DiffLab;
  let pinDir: string;
  const all: Row[] = [];
  const scenarios = [...policyScenarios(), rpCacheScenario()];

  beforeAll(() => {
    lab = makeDiffLab('pol');
    pinDir = privateBpffs();
    // built here, outside any test: they live as long as the file
    tcDropObject();
    tcxTool();
  });

  afterAll(() => {
    const fwd = all.filter((r) => r.moves.includes('actions.redirect+1')).length;
    console.log(
      `policy corpus: ${all.length} frames in ${scenarios.length} scenarios; ${fwd} forwarded in XDP, ${all.length - fwd} passed to the kernel; ${all.filter((r) => r.problems.length > 0).length} with problems`,
    );
  });

  for (const s of scenarios) {
    it(`${s.name}: ${s.cases.length} frames leave the router identically`, async (ctx) => {
      const why = s.unsupported?.(lab);
      if (why !== undefined) {
        console.log(`skipping ${s.name}: ${why}`);
        ctx.skip();
      }
      const { rows, broken, counters } = await runScenario(lab, s, pinDir, BASELINE);
      all.push(...rows);
      console.log(table(rows));
      expect(broken.slice(0, 5)).toEqual([]);
      expect(problems(rows)).toEqual([]);
      if (s.counters !== undefined) {
        expect(counters?.xdp).toEqual(counters?.kernel);
        expect(Object.values(counters?.kernel ?? {}).some((n) => n > 0)).toBe(true);
      }
    });
  }
});
