// The test bed of the test-run tests: a router namespace whose FIB produces every lookup
// outcome, fk_xdp_fwd loaded as the loader loads it (slot 1, devmap r1/r2), variants with
// other rodata sharing its maps, and run(): one bpf_prog_test_run that reports the verdict,
// the frame that came out and which counters of the slot moved.
import { afterAll, beforeAll } from 'vitest';
import {
  FK_MAX_SLOTS,
  POST_LOOKUP_REASONS,
  decodeStats,
  defaultConfig,
  defaultObjectPath,
  encodeState,
  loadInstance,
  type KernelState,
  type FkConfig,
  type Instance,
  type ReasonName,
  type ResultName,
  type SlotCounters,
} from '../../src/fib/index.js';
import { XdpAction, runInNetns, type BpfProgram } from '../../src/native/index.js';
import { ip, privileged } from '../helpers/netns.js';
import { ETH_P_IP, ETH_P_IPV6, eth, ipv4, ipv6, udp } from './frames.js';
import { MAC, V4, V6, makeLab, staticNeighbors, type Lab } from './lab.js';

export const { skip } = privileged();
export const OBJ = defaultObjectPath();
export const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

export let lab: Lab;
export let fk: Instance;
export const extra: Instance[] = [];

/** An instance sharing fk's maps, with `cfg` changes and its own slot. */
export function variant(slot: number, cfg: Partial<FkConfig>): BpfProgram {
  const i = loadInstance(OBJ, { ...defaultConfig(), ...cfg, slot }, fk.maps);
  extra.push(i);
  return i.prog;
}

/**
 * Writes fk_state as the agent would for a router whose devices all have an IPv4 address,
 * default sysctls (no rp_filter, policy 0) and IPv6 on: every slot ready. `over` changes it.
 */
export function writeState(inst: Instance, over: Partial<KernelState> = {}): void {
  const dev = Array.from({ length: FK_MAX_SLOTS }, () => ({
    ready: true,
    rpFilter: 0 as const,
    v4Addr: true,
    ip6Off: false,
  }));
  const state: KernelState = {
    mpPolicy4: 0,
    mpPolicy6: 0,
    mpath4: false,
    mpath6: false,
    local4w: false,
    dev,
    ...over,
  };
  inst.maps.state.update(u32(0), encodeState(state));
}

export function slotCounters(inst: Instance, slot: number): SlotCounters {
  return decodeStats(inst.maps.stats.lookupPerCpu(u32(slot)) ?? []);
}

interface Run {
  retval: number;
  out: Buffer;
  /** Counters of the slot that moved by this run, as "results.success" etc. */
  moved: string[];
}

function diff(a: SlotCounters, b: SlotCounters): string[] {
  const out: string[] = [];
  for (const kind of ['actions', 'results', 'reasons'] as const) {
    for (const [k, v] of Object.entries(b[kind])) {
      const before = (a[kind] as Record<string, { packets: number }>)[k]?.packets ?? 0;
      if (v.packets !== before) out.push(`${kind}.${k}+${v.packets - before}`);
    }
  }
  return out;
}

export function run(
  prog: BpfProgram,
  frame: Buffer,
  o: { slot?: number; ns?: string; ingress?: number; inst?: Instance } = {},
): Run {
  const inst = o.inst ?? fk;
  const slot = o.slot ?? 1;
  const before = slotCounters(inst, slot);
  const r = runInNetns(o.ns ?? lab.router, () =>
    prog.testRun({ dataIn: frame, xdpCtx: { ingressIfindex: o.ingress ?? lab.r1 } }),
  );
  return {
    retval: r.retval,
    out: r.dataOut ?? Buffer.alloc(0),
    moved: diff(before, slotCounters(inst, slot)),
  };
}

export const v4 = (dst: string, o: { ttl?: number; size?: number; options?: Buffer } = {}) =>
  eth(
    MAC.r1,
    MAC.client,
    ETH_P_IP,
    ipv4(
      {
        src: V4.client,
        dst,
        ...(o.ttl === undefined ? {} : { ttl: o.ttl }),
        ...(o.options ? { options: o.options } : {}),
      },
      udp(4000, 5000, o.size ?? 18),
    ),
  );
export const v6 = (dst: string, o: { hopLimit?: number; size?: number } = {}) =>
  eth(
    MAC.r1,
    MAC.client,
    ETH_P_IPV6,
    ipv6(
      { src: V6.client, dst, ...(o.hopLimit === undefined ? {} : { hopLimit: o.hopLimit }) },
      udp(4000, 5000, o.size ?? 18),
    ),
  );

export const PASS = XdpAction.PASS;
export const REDIRECT = XdpAction.REDIRECT;
export const passed = (why: `results.${ResultName}` | `reasons.${ReasonName}`) =>
  ((POST_LOOKUP_REASONS as readonly string[]).includes(why.slice('reasons.'.length))
    ? ['actions.pass+1', 'results.success+1', `${why}+1`]
    : ['actions.pass+1', `${why}+1`]
  ).sort();

/** Registers the file's setup and teardown: call once at the top of a test file. */
export function useTestbed(): void {
  beforeAll(() => {
    if (skip) return;
    lab = makeLab('tr', { peerXdp: false });
    staticNeighbors(lab);
    const r = lab.router;
    ip(r, 'route', 'add', 'blackhole', '10.9.1.0/24');
    ip(r, 'route', 'add', 'unreachable', '10.9.2.0/24');
    ip(r, 'route', 'add', 'prohibit', '10.9.3.0/24');
    ip(r, 'route', 'add', '10.9.5.0/24', 'encap', 'ip', 'id', '1', 'dst', '192.0.2.1', 'dev', 'r2');
    ip(r, 'route', 'add', '10.9.6.0/24', 'via', '10.61.2.3');
    ip(r, 'route', 'add', '10.9.7.0/24', 'via', V4.server, 'mtu', 'lock', '1000');
    ip(r, '-6', 'route', 'add', 'blackhole', 'fd61:9:1::/64');
    ip(r, '-6', 'route', 'add', 'unreachable', 'fd61:9:2::/64');
    ip(r, '-6', 'route', 'add', 'prohibit', 'fd61:9:3::/64');
    ip(r, '-6', 'route', 'add', 'fd61:9:6::/64', 'via', 'fd61:2::3');
    ip(r, '-6', 'route', 'add', 'fd61:9:7::/64', 'via', V6.server, 'mtu', 'lock', '1280');
    fk = loadInstance(OBJ, { ...defaultConfig(), slot: 1 });
    writeState(fk);
    runInNetns(r, () => {
      for (const i of [lab.r1, lab.r2]) fk.maps.txPorts.update(u32(i), u32(i));
    });
  });

  afterAll(() => {
    for (const i of extra) {
      i.prog.close();
      i.cfgMap.close();
    }
    if (fk) {
      fk.prog.close();
      fk.cfgMap.close();
      for (const m of Object.values(fk.maps)) m.close();
    }
  });
}
