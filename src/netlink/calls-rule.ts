// Policy routing rule calls, each the equivalent of an `ip rule` command. The neighbor
// subsystem dumps the rules to tell whether routing is table-only (the default rules).
import { InvalidArgumentError } from '../errors/index.js';
import { afOfText } from '../ipaddr/index.js';
import type { Client } from './client.js';
import {
  AF_INET,
  AF_INET6,
  AF_UNSPEC,
  FIB_RULE_INVERT,
  formatRule,
  FR_ACT_TO_TBL,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REQUEST,
  parseRule,
  RT_TABLE_MAIN,
  RTM_DELRULE,
  RTM_GETRULE,
  RTM_NEWRULE,
  type Rule,
  type RuleRange,
} from './codec/index.js';

/** A rule to add or delete (`ip rule add|del ...`). */
export interface RuleSpec {
  /** AF_INET or AF_INET6; default: the family of `from`/`to`, else AF_INET. */
  family?: number;
  /** `pref N`; the kernel picks one below the last non-default rule when absent (add). */
  priority?: number;
  /** `lookup TABLE`; default main for an add with action lookup. */
  table?: number;
  /** FR_ACT_*; default FR_ACT_TO_TBL (`lookup`). */
  action?: number;
  /** `from PREFIX` ("10.0.0.0/8", a bare address, or "all"). */
  from?: string;
  /** `to PREFIX`. */
  to?: string;
  /** `tos T`. */
  tos?: number;
  /** `iif NAME`. */
  iif?: string;
  /** `oif NAME`. */
  oif?: string;
  /** `fwmark M[/MASK]`. */
  fwmark?: number;
  fwmask?: number;
  /** `not`: invert the selector. */
  not?: boolean;
  /** `goto PREF` (with action FR_ACT_GOTO). */
  goto?: number;
  /** `protocol P`. */
  protocol?: number;
  /** `suppress_prefixlength N`. */
  suppressPrefixlen?: number;
  /** `l3mdev`. */
  l3mdev?: boolean;
  /** `uidrange A-B`. */
  uidRange?: RuleRange;
  /** `ipproto N`. */
  ipProto?: number;
  /** `sport A-B`, `dport A-B`. */
  sportRange?: RuleRange;
  dportRange?: RuleRange;
}

function selector(text: string | undefined, what: string): { ip: string; len: number } | undefined {
  if (text === undefined || text === 'all') return undefined;
  const slash = text.indexOf('/');
  const ip = slash < 0 ? text : text.slice(0, slash);
  const max = afOfText(ip) === AF_INET6 ? 128 : 32;
  const len = slash < 0 ? max : Number(text.slice(slash + 1));
  if (!Number.isInteger(len) || len < 0 || len > max) {
    throw new InvalidArgumentError(`rule: bad ${what} prefix ${JSON.stringify(text)}`);
  }
  return { ip, len };
}

function toRule(s: RuleSpec, del: boolean): Rule {
  const from = selector(s.from, 'from');
  const to = selector(s.to, 'to');
  const sel = from ?? to;
  const family = s.family ?? (sel === undefined ? AF_INET : afOfText(sel.ip));
  if (family !== AF_INET && family !== AF_INET6) {
    throw new InvalidArgumentError(`rule: family must be AF_INET or AF_INET6, got ${family}`);
  }
  for (const sel of [from, to]) {
    if (sel !== undefined && afOfText(sel.ip) !== family) {
      throw new InvalidArgumentError(`rule: ${sel.ip} is not of the rule's family`);
    }
  }
  const action = s.action ?? FR_ACT_TO_TBL;
  const r: Rule = {
    family,
    dstLen: to?.len ?? 0,
    srcLen: from?.len ?? 0,
    tos: s.tos ?? 0,
    table: s.table ?? (!del && action === FR_ACT_TO_TBL && !s.l3mdev ? RT_TABLE_MAIN : 0),
    action: del && s.action === undefined ? 0 : action,
    flags: s.not ? FIB_RULE_INVERT : 0,
  };
  if (s.priority !== undefined) r.priority = s.priority;
  if (to !== undefined) r.dst = to.ip;
  if (from !== undefined) r.src = from.ip;
  if (s.iif !== undefined) r.iifname = s.iif;
  if (s.oif !== undefined) r.oifname = s.oif;
  if (s.fwmark !== undefined) r.fwmark = s.fwmark;
  if (s.fwmask !== undefined) r.fwmask = s.fwmask;
  if (s.goto !== undefined) r.goto = s.goto;
  if (s.protocol !== undefined) r.protocol = s.protocol;
  if (s.suppressPrefixlen !== undefined) r.suppressPrefixlen = s.suppressPrefixlen;
  if (s.l3mdev) r.l3mdev = 1;
  if (s.uidRange !== undefined) r.uidRange = s.uidRange;
  if (s.ipProto !== undefined) r.ipProto = s.ipProto;
  if (s.sportRange !== undefined) r.sportRange = s.sportRange;
  if (s.dportRange !== undefined) r.dportRange = s.dportRange;
  return r;
}

/**
 * ruleList — like `ip rule show` (`ip -4 rule` / `ip -6 rule` with a family). Without a
 * family the kernel also lists the multicast routing rules (RTNL_FAMILY_IPMR/IP6MR).
 */
export async function ruleList(c: Client, filter: { family?: number } = {}): Promise<Rule[]> {
  const req: Rule = {
    family: filter.family ?? AF_UNSPEC,
    dstLen: 0,
    srcLen: 0,
    tos: 0,
    table: 0,
    action: 0,
    flags: 0,
  };
  const all = await c.dump(
    (w) => formatRule(w, RTM_GETRULE, NLM_F_REQUEST, req),
    parseRule,
    'ruleList',
  );
  return all.filter((r) => filter.family === undefined || r.family === filter.family);
}

/** ruleAdd — like `ip rule add [not] [from P] [to P] [iif D] ... [pref N] lookup T`. */
export function ruleAdd(c: Client, spec: RuleSpec): Promise<void> {
  const r = toRule(spec, false);
  return c.ack(
    (w) => formatRule(w, RTM_NEWRULE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL, r),
    `ruleAdd pref ${spec.priority ?? 'auto'}`,
  );
}

/** ruleDel — like `ip rule del [pref N] [selectors...]`: the first rule that matches. */
export function ruleDel(c: Client, spec: RuleSpec): Promise<void> {
  const r = toRule(spec, true);
  return c.ack(
    (w) => formatRule(w, RTM_DELRULE, NLM_F_REQUEST, r),
    `ruleDel pref ${spec.priority ?? 'any'}`,
  );
}
