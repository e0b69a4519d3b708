// The forwarder's configuration and what it reports, shared by forwarder.ts and attach-pass.ts.
import type { FibkeeperConfig } from '../config/index.js';
import type { SlotCounters } from './layout.js';
import type { RedirectErrorName } from './layout-state.js';
import type { HookMode } from './ops.js';
import type { ForeignProgram } from './owner.js';
import type { PolicyHit } from './policy.js';

type XdpSection = FibkeeperConfig['xdp'];

export type XdpConfigMode = XdpSection['mode'];

/** respect: traffic the node's policy acts on goes to the kernel; bypass: XDP forwards it. */
export type XdpNodePolicyMode = XdpSection['nodePolicy'];

/**
 * The config's `xdp.*` options under their own names, validated by src/config: mode (auto:
 * native where the driver supports it, else generic), pinDir (a directory on or for a bpffs;
 * pins go to <pinDir>/ns<netns inode>/), keepOnStop (stop() leaves the program attached and
 * pinned), force (replace XDP programs fibkeeper did not attach), ipv6 (else the program
 * passes IPv6 to the stack); with `devices` and `extip.holderName`.
 */
export interface XdpForwarderConfig extends Pick<
  XdpSection,
  'mode' | 'pinDir' | 'keepOnStop' | 'force' | 'ipv6'
> {
  /** Device names or globs (* and ?) that get the program. */
  devices: readonly string[];
  /** The external-IP holder device: never selected. */
  holderName: string;
  /** Record NO_NEIGH destinations in the miss map (default true). */
  missTrack?: boolean;
  /** Forward IPv4 packets that carry IP options (default false: they go to the stack, as `xdp.ipv4Options` says). */
  ipv4Options?: boolean;
  /** The node's policy: respect (default) or bypass. */
  nodePolicy?: XdpNodePolicyMode;
}

/**
 * The node's policy on one device's traffic: what sends its frames to the kernel instead of
 * XDP (the first of a list is the reason they are counted under). Empty lists: XDP forwards.
 */
export interface XdpDevicePolicy {
  /** On IPv4 / IPv6 frames entering the device (its ingress, and every forwarded frame). */
  ipv4: PolicyHit[];
  ipv6: PolicyHit[];
  /** On frames routed out of the device. */
  egress: PolicyHit[];
  /** false under xdp.nodePolicy bypass: listed, not applied (XDP forwards past them). */
  applied: boolean;
}

export interface XdpDeviceStatus {
  name: string;
  /** 0 when the device is gone (its record and slot are kept for its return). */
  ifindex: number;
  attached: 'ours' | 'foreign' | 'none';
  mode: HookMode | undefined;
  progId: number | undefined;
  linkId: number | undefined;
  slot: number | undefined;
  /** The program in the way, when attached is foreign. */
  foreign: ForeignProgram | undefined;
  error: string | undefined;
  /**
   * XDP may redirect frames into this device (it is in the devmap): the kernel reports
   * ndo_xdp_xmit for it (a veth: its peer runs XDP or has GRO on), or cannot tell.
   */
  redirectTarget: boolean;
  /** The node's policy on the device's traffic (absent until the first pass read it). */
  policy?: XdpDevicePolicy;
  /**
   * Why a device that matches xdp devices gets no program on purpose (an upper device, such
   * as a macvlan, of a selected device: the lower device is preferred).
   */
  skipped?: string;
}

export interface XdpDeviceCounters extends SlotCounters {
  /** Device name, or ":other" for the shared slot. */
  device: string;
  /**
   * Frames this device's program redirected that never left (the egress refused or dropped
   * them), by reason; counted per current ifindex (zero for ":other" and gone devices).
   */
  redirectErrors: Record<RedirectErrorName, number>;
  /** 0 when gone (or for ":other"). */
  ifindex: number;
  slot: number;
}

export interface XdpHealth {
  ok: boolean;
  reasons: string[];
}

export const OTHER_DEVICE = ':other';
