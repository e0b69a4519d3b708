// The shared maps' reads and writes for the Datapath (datapath.ts keeps the program
// instances, links and pins): the devmap of redirect targets, the per-slot counters, the
// NO_NEIGH miss map, and the kernel mirror (fk_state, the LPM tries, the egress reasons).
import { describeError } from '../errors/index.js';
import type { BpfMap } from '../native/index.js';
import type { SharedMaps } from './instance.js';
import type { KernelMirror } from './kstate.js';
import {
  FK_MAX_SLOTS,
  SIZEOF_FK_STATS,
  decodeMissEntry,
  decodeStats,
  emptyCounters,
  encodeMissKey,
  type MissEntry,
  type MissKey,
  type SlotCounters,
} from './layout.js';
import { OFFSETOF_STATE_UNWATCHED, encodeState, type KernelState } from './layout-state.js';
import type { MirrorSame } from './ops.js';

export const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

/** Makes a map of 1-byte values hold exactly `keys` (additions first, then removals). */
function syncKeys(m: BpfMap, keys: readonly Buffer[]): void {
  const want = new Map(keys.map((k) => [k.toString('hex'), k]));
  const have = new Set(m.keys().map((k) => k.toString('hex')));
  const one = Buffer.from([1]);
  for (const [hex, k] of want) if (!have.has(hex)) m.update(k, one);
  for (const hex of have) if (!want.has(hex)) m.delete(Buffer.from(hex, 'hex'));
}

/** The devmap holds exactly `ifindexes` (added in the namespace, `inNs`); the ones that failed. */
export function setTxPorts(
  m: BpfMap,
  ifindexes: readonly number[],
  inNs: (fn: () => void) => void,
): { ifindex: number; error: string }[] {
  const want = new Set(ifindexes);
  const failed: { ifindex: number; error: string }[] = [];
  for (const k of m.keys()) {
    const ifindex = k.readUInt32LE(0);
    if (!want.has(ifindex)) m.delete(k);
  }
  inNs(() => {
    for (const ifindex of want) {
      try {
        const cur = m.lookup(u32(ifindex));
        if (cur === undefined || cur.readUInt32LE(0) !== ifindex)
          m.update(u32(ifindex), u32(ifindex));
      } catch (err) {
        failed.push({ ifindex, error: describeError(err) });
      }
    }
  });
  return failed;
}

export function readSlot(maps: SharedMaps, slot: number): SlotCounters {
  if (slot >= FK_MAX_SLOTS) return emptyCounters();
  const v = maps.stats.lookupPerCpu(u32(slot));
  return v === undefined ? emptyCounters() : decodeStats(v);
}

export function zeroSlot(maps: SharedMaps, slot: number): void {
  maps.stats.update(u32(slot), Buffer.alloc(SIZEOF_FK_STATS));
}

export function readMisses(maps: SharedMaps): MissEntry[] {
  const m = maps.miss;
  const out: MissEntry[] = [];
  for (const k of m.keys()) {
    const v = m.lookup(k);
    if (v === undefined) continue; // evicted meanwhile
    try {
      out.push(decodeMissEntry(k, v));
    } catch {
      /* not written by fk_xdp_fwd: skip */
    }
  }
  return out;
}

export function deleteMiss(maps: SharedMaps, key: MissKey): boolean {
  return maps.miss.delete(encodeMissKey(key));
}

export function writeMirror(maps: SharedMaps, m: KernelMirror, same: MirrorSame = {}): void {
  if (same.local4w !== true) syncKeys(maps.local4w, m.local4w);
  if (same.mpath4 !== true) syncKeys(maps.mpath4, m.mpath4);
  if (same.mpath6 !== true) syncKeys(maps.mpath6, m.mpath6);
  const egress = maps.egress;
  for (const k of egress.keys()) if (!m.egress.has(k.readUInt32LE(0))) egress.delete(k);
  for (const [ifindex, reason] of m.egress) {
    const cur = egress.lookup(u32(ifindex));
    if (cur === undefined || cur[0] !== reason) egress.update(u32(ifindex), Buffer.from([reason]));
  }
  writeState(maps, m.state);
}

export function writeState(maps: SharedMaps, s: KernelState): void {
  const zero = u32(0);
  const state = encodeState(s);
  const cur = maps.state.lookup(zero);
  if (cur === undefined || !cur.equals(state)) maps.state.update(zero, state);
}

/** Whether the program runs unwatched (its watch's deadline passed) as fk_state says. */
export function unwatched(maps: SharedMaps): boolean {
  const cur = maps.state.lookup(u32(0));
  return cur !== undefined && cur[OFFSETOF_STATE_UNWATCHED] !== 0;
}
