// The policy routing rules, from rule events (or dumps): are they the kernel's defaults?
// Only then is a FIB lookup a function of the routes containing the destination alone,
// which is what lets the calculator share one lookup among many IPs (see share.ts). Any
// other rule (a selector on the destination, source, mark, interface, uid, port; a goto, a
// suppressor, a VRF's l3mdev rule; even a default one removed) turns sharing off for its
// family, and every change of the rule set makes the calculator look everything up again.
import {
  AF_INET,
  AF_INET6,
  FR_ACT_TO_TBL,
  RT_TABLE_DEFAULT,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
  type Rule,
} from '../netlink/index.js';

export interface RuleListener {
  /** The rule set changed (a rule added or removed, after the first load). */
  rulesChanged(): void;
}

/** The default rules of a new namespace, as "priority/table", per family. */
const DEFAULTS: Readonly<Record<4 | 6, readonly string[]>> = {
  4: [`0/${RT_TABLE_LOCAL}`, `32766/${RT_TABLE_MAIN}`, `32767/${RT_TABLE_DEFAULT}`],
  6: [`0/${RT_TABLE_LOCAL}`, `32766/${RT_TABLE_MAIN}`],
};

/** 0xffffffff: the kernel's "unset" (-1) for the suppressors. */
const UNSET = 0xffffffff;

/**
 * "priority/table" for a rule that only says "look up table T" (no selector, no suppressor,
 * not inverted); undefined for any other rule. The protocol is not part of the meaning.
 */
export function plainLookup(r: Rule): string | undefined {
  const selectors =
    r.dstLen !== 0 ||
    r.srcLen !== 0 ||
    r.tos !== 0 ||
    r.flags !== 0 ||
    r.iifname !== undefined ||
    r.oifname !== undefined ||
    r.goto !== undefined ||
    (r.fwmark !== undefined && r.fwmark !== 0) ||
    (r.fwmask !== undefined && r.fwmask !== 0) ||
    r.flow !== undefined ||
    r.tunId !== undefined ||
    (r.suppressIfgroup !== undefined && r.suppressIfgroup !== UNSET) ||
    (r.suppressPrefixlen !== undefined && r.suppressPrefixlen !== UNSET) ||
    (r.l3mdev !== undefined && r.l3mdev !== 0) ||
    r.uidRange !== undefined ||
    r.ipProto !== undefined ||
    r.sportRange !== undefined ||
    r.dportRange !== undefined ||
    (r.other !== undefined && r.other.length > 0);
  if (selectors || r.action !== FR_ACT_TO_TBL) return undefined;
  return `${r.priority ?? 0}/${r.table}`;
}

/** Every field of a rule, as one string: rules are counted by identity. */
function identity(r: Rule): string {
  // Buffers (raw attributes) serialize through their toJSON; bigints need a hand.
  return JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

const familyOf = (r: Rule): 4 | 6 | undefined =>
  r.family === AF_INET ? 4 : r.family === AF_INET6 ? 6 : undefined;

export class RuleTracker {
  readonly #rules: Record<4 | 6, Map<string, { rule: Rule; count: number }>> = {
    4: new Map(),
    6: new Map(),
  };
  readonly #defaults: Record<4 | 6, boolean> = { 4: false, 6: false };
  #listener: RuleListener | undefined = undefined;
  #loaded = false;

  setListener(l: RuleListener | undefined): void {
    this.#listener = l;
  }

  /**
   * The rules of `family` are exactly the kernel's defaults: routing is table-only. False
   * until the first dump is loaded.
   */
  tableOnly(family: 4 | 6): boolean {
    return this.#defaults[family];
  }

  /** The rules of one family (for status and tests). */
  list(family: 4 | 6): Rule[] {
    const out: Rule[] = [];
    for (const { rule, count } of this.#rules[family].values()) {
      for (let i = 0; i < count; i++) out.push(rule);
    }
    return out;
  }

  /** A rule event (multicast-routing families are ignored). */
  apply(kind: 'new' | 'del', r: Rule): void {
    const family = familyOf(r);
    if (family === undefined) return;
    const m = this.#rules[family];
    const id = identity(r);
    const cur = m.get(id);
    if (kind === 'new') {
      if (cur === undefined) m.set(id, { rule: r, count: 1 });
      else cur.count++;
    } else {
      if (cur === undefined) return;
      if (--cur.count === 0) m.delete(id);
    }
    this.#changed();
  }

  /** Replaces the rules with a dump; the listener hears of it when the set differs. */
  load(rules: readonly Rule[]): void {
    const before = this.#fingerprint();
    for (const f of [4, 6] as const) this.#rules[f].clear();
    for (const r of rules) {
      const family = familyOf(r);
      if (family === undefined) continue;
      const m = this.#rules[family];
      const id = identity(r);
      const cur = m.get(id);
      if (cur === undefined) m.set(id, { rule: r, count: 1 });
      else cur.count++;
    }
    const first = !this.#loaded;
    this.#loaded = true;
    this.#evaluate();
    if (!first && this.#fingerprint() !== before) this.#listener?.rulesChanged();
  }

  #changed(): void {
    this.#evaluate();
    if (this.#loaded) this.#listener?.rulesChanged();
  }

  #evaluate(): void {
    for (const f of [4, 6] as const) {
      const got: string[] = [];
      let plain = true;
      for (const { rule, count } of this.#rules[f].values()) {
        const p = plainLookup(rule);
        if (p === undefined) plain = false;
        for (let i = 0; i < count; i++) got.push(p ?? '');
      }
      got.sort();
      const want = [...DEFAULTS[f]].sort();
      this.#defaults[f] =
        this.#loaded && plain && got.length === want.length && got.every((x, i) => x === want[i]);
    }
  }

  #fingerprint(): string {
    const parts: string[] = [];
    for (const f of [4, 6] as const) {
      for (const [id, { count }] of this.#rules[f]) parts.push(`${f} ${count} ${id}`);
    }
    return parts.sort().join('\n');
  }
}
