// Policy routing rules through NetlinkHandle, compared field by field with `ip -j -d rule`,
// and rule events on the `rule` groups.
import { spawnSync } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  AF_INET,
  AF_INET6,
  FIB_RULE_IIF_DETACHED,
  FIB_RULE_INVERT,
  FIB_RULE_OIF_DETACHED,
  FR_ACT_GOTO,
  FR_ACT_NOP,
  FR_ACT_TO_TBL,
  FR_ACT_UNREACHABLE,
  NetlinkError,
  NetlinkHandle,
  protocolName,
  RTNL_FAMILY_IPMR,
  RTNL_FAMILY_IP6MR,
  RTPROT_STATIC,
  ruleActionName,
  tableName,
  type Rule,
  type SubscriptionEvent,
} from '../../src/netlink/index.js';
import { ip, ipJson, makeNetns, privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();

function open(netns: string): NetlinkHandle {
  const h = NetlinkHandle.open({ netns });
  onTestFinished(() => h.close());
  return h;
}

const hex = (n: number): string => `0x${n.toString(16)}`;

/** A rule as `ip -j -d rule show` prints it (the fields these tests use). */
function asIp(r: Rule): Record<string, unknown> {
  const host = r.family === AF_INET6 ? 128 : 32;
  const o: Record<string, unknown> = { priority: r.priority ?? 0 };
  if (r.flags & FIB_RULE_INVERT) o.not = null;
  o.src = r.src ?? 'all';
  if (r.src !== undefined && r.srcLen !== host) o.srclen = r.srcLen;
  if (r.dst !== undefined) o.dst = r.dst;
  if (r.dst !== undefined && r.dstLen !== host) o.dstlen = r.dstLen;
  if (r.tos !== 0) o.tos = hex(r.tos);
  if (r.fwmark !== undefined) o.fwmark = hex(r.fwmark);
  if (r.fwmask !== undefined && r.fwmask !== 0xffffffff) o.fwmask = hex(r.fwmask);
  if (r.iifname !== undefined) o.iif = r.iifname;
  if (r.flags & FIB_RULE_IIF_DETACHED) o.iif_detached = null;
  if (r.oifname !== undefined) o.oif = r.oifname;
  if (r.flags & FIB_RULE_OIF_DETACHED) o.oif_detached = null;
  if (r.uidRange) Object.assign(o, { uid_start: r.uidRange.start, uid_end: r.uidRange.end });
  if (r.ipProto !== undefined) o.ipproto = r.ipProto === 6 ? 'tcp' : String(r.ipProto);
  if (r.sportRange) {
    const { start, end } = r.sportRange;
    Object.assign(o, start === end ? { sport: start } : { sport_start: start, sport_end: end });
  }
  if (r.dportRange) {
    const { start, end } = r.dportRange;
    Object.assign(o, start === end ? { dport: start } : { dport_start: start, dport_end: end });
  }
  if (r.action === FR_ACT_TO_TBL && r.table !== 0) o.table = tableName(r.table);
  else if (r.action === FR_ACT_GOTO) o.goto = r.goto;
  else if (r.action === FR_ACT_NOP) o.nop = null;
  else if (r.action !== FR_ACT_TO_TBL) o.action = ruleActionName(r.action);
  if (r.suppressPrefixlen !== undefined && r.suppressPrefixlen !== 0xffffffff) {
    o.suppress_prefixlen = r.suppressPrefixlen;
  }
  if (r.flow !== undefined) {
    o.flow_to = String(r.flow & 0xffff);
    if (r.flow >>> 16) o.flow_from = String(r.flow >>> 16);
  }
  if (r.protocol !== undefined) o.protocol = protocolName(r.protocol);
  return o;
}

/** The multicast routing rules `ip mrule` shows; [] where the kernel has no such family. */
function mrules(ns: string, family: '-4' | '-6'): unknown[] {
  const r = spawnSync('ip', ['-n', ns, '-j', family, 'mrule', 'show'], { encoding: 'utf8' });
  if (r.status !== 0) {
    if (/Address family not supported/.test(r.stderr)) {
      console.log(`ip ${family} mrule: not supported by this kernel (no multicast routing)`);
      return [];
    }
    throw new Error(`ip ${family} mrule show: ${r.stderr.trim()}`);
  }
  return JSON.parse(r.stdout.trim() || '[]') as unknown[];
}

function compare(ns: string, family: number, ours: Rule[]): void {
  const theirs = ipJson<Record<string, unknown>[]>(
    ns,
    family === AF_INET6 ? '-6' : '-4',
    '-d',
    'rule',
    'show',
  );
  expect(ours.map(asIp)).toEqual(theirs);
}

describe.skipIf(skip)('rules', () => {
  it('ruleList agrees with ip -j rule show: the defaults of a new namespace', async () => {
    const ns = makeNetns('nl-rule0');
    const h = open(ns);
    const v4 = await h.ruleList({ family: AF_INET });
    const v6 = await h.ruleList({ family: AF_INET6 });
    compare(ns, AF_INET, v4);
    compare(ns, AF_INET6, v6);
    expect(v4.map((r) => [r.priority ?? 0, tableName(r.table)])).toEqual([
      [0, 'local'],
      [32766, 'main'],
      [32767, 'default'],
    ]);
    expect(v6.map((r) => [r.priority ?? 0, tableName(r.table)])).toEqual([
      [0, 'local'],
      [32766, 'main'],
    ]);
    // Without a family: the multicast routing rules (ip mrule) too, as many as `ip mrule`
    // shows — none on a kernel without CONFIG_IP_MROUTE / CONFIG_IPV6_MROUTE.
    expect((await h.ruleList()).map((r) => r.family)).toEqual([
      ...v4.map(() => AF_INET),
      ...mrules(ns, '-4').map(() => RTNL_FAMILY_IPMR),
      ...mrules(ns, '-6').map(() => RTNL_FAMILY_IP6MR),
      ...v6.map(() => AF_INET6),
    ]);
  });

  it('ruleAdd and ip rule add give what ip shows; ruleDel removes', async () => {
    const ns = makeNetns('nl-rule1');
    const h = open(ns);
    ip(ns, 'link', 'add', 'r0', 'type', 'veth', 'peer', 'name', 'r1');
    await h.ruleAdd({ from: '10.0.0.0/8', to: '192.168.0.0/16', priority: 100, table: 100 });
    await h.ruleAdd({
      not: true,
      fwmark: 0x10,
      fwmask: 0xff,
      iif: 'r0',
      priority: 200,
      table: 300,
    });
    await h.ruleAdd({ to: '1.2.3.4', action: FR_ACT_UNREACHABLE, priority: 300 });
    await h.ruleAdd({ priority: 400, action: FR_ACT_GOTO, goto: 500 });
    await h.ruleAdd({
      priority: 500,
      ipProto: 6,
      dportRange: { start: 80, end: 90 },
      sportRange: { start: 1000, end: 1000 },
      uidRange: { start: 10, end: 20 },
      suppressPrefixlen: 0,
      protocol: RTPROT_STATIC,
    });
    ip(ns, 'rule', 'add', 'pref', '600', 'tos', '0x10', 'oif', 'gone0', 'blackhole');
    ip(ns, 'rule', 'add', 'pref', '800', 'fwmark', '5', 'realms', '3/4', 'table', '9');
    ip(ns, 'rule', 'add', 'pref', '900', 'table', '100000');
    await h.ruleAdd({ from: '2001:db8::/32', priority: 50, table: 7 });
    const v4 = await h.ruleList({ family: AF_INET });
    compare(ns, AF_INET, v4);
    compare(ns, AF_INET6, await h.ruleList({ family: AF_INET6 }));
    expect(v4.find((r) => r.priority === 900)?.table).toBe(100000);
    expect(v4.find((r) => r.priority === 600)?.flags).toBe(FIB_RULE_OIF_DETACHED);

    await h.ruleDel({ priority: 100 });
    await h.ruleDel({ from: '2001:db8::/32', priority: 50 });
    const after = await h.ruleList();
    expect(after.some((r) => r.priority === 100)).toBe(false);
    expect(after.filter((r) => r.family === AF_INET6)).toHaveLength(2);
    const gone = await h.ruleDel({ priority: 100 }).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(NetlinkError);
    expect((gone as NetlinkError).errnoName).toBe('ENOENT');
  });

  it('reports new and del rule events for both families', async () => {
    const ns = makeNetns('nl-rule2');
    const h = open(ns);
    const events: SubscriptionEvent[] = [];
    const sub = h.subscribe(['rule'], { onEvent: (e) => events.push(e) });
    onTestFinished(() => sub.close());
    ip(ns, 'rule', 'add', 'pref', '10', 'to', '10.9.0.0/16', 'table', '10');
    ip(ns, '-6', 'rule', 'add', 'pref', '11', 'to', '2001:db8:9::/48', 'table', '11');
    ip(ns, 'rule', 'del', 'pref', '10');
    const rules = await waitFor(() => {
      const r = events.flatMap((e) => (e.kind !== 'overflow' && e.object === 'rule' ? [e] : []));
      return r.length === 3 ? r : undefined;
    });
    expect(
      rules.map((e) => [
        e.kind,
        e.msg.family,
        e.msg.priority,
        e.msg.dst,
        e.msg.dstLen,
        e.msg.table,
      ]),
    ).toEqual([
      ['new', AF_INET, 10, '10.9.0.0', 16, 10],
      ['new', AF_INET6, 11, '2001:db8:9::', 48, 11],
      ['del', AF_INET, 10, '10.9.0.0', 16, 10],
    ]);
    const six = h.subscribe(['ipv6-rule'], { onEvent: () => undefined });
    expect(six.groups).toEqual([19]);
    six.close();
  });
});
