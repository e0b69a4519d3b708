import { describe, expect, it } from 'vitest';
import {
  AF_INET,
  AF_INET6,
  FIB_RULE_INVERT,
  FR_ACT_TO_TBL,
  FR_ACT_UNREACHABLE,
  RTNL_FAMILY_IPMR,
  RTPROT_KERNEL,
  type Rule,
} from '../netlink/index.js';
import { plainLookup, RuleTracker } from './rules.js';

/** A rule as the kernel dumps it: "lookup TABLE" at PRIORITY, no selector. */
function rule(family: number, priority: number, table: number, over: Partial<Rule> = {}): Rule {
  const r: Rule = {
    family,
    dstLen: 0,
    srcLen: 0,
    tos: 0,
    table,
    action: FR_ACT_TO_TBL,
    flags: 0,
    suppressPrefixlen: 0xffffffff,
    protocol: RTPROT_KERNEL,
    ...over,
  };
  if (priority !== 0) r.priority = priority;
  return r;
}

const v4 = () => [rule(AF_INET, 0, 255), rule(AF_INET, 32766, 254), rule(AF_INET, 32767, 253)];
const v6 = () => [rule(AF_INET6, 0, 255), rule(AF_INET6, 32766, 254)];

function tracker() {
  const t = new RuleTracker();
  let changes = 0;
  t.setListener({ rulesChanged: () => changes++ });
  return { t, changes: () => changes };
}

describe('RuleTracker', () => {
  it('routing is table-only with exactly the default rules, per family', () => {
    const { t, changes } = tracker();
    expect(t.tableOnly(4)).toBe(false); // nothing loaded yet
    t.load([...v4(), ...v6(), { ...rule(RTNL_FAMILY_IPMR, 32767, 253) }]);
    expect([t.tableOnly(4), t.tableOnly(6)]).toEqual([true, true]);
    expect(changes()).toBe(0); // the first load is no change
    expect(t.list(4)).toHaveLength(3);
  });

  it('any other rule, or a default one missing, turns sharing off for its family', () => {
    const { t, changes } = tracker();
    t.load([...v4(), ...v6()]);
    const extra = rule(AF_INET, 100, 100, { dstLen: 24, dst: '10.9.0.0' });
    t.apply('new', extra);
    expect([t.tableOnly(4), t.tableOnly(6)]).toEqual([false, true]);
    expect(changes()).toBe(1);
    t.apply('del', extra);
    expect(t.tableOnly(4)).toBe(true);
    expect(changes()).toBe(2);
    // The classic "local table after main" move: delete pref 0, add it at 1000.
    t.apply('del', rule(AF_INET6, 0, 255));
    expect(t.tableOnly(6)).toBe(false);
    t.apply('new', rule(AF_INET6, 1000, 255));
    expect(t.tableOnly(6)).toBe(false);
    // Deleting a rule never seen changes nothing.
    t.apply('del', rule(AF_INET, 5, 5));
    expect(changes()).toBe(4);
  });

  it('a reload tells the listener only when the set differs', () => {
    const { t, changes } = tracker();
    t.load([...v4(), ...v6()]);
    t.load([...v6(), ...v4()]);
    expect(changes()).toBe(0);
    t.load([...v4(), ...v6(), rule(AF_INET, 10, 10, { fwmark: 1, fwmask: 0xffffffff })]);
    expect(changes()).toBe(1);
    expect(t.tableOnly(4)).toBe(false);
  });

  it('what counts as a plain lookup rule', () => {
    expect(plainLookup(rule(AF_INET, 32766, 254, { protocol: 3 }))).toBe('32766/254');
    expect(plainLookup(rule(AF_INET, 32766, 254, { suppressPrefixlen: 0 }))).toBeUndefined();
    expect(plainLookup(rule(AF_INET, 32766, 254, { flags: FIB_RULE_INVERT }))).toBeUndefined();
    expect(plainLookup(rule(AF_INET, 32766, 254, { action: FR_ACT_UNREACHABLE }))).toBeUndefined();
    expect(plainLookup(rule(AF_INET, 1000, 0, { l3mdev: 1 }))).toBeUndefined();
    expect(plainLookup(rule(AF_INET, 9, 9, { iifname: 'eth0' }))).toBeUndefined();
    expect(plainLookup(rule(AF_INET, 9, 9, { uidRange: { start: 0, end: 9 } }))).toBeUndefined();
    // A selector this codec does not decode (FRA_DSCP, say) is a selector all the same.
    const dscp = { type: 25, value: Buffer.from([8]) };
    expect(plainLookup(rule(AF_INET, 9, 9, { other: [dscp] }))).toBeUndefined();
  });
});
