// The kernel-state maps of bpf/xdp_fwd.h as TypeScript: fk_state (the namespace's settings,
// one entry per counter slot, the open-addressed table of local IPv4 addresses), the keys of
// the LPM tries fk_local4w, fk_mpath4 and fk_mpath6, and the redirect-error tracer's layouts.
// layout.test.ts checks every number here against the header.
import { endianness } from 'node:os';
import { InvalidArgumentError } from '../errors/index.js';
import { ipToBytes } from '../ipaddr/index.js';
import { FK_MAX_SLOTS } from './layout.js';

const LE = endianness() === 'LE';

export const FK_MAP_STATE = 'fk_state';
export const FK_MAP_LOCAL4W = 'fk_local4w';
export const FK_MAP_MPATH4 = 'fk_mpath4';
export const FK_MAP_MPATH6 = 'fk_mpath6';
export const FK_MAP_EGRESS = 'fk_egress';
export const FK_MAP_RPCACHE = 'fk_rpcache';
export const FK_MAP_WATCH = 'fk_watch';
export const FK_MAP_WATCH_UNTIL = 'fk_watch_until';
export const FK_WATCH_PROG = 'fk_watch_arm';
/** How often the watch timer looks at the agent's deadline. */
export const FK_WATCH_TICK_NS = 500_000_000;
export const SIZEOF_FK_WATCH = 16;
export const FK_LPM_MAX = 65536;
export const FK_EGRESS_MAX = 1024;
export const FK_RP_CACHE_BITS = 10;
export const FK_RP_CACHE_SLOTS = 1 << FK_RP_CACHE_BITS;
export const SIZEOF_FK_RP_ENTRY = 16;
export const SIZEOF_FK_RP_CACHE = FK_RP_CACHE_SLOTS * SIZEOF_FK_RP_ENTRY;

export const FK_LOCAL4_BITS = 12;
export const FK_LOCAL4_SLOTS = 1 << FK_LOCAL4_BITS;
export const FK_LOCAL4_PROBES = 4;
export const FK_LOCAL4_MUL = 0x9e3779b1;

export const SIZEOF_FK_DEV_STATE = 8;
export const OFFSETOF_DEV_READY = 0;
export const OFFSETOF_DEV_RP_FILTER = 1;
export const OFFSETOF_DEV_V4_ADDR = 2;
export const OFFSETOF_DEV_IP6_OFF = 3;
export const OFFSETOF_DEV_POLICY4 = 4;
export const OFFSETOF_DEV_POLICY6 = 5;

export const SIZEOF_FK_STATE = 16912;
export const OFFSETOF_STATE_MP_POLICY4 = 0;
export const OFFSETOF_STATE_MP_POLICY6 = 1;
export const OFFSETOF_STATE_MPATH4 = 2;
export const OFFSETOF_STATE_MPATH6 = 3;
export const OFFSETOF_STATE_LOCAL4W = 4;
export const OFFSETOF_STATE_UNWATCHED = 5;
export const OFFSETOF_STATE_ROUTE_MTU4 = 6;
export const OFFSETOF_STATE_ROUTE_MTU6 = 8;
export const OFFSETOF_STATE_RP_RULES = 10;
export const OFFSETOF_STATE_RP_GEN = 12;
export const OFFSETOF_STATE_DEV = 16;
export const OFFSETOF_STATE_LOCAL4 = 528;

export const SIZEOF_FK_LOCAL4 = FK_LOCAL4_SLOTS * 4;
export const SIZEOF_FK_LPM4_KEY = 8;
export const SIZEOF_FK_LPM6_KEY = 20;

/** fk_dev_state: what the program must know about one device (slot). */
export interface DevState {
  /** The program forwards only when the agent has written the entry. */
  ready: boolean;
  /** Effective net.ipv4.conf.{all,DEV}.rp_filter: 0, 1 (strict) or 2 (loose). */
  rpFilter: 0 | 1 | 2;
  /** The device has an IPv4 address (loose rp_filter needs one). */
  v4Addr: boolean;
  /** The kernel takes no IPv6 from it (disable_ipv6, or IPv6 forwarding off for all). */
  ip6Off: boolean;
  /**
   * The FK_REASON_* index (netfilter, tc, xfrm) under which every IPv4 / IPv6 frame from the
   * device goes to the kernel, because the node's policy acts on it there; 0: none.
   */
  policy4?: number;
  policy6?: number;
}

/** fk_state. */
export interface KernelState {
  mpPolicy4: number;
  mpPolicy6: number;
  /** fk_mpath4 / fk_mpath6 / fk_local4w hold entries. */
  mpath4: boolean;
  mpath6: boolean;
  local4w: boolean;
  /** The smallest unlocked route MTU of any IPv4 / IPv6 route; 0: none. */
  routeMtu4?: number;
  routeMtu6?: number;
  /** IPv4 policy rules the reverse-path check cannot follow in XDP (rp_filter goes to the kernel). */
  rpRules?: boolean;
  /** The generation of the reverse-path cache (raised on every change; 0: never written). */
  rpGen?: number;
  /** Set by the watch timer, never by the agent (which writes false). */
  unwatched?: boolean;
  /** One per counter slot (FK_MAX_SLOTS); missing slots are not ready. */
  dev: DevState[];
  /** The local-address table (buildLocal4's); absent: empty. */
  local4?: Buffer;
}

export const NOT_READY: DevState = {
  ready: false,
  rpFilter: 0,
  v4Addr: false,
  ip6Off: false,
  policy4: 0,
  policy6: 0,
};

export function encodeState(s: KernelState): Buffer {
  const b = Buffer.alloc(SIZEOF_FK_STATE);
  const u8 = (name: string, v: number, off: number) => {
    if (!Number.isInteger(v) || v < 0 || v > 255) {
      throw new InvalidArgumentError(`fk_state.${name} must be a u8, got ${v}`);
    }
    b[off] = v;
  };
  u8('mpPolicy4', s.mpPolicy4, OFFSETOF_STATE_MP_POLICY4);
  u8('mpPolicy6', s.mpPolicy6, OFFSETOF_STATE_MP_POLICY6);
  b[OFFSETOF_STATE_RP_RULES] = s.rpRules ? 1 : 0;
  const gen = s.rpGen ?? 0;
  if (!Number.isInteger(gen) || gen < 0 || gen > 0xffff_ffff) {
    throw new InvalidArgumentError(`fk_state.rpGen must be a u32, got ${gen}`);
  }
  if (LE) b.writeUInt32LE(gen, OFFSETOF_STATE_RP_GEN);
  else b.writeUInt32BE(gen, OFFSETOF_STATE_RP_GEN);
  b[OFFSETOF_STATE_MPATH4] = s.mpath4 ? 1 : 0;
  b[OFFSETOF_STATE_MPATH6] = s.mpath6 ? 1 : 0;
  b[OFFSETOF_STATE_LOCAL4W] = s.local4w ? 1 : 0;
  b[OFFSETOF_STATE_UNWATCHED] = s.unwatched ? 1 : 0;
  for (const [name, v, off] of [
    ['routeMtu4', s.routeMtu4 ?? 0, OFFSETOF_STATE_ROUTE_MTU4],
    ['routeMtu6', s.routeMtu6 ?? 0, OFFSETOF_STATE_ROUTE_MTU6],
  ] as const) {
    if (!Number.isInteger(v) || v < 0 || v > 0xffff) {
      throw new InvalidArgumentError(`fk_state.${name} must be a u16, got ${v}`);
    }
    if (LE) b.writeUInt16LE(v, off);
    else b.writeUInt16BE(v, off);
  }
  if (s.dev.length > FK_MAX_SLOTS) {
    throw new InvalidArgumentError(
      `fk_state has ${FK_MAX_SLOTS} device slots, got ${s.dev.length}`,
    );
  }
  s.dev.forEach((d, slot) => {
    const o = OFFSETOF_STATE_DEV + slot * SIZEOF_FK_DEV_STATE;
    b[o + OFFSETOF_DEV_READY] = d.ready ? 1 : 0;
    u8('rpFilter', d.rpFilter, o + OFFSETOF_DEV_RP_FILTER);
    b[o + OFFSETOF_DEV_V4_ADDR] = d.v4Addr ? 1 : 0;
    b[o + OFFSETOF_DEV_IP6_OFF] = d.ip6Off ? 1 : 0;
    u8('policy4', d.policy4 ?? 0, o + OFFSETOF_DEV_POLICY4);
    u8('policy6', d.policy6 ?? 0, o + OFFSETOF_DEV_POLICY6);
  });
  if (s.local4 !== undefined) {
    if (s.local4.length !== SIZEOF_FK_LOCAL4) {
      throw new InvalidArgumentError(
        `fk_state.local4 is ${SIZEOF_FK_LOCAL4} bytes, got ${s.local4.length}`,
      );
    }
    s.local4.copy(b, OFFSETOF_STATE_LOCAL4);
  }
  return b;
}

export function decodeState(b: Buffer): KernelState {
  if (b.length !== SIZEOF_FK_STATE) {
    throw new InvalidArgumentError(`fk_state is ${SIZEOF_FK_STATE} bytes, got ${b.length}`);
  }
  const dev: DevState[] = [];
  for (let slot = 0; slot < FK_MAX_SLOTS; slot++) {
    const o = OFFSETOF_STATE_DEV + slot * SIZEOF_FK_DEV_STATE;
    dev.push({
      ready: b[o + OFFSETOF_DEV_READY] !== 0,
      rpFilter: Math.min(2, b[o + OFFSETOF_DEV_RP_FILTER] ?? 0) as 0 | 1 | 2,
      v4Addr: b[o + OFFSETOF_DEV_V4_ADDR] !== 0,
      ip6Off: b[o + OFFSETOF_DEV_IP6_OFF] !== 0,
      policy4: b[o + OFFSETOF_DEV_POLICY4] ?? 0,
      policy6: b[o + OFFSETOF_DEV_POLICY6] ?? 0,
    });
  }
  return {
    mpPolicy4: b[OFFSETOF_STATE_MP_POLICY4] ?? 0,
    mpPolicy6: b[OFFSETOF_STATE_MP_POLICY6] ?? 0,
    mpath4: b[OFFSETOF_STATE_MPATH4] !== 0,
    mpath6: b[OFFSETOF_STATE_MPATH6] !== 0,
    local4w: b[OFFSETOF_STATE_LOCAL4W] !== 0,
    routeMtu4: LE
      ? b.readUInt16LE(OFFSETOF_STATE_ROUTE_MTU4)
      : b.readUInt16BE(OFFSETOF_STATE_ROUTE_MTU4),
    routeMtu6: LE
      ? b.readUInt16LE(OFFSETOF_STATE_ROUTE_MTU6)
      : b.readUInt16BE(OFFSETOF_STATE_ROUTE_MTU6),
    rpRules: b[OFFSETOF_STATE_RP_RULES] !== 0,
    unwatched: b[OFFSETOF_STATE_UNWATCHED] !== 0,
    rpGen: LE ? b.readUInt32LE(OFFSETOF_STATE_RP_GEN) : b.readUInt32BE(OFFSETOF_STATE_RP_GEN),
    dev,
    local4: Buffer.from(
      b.subarray(OFFSETOF_STATE_LOCAL4, OFFSETOF_STATE_LOCAL4 + SIZEOF_FK_LOCAL4),
    ),
  };
}

// --- fk_state.local4 ------------------------------------------------------------------------

/** The u32 the program loads for an address (its 4 bytes in host order). */
function loaded(addr: Buffer): number {
  return LE ? addr.readUInt32LE(0) : addr.readUInt32BE(0);
}

/** FK_LOCAL4_HASH of an address: the first slot of its bucket. */
export function local4Hash(address: string): number {
  const h = Math.imul(loaded(ipToBytes(address)), FK_LOCAL4_MUL) >>> (32 - FK_LOCAL4_BITS);
  return h & ~(FK_LOCAL4_PROBES - 1);
}

/**
 * fk_state.local4 for `addresses` (IPv4, no 0.0.0.0): each in the first free slot of
 * its bucket, in the order given. `overflow` holds those that found no free slot
 * (they go to fk_local4w as /32s).
 */
export function buildLocal4(addresses: readonly string[]): { table: Buffer; overflow: string[] } {
  const table = Buffer.alloc(SIZEOF_FK_LOCAL4);
  const overflow: string[] = [];
  const seen = new Set<string>();
  for (const a of addresses) {
    if (seen.has(a)) continue;
    seen.add(a);
    const bytes = ipToBytes(a);
    if (bytes.length !== 4) throw new InvalidArgumentError(`${a} is not an IPv4 address`);
    const v = loaded(bytes);
    if (v === 0) throw new InvalidArgumentError('0.0.0.0 marks an empty slot of fk_state.local4');
    const h = local4Hash(a);
    let placed = false;
    for (let p = 0; p < FK_LOCAL4_PROBES && !placed; p++) {
      const off = (h + p) * 4;
      if (table.readUInt32LE(off) === 0) {
        bytes.copy(table, off);
        placed = true;
      }
    }
    if (!placed) overflow.push(a);
  }
  return { table, overflow };
}

// --- LPM keys -------------------------------------------------------------------------------
/** The address bytes with every bit past `len` cleared (the trie compares whole keys). */
function masked(a: Buffer, len: number): Buffer {
  const out = Buffer.from(a);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, len - i * 8));
    out[i] = (out[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}

/** A key of fk_local4w / fk_mpath4 (prefix length in host order, address as is). */
export function lpm4Key(address: string, len: number): Buffer {
  const b = Buffer.alloc(SIZEOF_FK_LPM4_KEY);
  const a = ipToBytes(address);
  if (a.length !== 4 || !Number.isInteger(len) || len < 0 || len > 32) {
    throw new InvalidArgumentError(`not an IPv4 prefix: ${address}/${len}`);
  }
  if (LE) b.writeUInt32LE(len, 0);
  else b.writeUInt32BE(len, 0);
  masked(a, len).copy(b, 4);
  return b;
}

/** A key of fk_mpath6. */
export function lpm6Key(address: string, len: number): Buffer {
  const b = Buffer.alloc(SIZEOF_FK_LPM6_KEY);
  const a = ipToBytes(address);
  if (a.length !== 16 || !Number.isInteger(len) || len < 0 || len > 128) {
    throw new InvalidArgumentError(`not an IPv6 prefix: ${address}/${len}`);
  }
  if (LE) b.writeUInt32LE(len, 0);
  else b.writeUInt32BE(len, 0);
  masked(a, len).copy(b, 4);
  return b;
}

// --- the redirect-error tracer (bpf/xdp_trace.c) ---------------------------------------------
export const FK_TRACE_RERR_PROG = 'fk_trace_rerr';
export const FK_TRACE_XMIT_PROG = 'fk_trace_xmit';
export const FK_TRACE_RERR_TP = 'xdp_redirect_err';
export const FK_TRACE_XMIT_TP = 'xdp_devmap_xmit';
export const FK_MAP_RERR = 'fk_rerr';
export const FK_TRACE_CFG_VAR = 'fk_trace_cfg';
export const FK_RERR_MAX_ENTRIES = 1024;
export const SIZEOF_FK_RERR_KEY = 8;
export const SIZEOF_FK_TRACE_CONFIG = 8;

/** fk_rerr_key.reason: why a redirected frame was lost (FK_RERR_*). */
export const REDIRECT_ERROR_NAMES = ['too_big', 'down', 'no_target', 'xmit_drop', 'other'] as const;
export type RedirectErrorName = (typeof REDIRECT_ERROR_NAMES)[number];
export const FK_RERR_MAX = REDIRECT_ERROR_NAMES.length;

/** fk_trace_config for the namespace of inode `ino`. */
export function encodeTraceConfig(ino: number): Buffer {
  const b = Buffer.alloc(SIZEOF_FK_TRACE_CONFIG);
  if (LE) b.writeUInt32LE(ino >>> 0, 0);
  else b.writeUInt32BE(ino >>> 0, 0);
  return b;
}

/** fk_watch_until's value: until when (CLOCK_MONOTONIC ns) the agent vouches for fk_state. */
export function encodeWatchUntil(untilNs: bigint): Buffer {
  const b = Buffer.alloc(8);
  if (LE) b.writeBigUInt64LE(untilNs, 0);
  else b.writeBigUInt64BE(untilNs, 0);
  return b;
}

/** fk_rerr's entries: ingress ifindex -> frames lost per reason. */
export function decodeRedirectErrors(
  entries: readonly { key: Buffer; value: Buffer }[],
): Map<number, Record<RedirectErrorName, number>> {
  const out = new Map<number, Record<RedirectErrorName, number>>();
  for (const { key, value } of entries) {
    if (key.length !== SIZEOF_FK_RERR_KEY || value.length < 8) continue;
    const ifindex = LE ? key.readUInt32LE(0) : key.readUInt32BE(0);
    const reason = REDIRECT_ERROR_NAMES[LE ? key.readUInt32LE(4) : key.readUInt32BE(4)];
    if (reason === undefined) continue;
    const row = out.get(ifindex) ?? zeroRedirectErrors();
    row[reason] += Number(LE ? value.readBigUInt64LE(0) : value.readBigUInt64BE(0));
    out.set(ifindex, row);
  }
  return out;
}

export function zeroRedirectErrors(): Record<RedirectErrorName, number> {
  return Object.fromEntries(REDIRECT_ERROR_NAMES.map((n) => [n, 0])) as Record<
    RedirectErrorName,
    number
  >;
}
