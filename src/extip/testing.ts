// Fakes for the root-free tests of src/extip: a fake holder (a kernel address set with
// scripted faults, latencies, late events and an operation history), a recording announce
// sink and a metrics recorder. The fake clock is src/sched's.
import { NetlinkError } from '../netlink/index.js';
import type { ParsedIp } from '../ipaddr/index.js';
import type { ExtipMetrics } from './metrics.js';
import type { Clock } from '../sched/index.js';
import { turns } from '../sched/testing.js';
import type { HolderOps, ObservedAddress } from './types.js';

export interface FakeHolderOptions {
  /** Turns each call waits before the kernel acts, and before the ack (random if a function). */
  latency?: () => number;
  /** Turns between the kernel acting and the event reaching the listener. */
  eventDelay?: () => number;
  /** Flags of the event for a new IPv6 address (e.g. IFA_F_TENTATIVE). */
  newFlags?: (ip: ParsedIp) => number;
}

/** A holder device in memory, with a history of what it was asked to do. */
export class FakeHolder implements HolderOps {
  readonly addrs = new Map<string, ObservedAddress>();
  readonly history: string[] = [];
  /** ip → errno name: the next add/del of that IP fails with it. */
  readonly faults = new Map<string, string>();
  listener: ((kind: 'new' | 'del', a: ObservedAddress) => void) | undefined;
  readonly #o: FakeHolderOptions;
  #delivered: Promise<void> = Promise.resolve();

  constructor(o: FakeHolderOptions = {}) {
    this.#o = o;
  }

  async add(ip: ParsedIp): Promise<'added' | 'exists'> {
    await turns(this.#o.latency?.() ?? 0);
    const fault = this.#takeFault(ip);
    if (fault) {
      this.history.push(`add ${ip.address} fail ${fault}`);
      throw new NetlinkError(`addrAdd ${ip.address}`, errnoOf(fault));
    }
    if (this.addrs.has(ip.address)) {
      this.history.push(`add ${ip.address} exists`);
      await turns(this.#o.latency?.() ?? 0);
      return 'exists';
    }
    const a = { ip, prefixlen: ip.family === 4 ? 32 : 128, flags: this.#o.newFlags?.(ip) ?? 0 };
    this.addrs.set(ip.address, a);
    this.history.push(`add ${ip.address}`);
    this.#emit('new', a);
    await turns(this.#o.latency?.() ?? 0);
    return 'added';
  }

  async del(ip: ParsedIp, prefixlen: number): Promise<'deleted' | 'absent'> {
    await turns(this.#o.latency?.() ?? 0);
    const fault = this.#takeFault(ip);
    if (fault) {
      this.history.push(`del ${ip.address} fail ${fault}`);
      throw new NetlinkError(`addrDel ${ip.address}`, errnoOf(fault));
    }
    const a = this.addrs.get(ip.address);
    if (!a) {
      this.history.push(`del ${ip.address} absent`);
      return 'absent';
    }
    this.addrs.delete(ip.address);
    this.history.push(`del ${ip.address}/${prefixlen}`);
    this.#emit('del', a);
    await turns(this.#o.latency?.() ?? 0);
    return 'deleted';
  }

  /** Someone else changes the holder (like `ip addr del` by an operator). */
  externalDel(ip: string): void {
    const a = this.addrs.get(ip);
    if (!a) return;
    this.addrs.delete(ip);
    this.#emit('del', a);
  }

  externalAdd(a: ObservedAddress): void {
    this.addrs.set(a.ip.address, a);
    this.#emit('new', a);
  }

  /** Changes the flags of an address and tells the listener (DAD done, DAD failed). */
  setFlags(ip: string, flags: number): void {
    const a = this.addrs.get(ip);
    if (!a) return;
    const b = { ...a, flags };
    this.addrs.set(ip, b);
    this.#emit('new', b);
  }

  list(): ObservedAddress[] {
    return [...this.addrs.values()];
  }

  #takeFault(ip: ParsedIp): string | undefined {
    const f = this.faults.get(ip.address);
    if (f) this.faults.delete(ip.address);
    return f;
  }

  // Events come late but in order, as the kernel's netlink notifications do: one never
  // overtakes an earlier one (a stale RTM_DELADDR after the RTM_NEWADDR that followed it
  // would describe a holder that never existed).
  #emit(kind: 'new' | 'del', a: ObservedAddress): void {
    const delay = this.#o.eventDelay?.() ?? 0;
    const fire = (): void => this.listener?.(kind, a);
    this.#delivered = this.#delivered
      .then(() => (delay <= 0 ? undefined : turns(delay)))
      .then(fire);
  }
}

const ERRNOS: Record<string, number> = { EACCES: 13, ENOBUFS: 105, EEXIST: 17, EINVAL: 22 };
function errnoOf(name: string): number {
  return ERRNOS[name] ?? 5;
}

/** An announce sink that records what it sent and can be made to fail. */
export class RecordingSink {
  readonly sent: { ip: string; at: number }[] = [];
  failing: Error | undefined;
  readonly #clock: Clock;
  constructor(clock: Clock) {
    this.#clock = clock;
  }
  announce(ip: ParsedIp): void {
    if (this.failing) throw this.failing;
    this.sent.push({ ip: ip.address, at: this.#clock.now() });
  }
  times(ip: string): number[] {
    return this.sent.filter((s) => s.ip === ip).map((s) => s.at);
  }
}

/** Metrics that count into a plain object ("announced ipv4 assign" → n). */
export function recordingMetrics(): { metrics: ExtipMetrics; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const add = (k: string, n = 1): void => void counts.set(k, (counts.get(k) ?? 0) + n);
  return {
    counts,
    metrics: {
      setAssigned: (f, n) => void counts.set(`assigned ${f}`, n),
      setFailed: (f, n) => void counts.set(`failed ${f}`, n),
      announced: (f, r, n) => add(`announced ${f} ${r}`, n),
      framesSent: (f, n) => add(`frames ${f}`, n),
      responded: (f) => add(`responded ${f}`),
      repaired: (k, n) => add(`repaired ${k}`, n),
      conflict: (f) => add(`conflict ${f}`),
      error: (op) => add(`error ${op}`),
      dad: (f, r) => add(`dad ${f} ${r}`),
      resync: (r) => add(`resync ${r}`),
    },
  };
}
