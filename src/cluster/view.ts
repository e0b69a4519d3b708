// This node's mirror of the cluster keys: filled by a full read, kept current by the watch
// and by this node's own successful writes ("read your writes"). Each key remembers the
// revision of the last change applied to it (tombstones too), so a late event or a read
// that started before our own write can never roll a key back.
import {
  decodeDesired,
  decodeFenced,
  decodeMember,
  decodeOwner,
  type DesiredIp,
  type FencedInfo,
  type KeyLayout,
  type MemberInfo,
} from './keys.js';
import type { StoredKv, WatchEvent } from './store.js';

interface Raw {
  value: string | undefined; // undefined: deleted (tombstone)
  lease: string;
  revision: number;
}

export interface ViewMember extends MemberInfo {
  readonly lease: string;
  /** Clock ms at which this node first saw this registration (same lease). */
  readonly seenAt: number;
}

export interface ViewOwner {
  readonly node: string;
  readonly lease: string;
  readonly revision: number;
}

export class ClusterView {
  readonly #layout: KeyLayout;
  readonly #raw = new Map<string, Raw>();
  readonly #seen = new Map<string, { lease: string; at: number }>();
  readonly #problems = new Map<string, string>();
  revision = 0;
  members = new Map<string, ViewMember>();
  desired = new Map<string, DesiredIp>();
  owners = new Map<string, ViewOwner>();
  /** Silent members whose lease was revoked (node → what and how long to cool). */
  fenced = new Map<string, FencedInfo>();
  /** Members drained by an operator (cordon/<node>): they hold nothing. */
  cordoned = new Set<string>();

  constructor(layout: KeyLayout) {
    this.#layout = layout;
  }

  /** Malformed keys or values seen (key → what is wrong), for status and logs. */
  get problems(): ReadonlyMap<string, string> {
    return this.#problems;
  }

  /** Replaces the view with a full read at `revision` (newer local changes are kept). */
  reset(kvs: readonly StoredKv[], revision: number, now: number): void {
    const seen = new Set<string>();
    for (const kv of kvs) {
      seen.add(kv.key);
      this.#set(kv.key, { value: kv.value, lease: kv.lease, revision: kv.modRevision });
    }
    for (const [key, raw] of this.#raw) {
      if (seen.has(key) || raw.revision > revision) continue;
      this.#raw.delete(key); // gone at the read's revision
    }
    for (const [key, raw] of this.#raw)
      if (raw.value === undefined && raw.revision <= revision) this.#raw.delete(key);
    this.revision = Math.max(this.revision, revision);
    this.#derive(now);
  }

  /** Applies watch events; returns true when something changed. */
  apply(events: readonly WatchEvent[], revision: number, now: number): boolean {
    let changed = false;
    for (const e of events) {
      const raw: Raw =
        e.type === 'put'
          ? { value: e.value, lease: e.lease, revision: e.modRevision }
          : { value: undefined, lease: '0', revision: e.modRevision };
      changed = this.#set(e.key, raw) || changed;
    }
    this.revision = Math.max(this.revision, revision);
    if (changed) this.#derive(now);
    return changed;
  }

  /** Records this node's own write (a claim or a release) at `revision`. */
  local(
    key: string,
    value: string | undefined,
    lease: string,
    revision: number,
    now: number,
  ): void {
    if (this.#set(key, { value, lease, revision })) this.#derive(now);
  }

  #set(key: string, raw: Raw): boolean {
    const old = this.#raw.get(key);
    if (old && old.revision > raw.revision) return false;
    if (old && old.revision === raw.revision && old.value === raw.value) return false;
    this.#raw.set(key, raw);
    return true;
  }

  #derive(now: number): void {
    const members = new Map<string, ViewMember>();
    const desired = new Map<string, DesiredIp>();
    const owners = new Map<string, ViewOwner>();
    const fenced = new Map<string, FencedInfo>();
    const cordoned = new Set<string>();
    this.#problems.clear();
    for (const [key, raw] of this.#raw) {
      if (raw.value === undefined) continue;
      const k = this.#layout.parse(key);
      if (!k) {
        this.#problems.set(key, 'not a fibkeeper key (ignored)');
        continue;
      }
      if (k.kind === 'member') {
        const m = decodeMember(k.name, raw.value);
        if (m instanceof Error) {
          this.#problems.set(key, m.message);
          continue;
        }
        const s = this.#seen.get(k.name);
        const seenAt = s && s.lease === raw.lease ? s.at : now;
        members.set(k.name, { ...m, lease: raw.lease, seenAt });
      } else if (k.kind === 'ip') {
        const d = decodeDesired(k.ip, raw.value);
        if (d instanceof Error) this.#problems.set(key, d.message);
        else desired.set(k.ip, d);
      } else if (k.kind === 'owner') {
        const node = decodeOwner(k.ip, raw.value);
        if (node instanceof Error) this.#problems.set(key, node.message);
        else owners.set(k.ip, { node, lease: raw.lease, revision: raw.revision });
      } else if (k.kind === 'fenced') {
        const f = decodeFenced(k.name, raw.value);
        if (f instanceof Error) this.#problems.set(key, f.message);
        else fenced.set(k.name, f);
      } else {
        cordoned.add(k.name);
      }
    }
    this.#seen.clear();
    for (const m of members.values()) this.#seen.set(m.name, { lease: m.lease, at: m.seenAt });
    this.members = members;
    this.desired = desired;
    this.owners = owners;
    this.fenced = fenced;
    this.cordoned = cordoned;
  }
}
