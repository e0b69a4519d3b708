// The keys cluster mode keeps in etcd, under one prefix (cluster.prefix, "/fibkeeper/"):
//
//   <prefix>members/<node>   {"labels":{…},"ips":[…]}       bound to the node's lease
//   <prefix>ips/<ip>         {"nodes":[…],"labels":{…}}     desired, no lease (operators)
//   <prefix>owners/<ip>      {"node":"<node>"}               bound to the owner's lease
//   <prefix>fenced/<node>    {"lease":"…","ips":[…],"coolMs":N}  bound to a short lease of
//                            the node that wrote it: <node> went silent and its lease was
//                            revoked; its IPs may be answered by its kernel for coolMs more
//   <prefix>cordon/<node>    {"at":"…"}                      no lease (operators: drain)
//
// An owner key is written (created, deleted) only by the node it names, and only with a
// transaction that checks its lease; operators add and remove `ips/` and `cordon/` keys.
// Values are JSON; a key or value that does not parse is ignored (and reported), never
// trusted.
import { canonicalIp, validateUnicastIp } from '../ipaddr/index.js';
import { isNodeName, normalizePrefix } from '../config/index.js';
import { HOLD_MODES, type Eligibility, type HoldMode } from './placement.js';

export interface MemberInfo {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The node's own IPs (forwardable cluster-wide, owner `cluster`). */
  readonly ips: readonly string[];
  /** It can hold IPs now (false: its external interface is down); absent: true. */
  readonly able?: boolean;
  /** Where its peer heartbeat listens (UDP), if it has one. */
  readonly hb?: { readonly ip: string; readonly port: number };
  /** It announces the IPs it holds over BGP: it may hold active-active IPs. Absent: false. */
  readonly bgp?: boolean;
}

/** A silent member whose lease another member revoked: its IPs cool down before a claim. */
export interface FencedInfo {
  readonly node: string;
  /** The revoked lease. */
  readonly lease: string;
  readonly ips: readonly string[];
  /** How long after the revoke the fenced node's kernel may still answer for them, ms. */
  readonly coolMs: number;
}

export interface DesiredIp {
  readonly ip: string;
  readonly eligible: Eligibility;
}

export type ParsedKey =
  | { kind: 'member'; name: string }
  | { kind: 'ip'; ip: string }
  | { kind: 'owner'; ip: string }
  | { kind: 'fenced'; name: string }
  | { kind: 'cordon'; name: string };

export class KeyLayout {
  readonly prefix: string;
  constructor(prefix: string) {
    this.prefix = normalizePrefix(prefix);
  }
  member(name: string): string {
    return `${this.prefix}members/${name}`;
  }
  ip(ip: string): string {
    return `${this.prefix}ips/${ip}`;
  }
  owner(ip: string): string {
    return `${this.prefix}owners/${ip}`;
  }
  fenced(name: string): string {
    return `${this.prefix}fenced/${name}`;
  }
  cordon(name: string): string {
    return `${this.prefix}cordon/${name}`;
  }
  get ipsPrefix(): string {
    return `${this.prefix}ips/`;
  }

  /** What a key under the prefix is; undefined for anything else (ignored). */
  parse(key: string): ParsedKey | undefined {
    if (!key.startsWith(this.prefix)) return undefined;
    const rest = key.slice(this.prefix.length);
    const slash = rest.indexOf('/');
    if (slash < 0) return undefined;
    const kind = rest.slice(0, slash);
    const name = rest.slice(slash + 1);
    if (kind === 'members') return isNodeName(name) ? { kind: 'member', name } : undefined;
    if (kind === 'fenced' || kind === 'cordon') {
      return isNodeName(name) ? { kind, name } : undefined;
    }
    if (kind !== 'ips' && kind !== 'owners') return undefined;
    const ip = canonicalOrUndefined(name);
    if (ip === undefined || ip !== name) return undefined;
    return kind === 'ips' ? { kind: 'ip', ip } : { kind: 'owner', ip };
  }
}

function canonicalOrUndefined(text: string): string | undefined {
  try {
    return canonicalIp(text);
  } catch {
    return undefined;
  }
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function stringArray(x: unknown): string[] | undefined {
  return Array.isArray(x) && x.every((s) => typeof s === 'string') ? x : undefined;
}

function stringRecord(x: unknown): Record<string, string> | undefined {
  if (x === undefined) return {};
  if (!isObject(x)) return undefined;
  return Object.values(x).every((v) => typeof v === 'string')
    ? (x as Record<string, string>)
    : undefined;
}

export function encodeMember(m: Omit<MemberInfo, 'name'>): string {
  return JSON.stringify({
    labels: m.labels,
    ips: m.ips,
    ...(m.able === false ? { able: false } : {}),
    ...(m.hb ? { hb: m.hb } : {}),
    ...(m.bgp === true ? { bgp: true } : {}),
  });
}

/** A member value, or an Error saying what is wrong with it. */
export function decodeMember(name: string, value: string): MemberInfo | Error {
  let doc: unknown;
  try {
    doc = JSON.parse(value);
  } catch {
    return new Error(`member ${name}: value is not JSON`);
  }
  if (!isObject(doc)) return new Error(`member ${name}: value is not an object`);
  const labels = stringRecord(doc['labels']);
  const ips = stringArray(doc['ips'] ?? []);
  if (!labels || !ips) return new Error(`member ${name}: labels or ips malformed`);
  const good = ips.map(canonicalOrUndefined).filter((s): s is string => s !== undefined);
  const hb = doc['hb'];
  const hbOk =
    isObject(hb) &&
    typeof hb['ip'] === 'string' &&
    canonicalOrUndefined(hb['ip']) !== undefined &&
    Number.isInteger(hb['port']) &&
    (hb['port'] as number) > 0 &&
    (hb['port'] as number) < 65536;
  return {
    name,
    labels,
    ips: good,
    ...(doc['able'] === false ? { able: false } : {}),
    ...(hbOk ? { hb: { ip: canonicalIp(hb['ip'] as string), port: hb['port'] as number } } : {}),
    ...(doc['bgp'] === true ? { bgp: true } : {}),
  };
}

export function encodeFenced(f: Omit<FencedInfo, 'node'>): string {
  return JSON.stringify({ lease: f.lease, ips: f.ips, coolMs: f.coolMs });
}

export function decodeFenced(node: string, value: string): FencedInfo | Error {
  try {
    const doc: unknown = JSON.parse(value);
    if (isObject(doc)) {
      const ips = stringArray(doc['ips']);
      const { lease, coolMs } = doc;
      if (typeof lease === 'string' && ips && typeof coolMs === 'number' && coolMs >= 0) {
        const good = ips.map(canonicalOrUndefined).filter((s): s is string => s !== undefined);
        return { node, lease, ips: good, coolMs: Math.min(coolMs, 60_000) };
      }
    }
  } catch {
    // fall through
  }
  return new Error(`fenced ${node}: value malformed`);
}

export function encodeDesired(e: Eligibility): string {
  const doc: {
    nodes?: readonly string[];
    labels?: Readonly<Record<string, string>>;
    mode?: HoldMode;
  } = {};
  if (e.nodes && e.nodes.length > 0) doc.nodes = e.nodes;
  if (e.labels && Object.keys(e.labels).length > 0) doc.labels = e.labels;
  if (e.mode === 'active-active') doc.mode = e.mode;
  return JSON.stringify(doc);
}

export function decodeDesired(ip: string, value: string): DesiredIp | Error {
  if (value.trim() === '') return { ip, eligible: {} };
  let doc: unknown;
  try {
    doc = JSON.parse(value);
  } catch {
    return new Error(`cluster IP ${ip}: value is not JSON`);
  }
  if (!isObject(doc)) return new Error(`cluster IP ${ip}: value is not an object`);
  const nodes = doc['nodes'] === undefined ? [] : stringArray(doc['nodes']);
  const labels = stringRecord(doc['labels']);
  if (!nodes || !labels) return new Error(`cluster IP ${ip}: nodes or labels malformed`);
  const mode = doc['mode'] ?? 'single';
  if (!HOLD_MODES.includes(mode as HoldMode)) {
    return new Error(
      `cluster IP ${ip}: mode ${JSON.stringify(mode)} is not one of ${HOLD_MODES.join(', ')}`,
    );
  }
  return {
    ip,
    eligible: { nodes, labels, ...(mode === 'active-active' ? { mode: 'active-active' } : {}) },
  };
}

export function encodeOwner(node: string): string {
  return JSON.stringify({ node });
}

export function decodeOwner(ip: string, value: string): string | Error {
  try {
    const doc: unknown = JSON.parse(value);
    if (isObject(doc) && typeof doc['node'] === 'string') return doc['node'];
  } catch {
    // fall through
  }
  return new Error(`owner of ${ip}: value malformed`);
}

/** Checks a cluster IP given by a user: a unicast host address, canonical text returned. */
export function validateClusterIp(text: string): string {
  return validateUnicastIp(text).address;
}
