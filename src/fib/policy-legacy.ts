// The legacy iptables / ip6tables tables of a namespace (x_tables, not nftables): which
// exist (/proc/net/ip_tables_names, ip6_tables_names) and, for each, its built-in chains'
// policies and whether it holds anything else, from the kernel's own copy (getsockopt
// IPT_SO_GET_INFO / GET_ENTRIES, the native addon). No netlink event announces a change to
// them: the forwarder polls this.
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from '../errors/index.js';
import { iptablesTable, runInNetns } from '../native/index.js';

/** struct ipt_getinfo (= ip6t_getinfo): name[32], valid_hooks, hook_entry[5], underflow[5], … */
export const SIZEOF_IPT_GETINFO = 84;
const OFF_VALID_HOOKS = 32;
const OFF_UNDERFLOW = 56;
const OFF_NUM_ENTRIES = 76;
/** Where target_offset sits in struct ipt_entry and ip6t_entry. */
export const OFFSETOF_IPT_TARGET_OFFSET = 88;
export const OFFSETOF_IP6T_TARGET_OFFSET = 140;
/** struct xt_entry_target's header; a standard target's verdict (int) follows it. */
export const SIZEOF_XT_ENTRY_TARGET = 32;
/** The verdict of ACCEPT as a standard target stores it (-NF_ACCEPT - 1). */
export const XT_VERDICT_ACCEPT = -2;

export const HOOK_NAMES = ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'] as const;

/** One legacy table, as `iptables-legacy -t NAME -S` would show it. */
export interface LegacyTable {
  family: 4 | 6;
  name: string;
  /** Each built-in chain and its policy (ACCEPT, DROP, or the verdict number). */
  chains: { hook: (typeof HOOK_NAMES)[number]; policy: string }[];
  /** Entries beyond the built-in chains' policies: rules and user chains. */
  extra: number;
}

function verdictName(v: number): string {
  if (v === XT_VERDICT_ACCEPT) return 'ACCEPT';
  if (v === -1) return 'DROP';
  if (v === -4) return 'QUEUE';
  if (v === -5) return 'RETURN';
  return `verdict ${v}`;
}

/** A table from what IPT_SO_GET_INFO and IPT_SO_GET_ENTRIES answered. */
export function parseLegacyTable(
  family: 4 | 6,
  name: string,
  info: Buffer,
  entries: Buffer,
): LegacyTable {
  if (info.length < SIZEOF_IPT_GETINFO) {
    throw new InvalidArgumentError(
      `ipt_getinfo is ${SIZEOF_IPT_GETINFO} bytes, got ${info.length}`,
    );
  }
  const valid = info.readUInt32LE(OFF_VALID_HOOKS);
  const numEntries = info.readUInt32LE(OFF_NUM_ENTRIES);
  const targetOffsetAt = family === 4 ? OFFSETOF_IPT_TARGET_OFFSET : OFFSETOF_IP6T_TARGET_OFFSET;
  const chains: LegacyTable['chains'] = [];
  HOOK_NAMES.forEach((hook, h) => {
    if (!(valid & (1 << h))) return;
    const at = info.readUInt32LE(OFF_UNDERFLOW + 4 * h);
    if (at + targetOffsetAt + 2 > entries.length) {
      throw new InvalidArgumentError(`${name}: underflow of ${hook} outside the entries`);
    }
    const target = at + entries.readUInt16LE(at + targetOffsetAt);
    const v = target + SIZEOF_XT_ENTRY_TARGET;
    if (v + 4 > entries.length) throw new InvalidArgumentError(`${name}: ${hook} policy truncated`);
    // a standard target has an empty name; anything else as policy is not ACCEPT
    const standard = entries[target + 2] === 0;
    chains.push({ hook, policy: standard ? verdictName(entries.readInt32LE(v)) : 'other' });
  });
  // each built-in chain is one entry (its policy), and the table ends with an error entry
  return { family, name, chains, extra: Math.max(0, numEntries - chains.length - 1) };
}

/**
 * One table, in the current namespace. The entries (a large copy for a big ruleset) are read
 * only when the table holds nothing but its built-in chains: then their policies tell.
 */
function readTable(family: 4 | 6, name: string): LegacyTable | undefined {
  const head = iptablesTable(family, name, { entries: false });
  if (head === undefined) return undefined;
  const valid = head.info.readUInt32LE(OFF_VALID_HOOKS);
  const hooks = HOOK_NAMES.filter((_, h) => valid & (1 << h)).length;
  const extra = head.info.readUInt32LE(OFF_NUM_ENTRIES) - hooks - 1;
  if (extra > 0) {
    // rules or chains: the table acts whatever its policies; they are not read
    return { family, name, chains: [], extra };
  }
  const t = iptablesTable(family, name);
  return t === undefined ? undefined : parseLegacyTable(family, name, t.info, t.entries);
}

/** The legacy tables that exist in `netns` (reading them never creates one). */
export function readLegacyTables(netns: string | undefined): LegacyTable[] {
  const read = (): LegacyTable[] => {
    const out: LegacyTable[] = [];
    for (const family of [4, 6] as const) {
      let names: string[];
      try {
        const file = family === 4 ? 'ip_tables_names' : 'ip6_tables_names';
        // /proc/thread-self: this thread's namespace, which runInNetns switched
        names = readFileSync(`/proc/thread-self/net/${file}`, 'utf8').split('\n');
      } catch {
        continue; // no x_tables in this kernel (or not loaded): no legacy table
      }
      for (const name of names.map((n) => n.trim()).filter((n) => n !== '')) {
        const t = readTable(family, name);
        if (t !== undefined) out.push(t);
      }
    }
    return out;
  };
  return netns === undefined ? read() : runInNetns(netns, read);
}

/** Why a legacy table acts on forwarded traffic, or undefined when it does nothing. */
export function legacyEffect(t: LegacyTable): string | undefined {
  const cmd = t.family === 4 ? 'iptables-legacy' : 'ip6tables-legacy';
  if (t.name === 'nat') return `${cmd} table nat (NAT and connection tracking)`;
  const closed = t.chains.filter((c) => c.policy !== 'ACCEPT');
  if (closed.length > 0) {
    return `${cmd} table ${t.name}: ${closed.map((c) => `${c.hook} policy ${c.policy}`).join(', ')}`;
  }
  if (t.extra > 0) return `${cmd} table ${t.name}: ${t.extra} rules or chains`;
  return undefined;
}
