// The kernel fence of cluster mode (bpf/cluster_fence.c): a tc program on the external
// interface's tcx ingress and egress hooks that drops every packet to or from a cluster IP of
// this node once the node's hold deadline has passed by the kernel's CLOCK_MONOTONIC — the
// clock the cluster component computes its deadlines on (src/sched monotonicClock). The
// agent moves the deadline forward with every hold set; a hung agent cannot, so at the
// deadline its kernel stops answering for its cluster IPs at the IP level (ICMP, TCP, UDP) as
// its ARP/NDP responder already does. The links are tcx links held by this process: they end
// with it, and so does the holder (a TUN device), so nothing of either outlives the agent.
import { fileURLToPath } from 'node:url';
import { describeError, FibkeeperError } from '../errors/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import { attachTcx, BpfObject, closeFd, type BpfMap, type BpfProgram } from '../native/index.js';

/** build/bpf/cluster_fence.o of this package (src/extip and dist/extip: two levels down). */
export function defaultFenceObject(): string {
  return fileURLToPath(new URL('../../build/bpf/cluster_fence.o', import.meta.url));
}

/** Per-IP states in fk_fence_ips. */
const FOLLOW_DEADLINE = 1;
const DROP_ALWAYS = 0;

/** The map key: 16 bytes, IPv4 as ::ffff:a.b.c.d (bpf/cluster_fence.h). */
export function fenceKey(ip: ParsedIp): Buffer {
  const key = Buffer.alloc(16);
  if (ip.family === 4) {
    key[10] = 0xff;
    key[11] = 0xff;
    Buffer.from(ip.bytes).copy(key, 12);
  } else {
    Buffer.from(ip.bytes).copy(key, 0);
  }
  return key;
}

/** The kernel side of the fence, as the cluster IPs' owner uses it; each call is idempotent. */
export interface FenceOps {
  /** The node may answer for its cluster IPs until `untilMs` (monotonic ms; −∞: not now). */
  setDeadline(untilMs: number): void;
  /** `ip` is (about to be) on the cluster holder: answered until the deadline. */
  follow(ip: ParsedIp): void;
  /** `ip` is leaving the holder: dropped from now on, whatever the deadline. */
  block(ip: ParsedIp): void;
  /** `ip` is off the holder: forgotten. */
  forget(ip: ParsedIp): void;
  /** Packets dropped so far (ingress: to a fenced IP; egress: from one). */
  drops(): { ingress: number; egress: number };
}

export class ClusterFence implements FenceOps {
  readonly #log: Logger;
  readonly #netns: string | undefined;
  readonly #ingress: BpfProgram;
  readonly #egress: BpfProgram;
  readonly #ips: BpfMap;
  readonly #deadline: BpfMap;
  readonly #drops: BpfMap;
  #links: number[] = [];
  #ifindex = 0;
  #lastUntil = Number.NaN;

  private constructor(p: { log: Logger; netns: string | undefined; object: BpfObject }) {
    this.#log = p.log;
    this.#netns = p.netns;
    this.#ingress = p.object.program('fk_fence_ingress');
    this.#egress = p.object.program('fk_fence_egress');
    this.#ips = p.object.map('fk_fence_ips');
    this.#deadline = p.object.map('fk_fence_deadline');
    this.#drops = p.object.map('fk_fence_drops');
  }

  /**
   * Loads the fence (the deadline at 0: everything on the list is dropped) and attaches it
   * to `ifindex`. Throws NotSupported-like errors from the kernel (tcx needs 6.6).
   */
  static open(p: {
    ifindex: number;
    netns: string | undefined;
    log: Logger;
    objectPath?: string;
  }): ClusterFence {
    const object = BpfObject.open(p.objectPath ?? defaultFenceObject());
    try {
      object.load();
      const fence = new ClusterFence({ log: p.log, netns: p.netns, object });
      fence.setDeadline(-Infinity);
      fence.attach(p.ifindex);
      return fence;
    } finally {
      object.close(); // programs and maps keep descriptors of their own
    }
  }

  /** Attaches to `ifindex` (again: the external interface was recreated). */
  attach(ifindex: number): void {
    this.#detach();
    const links: number[] = [];
    try {
      links.push(attachTcx(this.#ingress.fd, ifindex, 'ingress', this.#netns));
      links.push(attachTcx(this.#egress.fd, ifindex, 'egress', this.#netns));
    } catch (err) {
      for (const fd of links) closeFd(fd);
      throw new FibkeeperError(
        `cluster fence: cannot attach to the external interface (ifindex ${ifindex}) with tcx (kernel 6.6 or later): ${describeError(err)}`,
        { cause: err, code: 'FIBKEEPER_ERR_NOT_SUPPORTED' },
      );
    }
    this.#links = links;
    this.#ifindex = ifindex;
  }

  get ifindex(): number {
    return this.#ifindex;
  }

  setDeadline(untilMs: number): void {
    if (untilMs === this.#lastUntil) return;
    const ns = Number.isFinite(untilMs) && untilMs > 0 ? BigInt(Math.floor(untilMs * 1e6)) : 0n;
    const value = Buffer.alloc(8);
    value.writeBigUInt64LE(ns);
    this.#deadline.update(Buffer.alloc(4), value);
    this.#lastUntil = untilMs;
  }

  follow(ip: ParsedIp): void {
    this.#set(ip, FOLLOW_DEADLINE);
  }

  block(ip: ParsedIp): void {
    this.#set(ip, DROP_ALWAYS);
  }

  forget(ip: ParsedIp): void {
    this.#ips.delete(fenceKey(ip));
  }

  #set(ip: ParsedIp, state: number): void {
    const v = Buffer.alloc(4);
    v.writeUInt32LE(state);
    this.#ips.update(fenceKey(ip), v);
  }

  drops(): { ingress: number; egress: number } {
    const sum = (slot: number): number => {
      const k = Buffer.alloc(4);
      k.writeUInt32LE(slot);
      return (this.#drops.lookupPerCpu(k) ?? []).reduce(
        (a, b) => a + Number(b.readBigUInt64LE(0)),
        0,
      );
    };
    return { ingress: sum(0), egress: sum(1) };
  }

  #detach(): void {
    for (const fd of this.#links) {
      try {
        closeFd(fd);
      } catch (err) {
        this.#log.debug({ err: describeError(err) }, 'cluster fence: closing a link');
      }
    }
    this.#links = [];
    this.#ifindex = 0;
  }

  /** Detaches and releases the maps. Idempotent. */
  close(): void {
    this.#detach();
    for (const o of [this.#ingress, this.#egress, this.#ips, this.#deadline, this.#drops]) {
      if (!o.closed) o.close();
    }
  }
}
