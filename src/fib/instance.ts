// Loading fk_xdp_fwd: one program instance per device, each with its own rodata (slot,
// flags), all sharing one set of maps. Also opens pinned maps and checks that they still fit
// the object.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FibkeeperError, NotFoundError, describeError } from '../errors/index.js';
import { BpfMap, BpfObject, BpfProgram, isVerifierError } from '../native/index.js';
import {
  FK_CFG_VAR,
  FK_MAP_MISS,
  FK_MAP_STATS,
  FK_MAP_TX_PORTS,
  FK_MAX_SLOTS,
  FK_MISS_MAX,
  FK_PROG_NAME,
  FK_TX_PORTS_MAX,
  SIZEOF_FK_MISS_KEY,
  SIZEOF_FK_MISS_VAL,
  SIZEOF_FK_STATS,
  encodeConfig,
  type FkConfig,
} from './layout.js';
import {
  FK_EGRESS_MAX,
  FK_LPM_MAX,
  FK_MAP_EGRESS,
  FK_MAP_LOCAL4W,
  FK_MAP_MPATH4,
  FK_MAP_MPATH6,
  FK_MAP_RPCACHE,
  FK_MAP_STATE,
  SIZEOF_FK_LPM4_KEY,
  SIZEOF_FK_LPM6_KEY,
  SIZEOF_FK_RP_CACHE,
  SIZEOF_FK_STATE,
} from './layout-state.js';

/** build/bpf/xdp_fwd.o of this package (src/fib and dist/fib are both two levels down). */
export function defaultObjectPath(): string {
  return fileURLToPath(new URL('../../build/bpf/xdp_fwd.o', import.meta.url));
}

/** The maps every instance shares. */
export interface SharedMaps {
  txPorts: BpfMap;
  stats: BpfMap;
  miss: BpfMap;
  /** The kernel state the agent mirrors (fk_state and the LPM tries). */
  state: BpfMap;
  local4w: BpfMap;
  mpath4: BpfMap;
  mpath6: BpfMap;
  /** Devices whose egress has a policy of their own (the reason, for the counters). */
  egress: BpfMap;
  /** The program's own per-CPU cache of reverse-path lookups (never read here). */
  rpcache: BpfMap;
}

export const SHARED_MAP_NAMES: Record<keyof SharedMaps, string> = {
  txPorts: FK_MAP_TX_PORTS,
  stats: FK_MAP_STATS,
  miss: FK_MAP_MISS,
  state: FK_MAP_STATE,
  local4w: FK_MAP_LOCAL4W,
  mpath4: FK_MAP_MPATH4,
  mpath6: FK_MAP_MPATH6,
  egress: FK_MAP_EGRESS,
  rpcache: FK_MAP_RPCACHE,
};

/** What each shared map must look like (the layout of xdp_fwd.h). */
const MAP_SHAPES: Record<
  keyof SharedMaps,
  { type: string; key: number; value: number; max: number }
> = {
  txPorts: { type: 'devmap_hash', key: 4, value: 4, max: FK_TX_PORTS_MAX },
  stats: { type: 'percpu_array', key: 4, value: SIZEOF_FK_STATS, max: FK_MAX_SLOTS },
  miss: { type: 'lru_hash', key: SIZEOF_FK_MISS_KEY, value: SIZEOF_FK_MISS_VAL, max: FK_MISS_MAX },
  state: { type: 'array', key: 4, value: SIZEOF_FK_STATE, max: 1 },
  local4w: { type: 'lpm_trie', key: SIZEOF_FK_LPM4_KEY, value: 1, max: FK_LPM_MAX },
  mpath4: { type: 'lpm_trie', key: SIZEOF_FK_LPM4_KEY, value: 1, max: FK_LPM_MAX },
  mpath6: { type: 'lpm_trie', key: SIZEOF_FK_LPM6_KEY, value: 1, max: FK_LPM_MAX },
  egress: { type: 'hash', key: 4, value: 1, max: FK_EGRESS_MAX },
  rpcache: { type: 'percpu_array', key: 4, value: SIZEOF_FK_RP_CACHE, max: 1 },
};

/** Why `m` cannot serve as shared map `which`, or undefined when it can. */
export function mapMismatch(which: keyof SharedMaps, m: BpfMap): string | undefined {
  const want = MAP_SHAPES[which];
  const got = { type: m.type, key: m.keySize, value: m.valueSize, max: m.maxEntries };
  if (
    got.type !== want.type ||
    got.key !== want.key ||
    got.value !== want.value ||
    got.max !== want.max
  ) {
    return `${SHARED_MAP_NAMES[which]} is ${JSON.stringify(got)}, want ${JSON.stringify(want)}`;
  }
  return undefined;
}

export function closeMaps(maps: SharedMaps | undefined): void {
  if (maps === undefined) return;
  for (const m of Object.values(maps)) m.close();
}

/** A loaded instance: the program and its rodata map (own descriptors), and the maps used. */
export interface Instance {
  prog: BpfProgram;
  cfgMap: BpfMap;
  /** The shared maps: `reuse` when given, else the ones this load created (caller owns them). */
  maps: SharedMaps;
}

function rodataName(obj: BpfObject): string {
  const name = obj.mapNames().find((n) => n.endsWith('.rodata'));
  if (name === undefined) throw new FibkeeperError(`${obj.path}: no .rodata map`);
  return name;
}

/**
 * Opens the object, sets fk_cfg to `cfg`, reuses `reuse` (when given) for the shared maps,
 * loads it. Throws FibkeeperError (code FIBKEEPER_ERR_BPF) with the verifier's last lines.
 */
export function loadInstance(objectPath: string, cfg: FkConfig, reuse?: SharedMaps): Instance {
  if (!existsSync(objectPath)) {
    throw new NotFoundError(`XDP object ${objectPath} not found (build it with make bpf)`);
  }
  const obj = BpfObject.open(objectPath);
  try {
    obj.setRodata(FK_CFG_VAR, encodeConfig(cfg));
    if (reuse !== undefined) {
      for (const k of Object.keys(SHARED_MAP_NAMES) as (keyof SharedMaps)[]) {
        obj.reuseMap(SHARED_MAP_NAMES[k], reuse[k]);
      }
    }
    try {
      obj.load();
    } catch (err) {
      const tail = isVerifierError(err)
        ? err.verifierLog.trim().split('\n').slice(-8).join('\n')
        : '';
      throw new FibkeeperError(
        `load ${FK_PROG_NAME} from ${objectPath}: ${describeError(err)}${tail ? `\n${tail}` : ''}`,
        { cause: err, code: 'FIBKEEPER_ERR_BPF' },
      );
    }
    const prog = obj.program(FK_PROG_NAME);
    const cfgMap = obj.map(rodataName(obj));
    const maps =
      reuse ??
      (Object.fromEntries(
        (Object.keys(SHARED_MAP_NAMES) as (keyof SharedMaps)[]).map((k) => [
          k,
          obj.map(SHARED_MAP_NAMES[k]),
        ]),
      ) as unknown as SharedMaps);
    return { prog, cfgMap, maps };
  } finally {
    obj.close();
  }
}
