// The C layouts of bpf/xdp_fwd.h as TypeScript: names, sizes, offsets, counter indexes, and
// the encoders/decoders of the configuration, the counters and the miss map. layout.test.ts
// compiles a C program against the header and checks every number here.
import { InvalidArgumentError } from '../errors/index.js';
import { formatMac, ipFamilyOf, ipFromBytes, parseMac, writeIp } from '../ipaddr/index.js';

// --- names (xdp_fwd.h FK_PROG_NAME & co.) ---------------------------------------------------
export const FK_PROG_NAME = 'fk_xdp_fwd';
export const FK_MAP_TX_PORTS = 'fk_tx_ports';
export const FK_MAP_STATS = 'fk_stats';
export const FK_MAP_MISS = 'fk_miss';
export const FK_CFG_VAR = 'fk_cfg';

// --- map sizes ------------------------------------------------------------------------------
export const FK_TX_PORTS_MAX = 1024;
export const FK_MAX_SLOTS = 64;
export const FK_MISS_MAX = 4096;
export const FK_SLOT_OTHER = 0;

// --- counter indexes ------------------------------------------------------------------------
/** fk_stats.result[i]: BPF_FIB_LKUP_RET_* (0-9), then 10 = helper error or unknown code. */
export const RESULT_NAMES = [
  'success',
  'blackhole',
  'unreachable',
  'prohibit',
  'not_fwded',
  'fwd_disabled',
  'unsupp_lwt',
  'no_neigh',
  'frag_needed',
  'no_src_addr',
  'error',
] as const;
export type ResultName = (typeof RESULT_NAMES)[number];

/** fk_stats.action[i]: enum xdp_action. */
export const ACTION_NAMES = ['aborted', 'drop', 'pass', 'tx', 'redirect'] as const;
export type ActionName = (typeof ACTION_NAMES)[number];

/**
 * fk_stats.reason[i]: FK_REASON_*. From FK_REASON_POST_LOOKUP on, a reason is decided after a
 * SUCCESS result (the packet counts in both).
 */
export const REASON_NAMES = [
  'eth_trunc',
  'l2_mcast',
  'l2_otherhost',
  'vlan',
  'arp',
  'non_ip',
  'not_ready',
  'ip4_off',
  'ip4_bad',
  'ip4_csum',
  'ip4_options',
  'ip6_off',
  'ip6_bad',
  'ip6_ext',
  'ip6_disabled',
  'ttl',
  'martian_src',
  'martian_dst',
  'local_src',
  'ndisc',
  'netfilter',
  'tc',
  'xfrm',
  'unwatched',
  'no_txport',
  'hairpin',
  'multipath',
  'rp_filter',
  'route_mtu',
  'trim_error',
  'egress_netfilter',
  'egress_tc',
] as const;
export type ReasonName = (typeof REASON_NAMES)[number];
export const FK_REASON_POST_LOOKUP = 24;
/** Reasons counted after a SUCCESS result. */
export const POST_LOOKUP_REASONS: readonly ReasonName[] = REASON_NAMES.slice(FK_REASON_POST_LOOKUP);

export const FK_RESULT_MAX = RESULT_NAMES.length;
export const FK_ACTION_MAX = ACTION_NAMES.length;
export const FK_REASON_MAX = REASON_NAMES.length;

// --- struct sizes and offsets ---------------------------------------------------------------
export const SIZEOF_FK_CTR = 16;
export const SIZEOF_FK_STATS = 768;
export const OFFSETOF_STATS_ACTION = 0;
export const OFFSETOF_STATS_RESULT = 80;
export const OFFSETOF_STATS_REASON = 256;

export const SIZEOF_FK_MISS_KEY = 24;
export const OFFSETOF_MISS_KEY_IFINDEX = 0;
export const OFFSETOF_MISS_KEY_FAMILY = 4;
export const OFFSETOF_MISS_KEY_ADDR = 8;

export const SIZEOF_FK_MISS_VAL = 40;
export const OFFSETOF_MISS_VAL_HITS = 0;
export const OFFSETOF_MISS_VAL_LAST_SEEN = 8;
export const OFFSETOF_MISS_VAL_NEXTHOP = 16;
export const OFFSETOF_MISS_VAL_NH_FAMILY = 32;

export const SIZEOF_FK_CONFIG = 32;
export const OFFSETOF_CFG_FIB_FLAGS = 0;
export const OFFSETOF_CFG_SLOT = 4;
export const OFFSETOF_CFG_TBID = 8;
export const OFFSETOF_CFG_MARK = 12;
export const OFFSETOF_CFG_IPV4 = 16;
export const OFFSETOF_CFG_IPV6 = 17;
export const OFFSETOF_CFG_IP4_OPTIONS = 18;
export const OFFSETOF_CFG_MISS_TRACK = 19;
export const OFFSETOF_CFG_DMAC_CHECK = 20;
export const OFFSETOF_CFG_DEV_MAC = 24;

export const FK_AF_INET = 2;
export const FK_AF_INET6 = 10;

/** BPF_FIB_LOOKUP_* flags (linux/bpf.h); MARK is FK_FIB_LOOKUP_MARK in xdp_fwd.h. */
export const BPF_FIB_LOOKUP_DIRECT = 1 << 0;
export const BPF_FIB_LOOKUP_OUTPUT = 1 << 1;
export const BPF_FIB_LOOKUP_SKIP_NEIGH = 1 << 2;
export const BPF_FIB_LOOKUP_TBID = 1 << 3;
export const BPF_FIB_LOOKUP_SRC = 1 << 4;
export const FK_FIB_LOOKUP_MARK = 1 << 5;

// --- fk_config ------------------------------------------------------------------------------
/** struct fk_config, the program's rodata. Defaults as in xdp_fwd.c. */
export interface FkConfig {
  /** BPF_FIB_LOOKUP_* flags [0]. */
  fibFlags: number;
  /** fk_stats slot [FK_SLOT_OTHER]. */
  slot: number;
  /** FIB table, with DIRECT | TBID [0]. */
  tbid: number;
  /** fwmark, with FK_FIB_LOOKUP_MARK [0]. */
  mark: number;
  ipv4: boolean;
  ipv6: boolean;
  ip4Options: boolean;
  missTrack: boolean;
  dmacCheck: boolean;
  /** "aa:bb:cc:dd:ee:ff" or undefined (zeros). */
  devMac: string | undefined;
}

export function defaultConfig(): FkConfig {
  return {
    fibFlags: 0,
    slot: FK_SLOT_OTHER,
    tbid: 0,
    mark: 0,
    ipv4: true,
    ipv6: true,
    ip4Options: false,
    missTrack: true,
    dmacCheck: false,
    devMac: undefined,
  };
}

function u32(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 0 || v > 0xffff_ffff) {
    throw new InvalidArgumentError(`fk_config.${name} must be a u32, got ${v}`);
  }
  return v;
}

/** The rodata bytes of `cfg` (little-endian, as the program reads them). */
export function encodeConfig(cfg: FkConfig): Buffer {
  const b = Buffer.alloc(SIZEOF_FK_CONFIG);
  b.writeUInt32LE(u32('fibFlags', cfg.fibFlags), OFFSETOF_CFG_FIB_FLAGS);
  b.writeUInt32LE(u32('slot', cfg.slot), OFFSETOF_CFG_SLOT);
  b.writeUInt32LE(u32('tbid', cfg.tbid), OFFSETOF_CFG_TBID);
  b.writeUInt32LE(u32('mark', cfg.mark), OFFSETOF_CFG_MARK);
  b[OFFSETOF_CFG_IPV4] = cfg.ipv4 ? 1 : 0;
  b[OFFSETOF_CFG_IPV6] = cfg.ipv6 ? 1 : 0;
  b[OFFSETOF_CFG_IP4_OPTIONS] = cfg.ip4Options ? 1 : 0;
  b[OFFSETOF_CFG_MISS_TRACK] = cfg.missTrack ? 1 : 0;
  b[OFFSETOF_CFG_DMAC_CHECK] = cfg.dmacCheck ? 1 : 0;
  if (cfg.devMac !== undefined) parseMac(cfg.devMac).copy(b, OFFSETOF_CFG_DEV_MAC);
  return b;
}

export function decodeConfig(b: Buffer): FkConfig {
  if (b.length !== SIZEOF_FK_CONFIG) {
    throw new InvalidArgumentError(`fk_config is ${SIZEOF_FK_CONFIG} bytes, got ${b.length}`);
  }
  const mac = b.subarray(OFFSETOF_CFG_DEV_MAC, OFFSETOF_CFG_DEV_MAC + 6);
  return {
    fibFlags: b.readUInt32LE(OFFSETOF_CFG_FIB_FLAGS),
    slot: b.readUInt32LE(OFFSETOF_CFG_SLOT),
    tbid: b.readUInt32LE(OFFSETOF_CFG_TBID),
    mark: b.readUInt32LE(OFFSETOF_CFG_MARK),
    ipv4: b[OFFSETOF_CFG_IPV4] !== 0,
    ipv6: b[OFFSETOF_CFG_IPV6] !== 0,
    ip4Options: b[OFFSETOF_CFG_IP4_OPTIONS] !== 0,
    missTrack: b[OFFSETOF_CFG_MISS_TRACK] !== 0,
    dmacCheck: b[OFFSETOF_CFG_DMAC_CHECK] !== 0,
    devMac: mac.every((x) => x === 0) ? undefined : formatMac(mac),
  };
}

// --- fk_stats -------------------------------------------------------------------------------
/** A packet and a byte counter (bytes: Ethernet header included, no FCS). */
export interface PacketBytes {
  packets: number;
  bytes: number;
}

/** One slot's counters summed over every CPU. */
export interface SlotCounters {
  /** Every packet once, by XDP action. */
  actions: Record<ActionName, PacketBytes>;
  /** Packets that reached bpf_fib_lookup, by its answer. */
  results: Record<ResultName, PacketBytes>;
  /** Packets passed to the stack before (or instead of) forwarding, by reason. */
  reasons: Record<ReasonName, PacketBytes>;
}

function readCtrs<N extends string>(
  perCpu: readonly Buffer[],
  names: readonly N[],
  base: number,
): Record<N, PacketBytes> {
  const out = {} as Record<N, PacketBytes>;
  names.forEach((name, i) => {
    let packets = 0n;
    let bytes = 0n;
    const off = base + i * SIZEOF_FK_CTR;
    for (const b of perCpu) {
      packets += b.readBigUInt64LE(off);
      bytes += b.readBigUInt64LE(off + 8);
    }
    // u64 sums as Numbers: exact up to 2^53, then rounded (as Prometheus stores them).
    out[name] = { packets: Number(packets), bytes: Number(bytes) };
  });
  return out;
}

/** Sums the per-CPU values of one fk_stats slot (lookupPerCpu's Buffers). */
export function decodeStats(perCpu: readonly Buffer[]): SlotCounters {
  for (const b of perCpu) {
    if (b.length < SIZEOF_FK_STATS) {
      throw new InvalidArgumentError(`fk_stats is ${SIZEOF_FK_STATS} bytes, got ${b.length}`);
    }
  }
  const actions = readCtrs(perCpu, ACTION_NAMES, OFFSETOF_STATS_ACTION);
  const results = readCtrs(perCpu, RESULT_NAMES, OFFSETOF_STATS_RESULT);
  // the program counts a redirected SUCCESS only as action[REDIRECT] (xdp_fwd.h)
  results.success = {
    packets: results.success.packets + actions.redirect.packets,
    bytes: results.success.bytes + actions.redirect.bytes,
  };
  return { actions, results, reasons: readCtrs(perCpu, REASON_NAMES, OFFSETOF_STATS_REASON) };
}

/** An all-zero SlotCounters. */
export function emptyCounters(): SlotCounters {
  return decodeStats([Buffer.alloc(SIZEOF_FK_STATS)]);
}

// --- fk_miss --------------------------------------------------------------------------------
/** The key of a miss-map entry: the packet's destination and the FIB's egress device. */
export interface MissKey {
  egressIfindex: number;
  /** 4 or 6: the family of dst. */
  family: 4 | 6;
  /** The packet's destination (text form). */
  dst: string;
}

/** A miss-map entry: a destination whose lookup answered NO_NEIGH. */
export interface MissEntry extends MissKey {
  /** The neighbor the FIB wanted (gateway or destination). */
  nexthop: string;
  /** 4 or 6: an IPv4 route can have an IPv6 gateway. */
  nexthopFamily: 4 | 6;
  /** NO_NEIGH packets counted for this key. */
  hits: number;
  /** CLOCK_MONOTONIC_COARSE ns of the latest one (compare with process.hrtime.bigint()). */
  lastSeenNs: bigint;
}

function familyOf(af: number): 4 | 6 {
  if (af === FK_AF_INET) return 4;
  if (af === FK_AF_INET6) return 6;
  throw new InvalidArgumentError(`unknown address family ${af} in fk_miss`);
}

export function encodeMissKey(k: MissKey): Buffer {
  const b = Buffer.alloc(SIZEOF_FK_MISS_KEY);
  b.writeUInt32LE(k.egressIfindex, OFFSETOF_MISS_KEY_IFINDEX);
  b[OFFSETOF_MISS_KEY_FAMILY] = k.family === 4 ? FK_AF_INET : FK_AF_INET6;
  if (ipFamilyOf(k.dst) !== k.family) {
    throw new InvalidArgumentError(`${k.dst} is not an IPv${k.family} address`);
  }
  writeIp(k.dst, b, OFFSETOF_MISS_KEY_ADDR);
  return b;
}

export function decodeMissKey(b: Buffer): MissKey {
  const family = familyOf(b[OFFSETOF_MISS_KEY_FAMILY] ?? 0);
  return {
    egressIfindex: b.readUInt32LE(OFFSETOF_MISS_KEY_IFINDEX),
    family,
    dst: ipFromBytes(b, OFFSETOF_MISS_KEY_ADDR, family === 4 ? 4 : 16),
  };
}

export function decodeMissEntry(key: Buffer, val: Buffer): MissEntry {
  const nexthopFamily = familyOf(val[OFFSETOF_MISS_VAL_NH_FAMILY] ?? 0);
  return {
    ...decodeMissKey(key),
    nexthop: ipFromBytes(val, OFFSETOF_MISS_VAL_NEXTHOP, nexthopFamily === 4 ? 4 : 16),
    nexthopFamily,
    hits: Number(val.readBigUInt64LE(OFFSETOF_MISS_VAL_HITS)),
    lastSeenNs: val.readBigUInt64LE(OFFSETOF_MISS_VAL_LAST_SEEN),
  };
}
