// The watch (bpf/xdp_watch.c): a BPF timer that ends XDP forwarding a bounded time after the
// agent stops watching the kernel. The agent moves fk_watch's deadline on every second
// (renew); a tick of the timer that finds it passed sets fk_state.unwatched, and every frame
// then goes to the kernel, which applies whatever policy was added while nobody looked, until
// an agent writes the state again. The timer lives with the pinned fk_watch map, so it ticks
// on while no agent runs. A kernel without bpf_timer (before 5.15) has no watch.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { BpfMap, BpfObject, XdpAction } from '../native/index.js';
import {
  FK_MAP_STATE,
  FK_MAP_WATCH,
  FK_MAP_WATCH_UNTIL,
  FK_WATCH_PROG,
  SIZEOF_FK_WATCH,
  encodeWatchUntil,
} from './layout-state.js';
import { unpin } from './pins.js';

/**
 * How long the program trusts a state the agent no longer vouches for: XDP forwarding goes on
 * this long after the agent stops (a restart is quicker), plus at most one tick of the timer
 * (FK_WATCH_TICK_NS, 500 ms); then the kernel forwards every frame until an agent is back.
 */
export const WATCH_MS = 5000;
/** How often the agent moves the deadline on. */
export const WATCH_RENEW_MS = 1000;

/** build/bpf/xdp_watch.o of this package. */
export function defaultWatchPath(): string {
  return fileURLToPath(new URL('../../build/bpf/xdp_watch.o', import.meta.url));
}

/** The deadline to write now: CLOCK_MONOTONIC + WATCH_MS, in ns. */
export function watchDeadline(): bigint {
  return process.hrtime.bigint() + BigInt(WATCH_MS) * 1_000_000n;
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

export class Watch {
  readonly #until: BpfMap;
  readonly #timer: BpfMap;

  private constructor(until: BpfMap, timer: BpfMap) {
    this.#until = until;
    this.#timer = timer;
  }

  /** A pinned map of `which`, when it is there and of the right shape. */
  static #adopt(path: string, valueSize: number): BpfMap | undefined {
    if (!existsSync(path)) return undefined;
    const m = BpfMap.fromPinned(path);
    if (m.type === 'array' && m.valueSize === valueSize && m.maxEntries === 1) return m;
    m.close();
    unpin(path);
    return undefined;
  }

  /**
   * Arms the watch over `state` (the shared fk_state), its maps pinned in `mapsDir` (adopted
   * when there, with the timer running). The deadline is moved on before the timer is armed,
   * so that a timer already ticking does not find it passed. Undefined, after a warning, when
   * this kernel cannot run it.
   */
  static start(p: {
    objectPath: string;
    state: BpfMap;
    mapsDir: string;
    log: Logger;
  }): Watch | undefined {
    let obj: BpfObject | undefined;
    const timerPin = `${p.mapsDir}/${FK_MAP_WATCH}`;
    const untilPin = `${p.mapsDir}/${FK_MAP_WATCH_UNTIL}`;
    let timer: BpfMap | undefined;
    let until: BpfMap | undefined;
    try {
      if (!existsSync(p.objectPath)) throw new Error(`${p.objectPath} not found (make bpf)`);
      timer = Watch.#adopt(timerPin, SIZEOF_FK_WATCH);
      until = Watch.#adopt(untilPin, 8);
      obj = BpfObject.open(p.objectPath);
      obj.reuseMap(FK_MAP_STATE, p.state);
      if (timer !== undefined) obj.reuseMap(FK_MAP_WATCH, timer);
      if (until !== undefined) obj.reuseMap(FK_MAP_WATCH_UNTIL, until);
      obj.load();
      if (timer === undefined) {
        timer = obj.map(FK_MAP_WATCH);
        timer.pin(timerPin);
      }
      if (until === undefined) {
        until = obj.map(FK_MAP_WATCH_UNTIL);
        until.pin(untilPin);
      }
      until.update(u32(0), encodeWatchUntil(watchDeadline()));
      const arm = obj.program(FK_WATCH_PROG);
      try {
        const r = arm.testRun({ dataIn: Buffer.alloc(64), xdpCtx: { ingressIfindex: 1 } });
        if (r.retval !== XdpAction.PASS) throw new Error('the watch timer could not be armed');
      } finally {
        arm.close(); // the timer holds the program
      }
      return new Watch(until, timer);
    } catch (err) {
      timer?.close();
      until?.close();
      p.log.warn(
        { err: describeError(err) },
        'xdp: no watch on this kernel (bpf_timer, Linux 5.15+): XDP forwarding does not end when the agent stops',
      );
      return undefined;
    } finally {
      obj?.close();
    }
  }

  /** Moves the deadline on: the agent vouches for fk_state until `untilNs`. */
  renew(untilNs: bigint = watchDeadline()): void {
    this.#until.update(u32(0), encodeWatchUntil(untilNs));
  }

  /** Closes the descriptors; the pinned timer ticks on (unpinning the maps ends it). */
  close(): void {
    this.#until.close();
    this.#timer.close();
  }
}
