// What the forwarder does with the node's policy (policy.ts computes it, policy-watch.ts reads
// the kernel): the selected devices it concerns, the reasons written for the program (per
// slot in fk_state, per egress device in fk_egress), the per-device status, and a one-shot
// reading for `fibkeeper probe`.
import type { Link } from '../netlink/index.js';
import { NetlinkHandle } from '../netlink/index.js';
import { silentLogger } from '../log/index.js';
import { REASON_NAMES } from './layout.js';
import { devicePolicy, nodePolicy, type NodePolicy, type PolicyHit } from './policy.js';
import { PolicyWatcher } from './policy-watch.js';
import { selectDevice, type SelectionConfig } from './select.js';
import type { XdpDevicePolicy, XdpNodePolicyMode } from './types.js';

/** The fk_stats reason index a hit is counted under (0: none). */
export function reasonIndex(h: PolicyHit | undefined): number {
  return h === undefined ? 0 : Math.max(0, REASON_NAMES.indexOf(h.reason));
}

/** ifindex -> name of the links the selection picks. */
export function selectedNames(links: readonly Link[], sel: SelectionConfig): Map<number, string> {
  const names = new Map<number, string>();
  for (const l of links) {
    const v = selectDevice(l, sel);
    if (v.selected) names.set(v.ifindex, v.name);
  }
  return names;
}

/** The node's policy on the selected devices of `links`, read now. */
export async function readNodePolicy(
  watcher: PolicyWatcher,
  links: readonly Link[],
  sel: SelectionConfig,
): Promise<{ policy: NodePolicy; names: Map<number, string> }> {
  const names = selectedNames(links, sel);
  return { policy: nodePolicy(await watcher.read([...names.keys()]), names), names };
}

/**
 * The devices whose egress has a policy of its own: ifindex -> FK_REASON_* index (kept out of
 * fk_tx_ports, named in fk_egress). Empty under bypass.
 */
export function egressReasons(
  p: NodePolicy,
  names: ReadonlyMap<number, string>,
  mode: XdpNodePolicyMode,
): Map<number, number> {
  const out = new Map<number, number>();
  if (mode !== 'respect') return out;
  for (const [ifindex, name] of names) {
    const first = p.egress.get(name)?.[0];
    if (first !== undefined) out.set(ifindex, reasonIndex(first));
  }
  return out;
}

/** One device's policy as status shows it (applied unless bypass). */
export function policyStatus(
  p: NodePolicy,
  name: string,
  mode: XdpNodePolicyMode,
): XdpDevicePolicy {
  return { ...devicePolicy(p, name), applied: mode === 'respect' };
}

export interface PolicyInspection {
  mode: XdpNodePolicyMode;
  /** Every selected device and what acts on its traffic. */
  devices: { name: string; policy: XdpDevicePolicy }[];
}

/**
 * The node's policy as the forwarder would see it now, read once (`fibkeeper probe`): the
 * selected devices of `netns` and what of netfilter, tc and xfrm acts on their traffic.
 */
export async function inspectNodePolicy(opts: {
  netns: string | undefined;
  selection: SelectionConfig;
  mode: XdpNodePolicyMode;
}): Promise<PolicyInspection> {
  const nl = NetlinkHandle.open(opts.netns === undefined ? {} : { netns: opts.netns });
  const watcher = new PolicyWatcher({
    netns: opts.netns,
    nl,
    log: silentLogger(),
    onChange: () => undefined,
  });
  try {
    const { policy, names } = await readNodePolicy(watcher, await nl.linkList(), opts.selection);
    const devices = [...names.values()]
      .sort()
      .map((name) => ({ name, policy: policyStatus(policy, name, opts.mode) }));
    return { mode: opts.mode, devices };
  } finally {
    watcher.stop();
    nl.close();
  }
}
