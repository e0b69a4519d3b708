// The keys cluster mode keeps in etcd, under one prefix (cluster.prefix, "/fibkeeper/"):
//
//   <prefix>members/<node>   {"labels":{…},"ips":[…]}       bound to the node's lease
//   <prefix>ips/<ip>         {"nodes":[…],"labels":{…}}     desired, no lease (operators)
//   <prefix>owners/<ip>      {"node":"<node>"}               bound to the owner's lease
//
// An owner key is written (created, deleted) only by the node it names, and only with a
// transaction that checks its lease; operators add and remove `ips/` keys. Values are
// JSON; a key or value that does not parse is ignored (and reported), never trusted.
import { InvalidArgumentError } from '../errors/index.js';
import { canonicalIp, validateUnicastIp } from '../ipaddr/index.js';
import type { Eligibility } from './placement.js';

export interface MemberInfo {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The node's own IPs (forwardable cluster-wide, owner `cluster`). */
  readonly ips: readonly string[];
}

export interface DesiredIp {
  readonly ip: string;
  readonly eligible: Eligibility;
}

export type ParsedKey =
  { kind: 'member'; name: string } | { kind: 'ip'; ip: string } | { kind: 'owner'; ip: string };

const NODE_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;
const LABEL_KEY = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/;

/** Throws InvalidArgumentError unless `name` can name a node (a DNS-like name). */
export function validateNodeName(name: string, what = 'node name'): string {
  if (!NODE_NAME.test(name)) {
    throw new InvalidArgumentError(
      `${what} ${JSON.stringify(name)} is not valid: use 1-253 letters, digits, '.', '_' or '-', starting and ending with a letter or digit`,
    );
  }
  return name;
}

/** Checks labels (Kubernetes-like keys and values). */
export function validateLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    if (!LABEL_KEY.test(k))
      throw new InvalidArgumentError(`label key ${JSON.stringify(k)} is not valid`);
    if (typeof v !== 'string' || !LABEL_VALUE.test(v)) {
      throw new InvalidArgumentError(
        `label ${k}: value ${JSON.stringify(v)} is not valid (up to 63 letters, digits, '.', '_', '-')`,
      );
    }
    out[k] = v;
  }
  return out;
}

/** Parses "k=v" strings (config and flags) into labels. */
export function parseLabelList(items: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0)
      throw new InvalidArgumentError(`label ${JSON.stringify(item)}: write it as key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return validateLabels(out);
}

/** The prefix, checked and ending in '/'. */
export function normalizePrefix(prefix: string): string {
  if (!prefix.startsWith('/') || /\s/.test(prefix)) {
    throw new InvalidArgumentError(
      `key prefix ${JSON.stringify(prefix)}: must start with '/' and contain no spaces`,
    );
  }
  return prefix.endsWith('/') ? prefix : `${prefix}/`;
}

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
    if (kind === 'members') return NODE_NAME.test(name) ? { kind: 'member', name } : undefined;
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
  return JSON.stringify({ labels: m.labels, ips: m.ips });
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
  return { name, labels, ips: good };
}

export function encodeDesired(e: Eligibility): string {
  const doc: { nodes?: readonly string[]; labels?: Readonly<Record<string, string>> } = {};
  if (e.nodes && e.nodes.length > 0) doc.nodes = e.nodes;
  if (e.labels && Object.keys(e.labels).length > 0) doc.labels = e.labels;
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
  return { ip, eligible: { nodes, labels } };
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
