// What a corpus case is, and the frame shorthands every case file uses.
import { CMAC, RMAC, type DiffLab, type Sink } from './lab.js';
import { ETH_P_IP, ETH_P_IPV6, PROTO, eth, ipv4, ipv6, udp } from './packets.js';

/**
 * What fibkeeper must count for a frame on the ingress device: `fwd` (forwarded in XDP:
 * redirect and a SUCCESS result), `reason:NAME` (passed to the kernel, with that
 * not-handled reason; after a SUCCESS result for the reasons decided after the lookup), or
 * `result:NAME` (passed after that bpf_fib_lookup answer).
 */
export type Expect = 'fwd' | `reason:${string}` | `result:${string}`;

export interface Case {
  name: string;
  frame: Buffer;
  /** One outcome, or the outcomes that are all right (a multipath reverse route, say). */
  expect: Expect | Expect[];
  /**
   * A deviation the README documents ("Know before you deploy"): the kernel and XDP are
   * expected to differ, and the test checks that they still do (so the README stays true).
   */
  deviation?: string;
  /** The sink whose device sends the frame (default c0: it enters the router's r1). */
  from?: Sink;
  /**
   * A change of the router made before this frame, in both runs (a route, a rule, a
   * sysctl); in the XDP run the frame waits until the forwarder has applied it.
   */
  before?: (lab: DiffLab) => void;
}

export interface Scenario {
  name: string;
  /** Router sysctls for this scenario (set before both runs). */
  sysctls: [string, string | number][];
  /** Forwarder options that differ from the defaults. */
  config?: { ipv4Options?: boolean; nodePolicy?: 'respect' | 'bypass' };
  cases: Case[];
  /** The router's policy for this scenario (nft, iptables, tc, xfrm), made before both runs. */
  setup?: (lab: DiffLab) => void;
  /** Undoes setup (and whatever the cases' `before` changed), after both runs. */
  teardown?: (lab: DiffLab) => void;
  /** Between the kernel-only and the XDP run (forget connection tracking state, say). */
  between?: (lab: DiffLab) => void;
  /** Why this kernel cannot run the scenario (asked first), or undefined when it can. */
  unsupported?: (lab: DiffLab) => string | undefined;
  /**
   * Counters of the node's policy (nft rule counters, say), read before and after each run:
   * each must move as much in the XDP run as in the kernel-only run.
   */
  counters?: (lab: DiffLab) => Record<string, number>;
}

export interface F4 {
  src?: string;
  dst?: string;
  ttl?: number;
  proto?: number;
  l4?: Buffer;
  options?: Buffer;
  frag?: number;
  tos?: number;
  totLen?: number;
  dmac?: string;
}

/** An IPv4 frame from the client to the router (UDP 4000 -> 5000 unless told). */
export function f4(o: F4 = {}): Buffer {
  return eth(
    o.dmac ?? RMAC.r1,
    CMAC,
    ETH_P_IP,
    ipv4(
      {
        src: o.src ?? '10.61.1.2',
        dst: o.dst ?? '10.61.2.2',
        ttl: o.ttl ?? 64,
        proto: o.proto ?? PROTO.UDP,
        ...(o.options ? { options: o.options } : {}),
        ...(o.frag === undefined ? {} : { frag: o.frag }),
        ...(o.tos === undefined ? {} : { tos: o.tos }),
        ...(o.totLen === undefined ? {} : { totLen: o.totLen }),
      },
      o.l4 ?? udp(4000, 5000),
    ),
  );
}

export interface F6 {
  src?: string;
  dst?: string;
  hop?: number;
  next?: number;
  l4?: Buffer;
  payloadLen?: number;
  /** Traffic class and flow label (the 28 bits after the version). */
  tcfl?: number;
  dmac?: string;
}

/** An IPv6 frame from the client to the router (UDP 4000 -> 5000 unless told). */
export function f6(o: F6 = {}): Buffer {
  const pkt = ipv6(
    {
      src: o.src ?? 'fd61:1::2',
      dst: o.dst ?? 'fd61:2::2',
      hopLimit: o.hop ?? 64,
      next: o.next ?? PROTO.UDP,
      ...(o.payloadLen === undefined ? {} : { payloadLen: o.payloadLen }),
    },
    o.l4 ?? udp(4000, 5000),
  );
  if (o.tcfl !== undefined) pkt.writeUInt32BE((0x6 << 28) | (o.tcfl & 0x0fffffff), 0);
  return eth(o.dmac ?? RMAC.r1, CMAC, ETH_P_IPV6, pkt);
}

export const c = (name: string, frame: Buffer, expect: Case['expect']): Case => ({
  name,
  frame,
  expect,
});
