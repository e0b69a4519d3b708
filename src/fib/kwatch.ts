// Reading what kstate.ts needs from the kernel and writing the mirror: the route facts come
// from the route feed (kroutes.ts), the addresses from the device feed, and the
// sysctls (files under /proc/sys/net, opened inside the managed namespace: a sysctl belongs
// to the namespace of the process that opens it). Sysctl changes raise no event except
// rp_filter and forwarding (RTM_NEWNETCONF), so the forwarder also polls them.
import { readFileSync } from 'node:fs';
import type { Logger } from '../log/index.js';
import type { Address } from '../netlink/index.js';
import { runInNetns } from '../native/index.js';
import {
  mirrorFrom,
  type KernelMirror,
  type NetSysctls,
  type RouteFacts,
  type SlotDevice,
} from './kstate.js';
import { watchDeadline } from './watch.js';
import type { DatapathOps, MirrorSame } from './ops.js';

const SYS = '/proc/sys/net';

/** RTM_NEWNETCONF / RTM_DELNETCONF: a device's rp_filter or forwarding changed. */
export const RTM_NEWNETCONF = 80;
export const RTM_DELNETCONF = 81;
export const RTNLGRP_IPV4_NETCONF = 24;
export const RTNLGRP_IPV6_NETCONF = 25;

function num(path: string): number | undefined {
  try {
    const v = Number(readFileSync(path, 'utf8').trim());
    return Number.isFinite(v) ? v : undefined;
  } catch {
    return undefined; // no such device (any more), or no IPv6 in this kernel
  }
}

function readAll(devices: readonly string[]): NetSysctls {
  const dev = new Map<string, { rpFilter: number; disableIpv6: boolean }>();
  for (const name of devices) {
    if (name.includes('/')) continue; // not a device name /proc/sys can hold
    const rpFilter = num(`${SYS}/ipv4/conf/${name}/rp_filter`);
    if (rpFilter === undefined) continue;
    // no IPv6 configuration for the device (IPv6 off in the kernel, MTU < 1280): none taken
    const disableIpv6 = (num(`${SYS}/ipv6/conf/${name}/disable_ipv6`) ?? 1) !== 0;
    dev.set(name, { rpFilter, disableIpv6 });
  }
  return {
    mpPolicy4: num(`${SYS}/ipv4/fib_multipath_hash_policy`) ?? 0,
    // unknown (no IPv6): a policy the program cannot mirror, so multipath IPv6 is passed
    mpPolicy6: num(`${SYS}/ipv6/fib_multipath_hash_policy`) ?? 255,
    rpFilterAll: num(`${SYS}/ipv4/conf/all/rp_filter`) ?? 0,
    ip6ForwardingAll: (num(`${SYS}/ipv6/conf/all/forwarding`) ?? 0) !== 0,
    dev,
  };
}

/** The sysctls of `devices` and of the namespace, read in `netns` (default: our own). */
export function readSysctls(netns: string | undefined, devices: readonly string[]): NetSysctls {
  return netns === undefined ? readAll(devices) : runInNetns(netns, () => readAll(devices));
}

/** A stable text of the sysctls, to see whether a poll found a change. */
export function sysctlKey(s: NetSysctls): string {
  return JSON.stringify([
    s.mpPolicy4,
    s.mpPolicy6,
    s.rpFilterAll,
    s.ip6ForwardingAll,
    [...s.dev].sort(([a], [b]) => (a < b ? -1 : 1)),
  ]);
}

/** What a full pass hands the writer besides the route facts. */
export interface MirrorContext {
  addresses: readonly Address[];
  devices: readonly SlotDevice[];
  egress: ReadonlyMap<number, number>;
}

/**
 * Keeps the program's view of the kernel current: the route facts (the route feed's, kept by
 * RouteMirror: kroutes.ts), the addresses (the device feed's) and the sysctls (read here),
 * computes the mirror and writes it through the datapath. The forwarder calls refresh() after
 * every reconciliation pass (link, address, netconf and policy changes, the periodic resync),
 * routesChanged() after route and rule events (no sysctl read, no dump: the facts are new,
 * the rest is the last pass's), and sysctlsChanged() from its sysctl poll.
 */
export class MirrorWriter {
  readonly #ops: DatapathOps;
  readonly #netns: string | undefined;
  readonly #log: Logger;
  #lastSysctls: string | undefined;
  #sysctls: NetSysctls | undefined;
  #ctx: MirrorContext | undefined;
  #lastSummary = '';
  /** The key sets written last (the same object again: that map is left alone). */
  #lastSets: KernelMirror['sets'];
  /**
   * fk_state.rp_gen: raised on every write (each follows a change the forwarder heard of, or
   * its periodic resync), so no cached reverse-path answer outlives a change. Starts at a
   * value of its own per writer, never 0.
   */
  #rpGen = 1 + Math.floor(Math.random() * 0x7fff_0000);
  /** The mirror written last (renew() writes its state again after the watch tripped). */
  #last: KernelMirror | undefined;
  /** Mirror writes (full passes and route-only ones). */
  writes = 0;

  constructor(ops: DatapathOps, netns: string | undefined, log: Logger) {
    this.#ops = ops;
    this.#netns = netns;
    this.#log = log;
  }

  /** A full pass: the sysctls read again, everything written. */
  refresh(facts: RouteFacts, ctx: MirrorContext): void {
    const sysctls = readSysctls(
      this.#netns,
      ctx.devices.map((d) => d.name),
    );
    this.#write(facts, ctx, sysctls);
    this.#lastSysctls = sysctlKey(sysctls);
  }

  /**
   * After route or rule events: the new facts with the last pass's addresses, devices and
   * sysctls. Nothing before the first full pass (it writes them).
   */
  routesChanged(facts: RouteFacts): void {
    if (this.#ctx === undefined || this.#sysctls === undefined) return;
    this.#write(facts, this.#ctx, this.#sysctls);
  }

  #write(facts: RouteFacts, ctx: MirrorContext, sysctls: NetSysctls): void {
    this.#rpGen = this.#rpGen >= 0xffff_fffe ? 1 : this.#rpGen + 1;
    const m = mirrorFrom(facts, { ...ctx, sysctls, rpGen: this.#rpGen });
    const last = this.#lastSets;
    const same: MirrorSame =
      last === undefined || m.sets === undefined
        ? {}
        : {
            local4w: m.sets.local4w === last.local4w,
            mpath4: m.sets.mpath4 === last.mpath4,
            mpath6: m.sets.mpath6 === last.mpath6,
          };
    this.#lastSets = undefined; // a write that throws leaves every map to be synced
    this.#ops.writeMirror(m, same);
    this.#lastSets = m.sets;
    this.#last = m;
    this.#ctx = ctx;
    this.#sysctls = sysctls;
    this.writes++;
    this.#logSummary(m, ctx.devices);
  }

  #logSummary(m: KernelMirror, devices: readonly SlotDevice[]): void {
    const summary = JSON.stringify({
      ...m.summary,
      mpPolicy4: m.state.mpPolicy4,
      mpPolicy6: m.state.mpPolicy6,
      devices: devices.map((d) => ({
        name: d.name,
        rpFilter: m.state.dev[d.slot]?.rpFilter,
        ip6Off: m.state.dev[d.slot]?.ip6Off,
      })),
      rpRules: m.state.rpRules,
    });
    if (summary !== this.#lastSummary) {
      this.#lastSummary = summary;
      this.#log.info(JSON.parse(summary) as object, 'xdp: kernel state mirrored');
    }
  }

  /**
   * Moves the watch's deadline on (the forwarder calls it every WATCH_RENEW_MS while it runs);
   * a watch that tripped meanwhile (the agent stalled past WATCH_MS) gets the state written
   * last back, which clears fk_state.unwatched.
   */
  renew(): void {
    if (this.#ops.renewWatch(watchDeadline()) && this.#last !== undefined) {
      this.#ops.writeState(this.#last.state);
    }
  }

  /** True when the sysctls of `devices` differ from those the last refresh wrote. */
  sysctlsChanged(devices: readonly string[]): boolean {
    return sysctlKey(readSysctls(this.#netns, devices)) !== this.#lastSysctls;
  }
}
