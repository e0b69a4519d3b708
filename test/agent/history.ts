// A history checker in the style of Jepsen's Knossos, for the control state. Every request
// is recorded with when it was sent (invoke), when its outcome was known (complete), and
// that outcome: `ok` (acknowledged), `fail` (definitely not applied: refused, or 507), or
// `unknown` (the agent died or timed out with it: it may or may not have happened; its
// effect, if any, happened before the agent that received it died). Each request writes
// keys — "fw OWNER IP" (is IP forwardable for OWNER) and "ext IP" — to true or false.
//
// A key's final value is explained when some write of it that did or may have happened
// (ok or unknown) can be the last one: no acknowledged write of that key began after it
// completed. With no acknowledged write at all the initial value (false) explains it too.
// That is linearizability of each key as a register (every acknowledged request took effect
// once, between its invoke and its completion, in an order consistent with real time).

/** A seeded PRNG (mulberry32): a history can be generated again from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Outcome = 'ok' | 'fail' | 'unknown';

export interface Request {
  method: string;
  path: string;
  body: unknown;
  /** Key → value this request writes, if it takes effect. */
  writes: Map<string, boolean>;
  label: string;
}

export interface Op extends Request {
  id: number;
  invoke: number;
  /** When the outcome was known; for `unknown`, when the agent that had it died. */
  complete: number;
  outcome: Outcome;
  detail: string;
}

export interface Pools {
  owners: string[];
  forwardable: string[];
  extip: string[];
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
function sample<T>(r: () => number, xs: readonly T[], n: number): T[] {
  const copy = [...xs];
  const out: T[] = [];
  while (out.length < n && copy.length > 0)
    out.push(copy.splice(Math.floor(r() * copy.length), 1)[0] as T);
  return out;
}

/** One random request: forwardable add/del/set (30/20/10 %) or extip add/del (25/15 %). */
export function randomRequest(r: () => number, p: Pools): Request {
  const x = r();
  const writes = new Map<string, boolean>();
  if (x < 0.6) {
    const owner = pick(r, p.owners);
    if (x < 0.3 || x >= 0.5) {
      const set = x >= 0.5;
      const ips = sample(r, p.forwardable, set ? Math.floor(r() * 5) : 1 + Math.floor(r() * 3));
      if (set) for (const ip of p.forwardable) writes.set(`fw ${owner} ${ip}`, ips.includes(ip));
      else for (const ip of ips) writes.set(`fw ${owner} ${ip}`, true);
      return set
        ? {
            method: 'PUT',
            path: `/v1/owners/${owner}/forwardable`,
            body: { ips },
            writes,
            label: `set ${owner} [${ips.join(' ')}]`,
          }
        : {
            method: 'POST',
            path: '/v1/forwardable',
            body: { owner, ips },
            writes,
            label: `add ${owner} ${ips.join(' ')}`,
          };
    }
    const ips = sample(r, p.forwardable, 1 + Math.floor(r() * 3));
    for (const ip of ips) writes.set(`fw ${owner} ${ip}`, false);
    return {
      method: 'DELETE',
      path: '/v1/forwardable',
      body: { owner, ips },
      writes,
      label: `del ${owner} ${ips.join(' ')}`,
    };
  }
  const add = x < 0.85;
  const ips = sample(r, p.extip, 1 + Math.floor(r() * 2));
  for (const ip of ips) writes.set(`ext ${ip}`, add);
  return {
    method: add ? 'POST' : 'DELETE',
    path: '/v1/extip',
    body: { ips },
    writes,
    label: `extip ${add ? 'add' : 'del'} ${ips.join(' ')}`,
  };
}

export interface Violation {
  key: string;
  final: boolean;
  /** The acknowledged writes that rule the final value out, latest first. */
  why: string[];
}

/** Checks the final value of every key against the history; [] when all are explained. */
export function checkHistory(
  ops: readonly Op[],
  final: (key: string) => boolean,
  keys: Iterable<string>,
): Violation[] {
  const byKey = new Map<string, Op[]>();
  for (const op of ops) {
    if (op.outcome === 'fail') continue;
    for (const k of op.writes.keys()) (byKey.get(k) ?? byKey.set(k, []).get(k))?.push(op);
  }
  const out: Violation[] = [];
  for (const key of keys) {
    const writes = byKey.get(key) ?? [];
    const acked = writes.filter((o) => o.outcome === 'ok');
    const possible = new Set<boolean>();
    if (acked.length === 0) possible.add(false);
    for (const w of writes) {
      if (!acked.some((a) => a.invoke > w.complete)) possible.add(w.writes.get(key) as boolean);
    }
    const value = final(key);
    if (!possible.has(value)) {
      out.push({
        key,
        final: value,
        why: acked
          .sort((a, b) => b.complete - a.complete)
          .slice(0, 3)
          .map(
            (a) =>
              `#${a.id} ${a.label} (${a.invoke.toFixed(1)}-${a.complete.toFixed(1)} ms) acknowledged`,
          ),
      });
    }
  }
  return out;
}

/** Every key the pools can hold. */
export function allKeys(p: Pools): string[] {
  return [
    ...p.owners.flatMap((o) => p.forwardable.map((ip) => `fw ${o} ${ip}`)),
    ...p.extip.map((ip) => `ext ${ip}`),
  ];
}
