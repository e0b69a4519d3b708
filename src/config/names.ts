// The formats of the names cluster mode puts in etcd keys and values: node names, labels
// and the key prefix. The config checks cluster.* options with them and cluster mode checks
// what the API and etcd hand it, so they live here, below both.
import { InvalidArgumentError } from '../errors/index.js';

const NODE_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;
const LABEL_KEY = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/;

/** Whether `name` can name a node. */
export function isNodeName(name: string): boolean {
  return NODE_NAME.test(name);
}

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
